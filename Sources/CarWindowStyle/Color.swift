/// An sRGB colour with straight (not premultiplied) alpha, each component in 0...1.
///
/// Styles write colours as CSS strings; the renderer wants premultiplied components, so both
/// forms are available and the stored one is the one people read in the style.
public struct Color: Sendable, Hashable, CustomStringConvertible {
    /// Red, 0...1.
    public var r: Float
    /// Green, 0...1.
    public var g: Float
    /// Blue, 0...1.
    public var b: Float
    /// Alpha, 0...1: 0 is fully transparent, 1 opaque.
    public var a: Float

    /// Clamps each component into 0...1 so a colour can never carry out-of-range values to GL.
    public init(r: Float, g: Float, b: Float, a: Float = 1) {
        self.r = Self.unit(r)
        self.g = Self.unit(g)
        self.b = Self.unit(b)
        self.a = Self.unit(a)
    }

    /// Opaque black.
    public static let black = Color(r: 0, g: 0, b: 0)
    /// Opaque white.
    public static let white = Color(r: 1, g: 1, b: 1)
    /// Fully transparent black.
    public static let transparent = Color(r: 0, g: 0, b: 0, a: 0)

    /// The components multiplied by alpha, as blending with `GL_ONE, GL_ONE_MINUS_SRC_ALPHA` wants.
    public var premultiplied: SIMD4<Float> {
        SIMD4(r * a, g * a, b * a, a)
    }

    /// Rebuilds a straight-alpha colour from premultiplied components, as interpolation produces.
    public init(premultiplied p: SIMD4<Float>) {
        if p.w <= 0 {
            self.init(r: 0, g: 0, b: 0, a: 0)
        } else {
            self.init(r: p.x / p.w, g: p.y / p.w, b: p.z / p.w, a: p.w)
        }
    }

    /// MapLibre's `to-string` form: `rgba(r,g,b,a)` with 0-255 channels.
    public var description: String {
        func channel(_ v: Float) -> Int { Int((v * 255).rounded()) }
        return "rgba(\(channel(r)),\(channel(g)),\(channel(b)),\(StyleValue.format(Double(a))))"
    }

    /// Parses any CSS colour MapLibre accepts: `#rgb`, `#rgba`, `#rrggbb`, `#rrggbbaa`, `rgb()`,
    /// `rgba()`, `hsl()`, `hsla()` (with commas or spaces and an optional `/ alpha`), the CSS
    /// named colours and `transparent`, case-insensitively. Returns nil for anything else.
    public init?(css text: String) {
        let string = text.trimmingWhitespace().lowercased()
        if string.hasPrefix("#") {
            guard let color = Self.parseHex(string.dropFirst()) else { return nil }
            self = color
        } else if let open = string.firstIndex(of: "("), string.hasSuffix(")") {
            let name = string[..<open].trimmingWhitespace()
            let body = string[string.index(after: open)..<string.index(before: string.endIndex)]
            guard let color = Self.parseFunction(name: name, body: String(body)) else { return nil }
            self = color
        } else if let rgb = namedColors[string] {
            self.init(r: Float((rgb >> 16) & 0xFF) / 255, g: Float((rgb >> 8) & 0xFF) / 255,
                      b: Float(rgb & 0xFF) / 255)
        } else if string == "transparent" {
            self = .transparent
        } else {
            return nil
        }
    }

    private static func unit(_ v: Float) -> Float {
        v.isNaN ? 0 : min(max(v, 0), 1)
    }

    private static func parseHex(_ digits: Substring) -> Color? {
        var values: [Float] = []
        for character in digits {
            guard let digit = character.hexDigitValue else { return nil }
            values.append(Float(digit))
        }
        switch values.count {
        case 3, 4:
            let c = values.map { $0 * 17 / 255 }
            return Color(r: c[0], g: c[1], b: c[2], a: c.count == 4 ? c[3] : 1)
        case 6, 8:
            let c: [Float] = stride(from: 0, to: values.count, by: 2).map { (i: Int) -> Float in
                (values[i] * 16 + values[i + 1]) / 255
            }
            return Color(r: c[0], g: c[1], b: c[2], a: c.count == 4 ? c[3] : 1)
        default:
            return nil
        }
    }

    /// Splits `rgb(1, 2, 3)`, `rgb(1 2 3 / 50%)` and their alpha variants into components.
    private static func parseFunction(name: Substring, body: String) -> Color? {
        var parts: [Substring]
        var alphaPart: Substring?
        if body.contains(",") {
            parts = body.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
            if parts.count == 4 { alphaPart = parts.removeLast() }
        } else {
            let halves = body.split(separator: "/", omittingEmptySubsequences: false)
            guard halves.count <= 2 else { return nil }
            parts = halves[0].split(whereSeparator: { $0 == " " || $0 == "\t" })
            if halves.count == 2 { alphaPart = halves[1].trimmingWhitespace() }
        }
        guard parts.count == 3 else { return nil }
        var alpha: Float = 1
        if let alphaPart {
            guard let value = parseAlpha(alphaPart) else { return nil }
            alpha = value
        }
        switch name {
        case "rgb", "rgba":
            var channels: [Float] = []
            for part in parts {
                if part.hasSuffix("%") {
                    guard let percent = Float(part.dropLast()), percent.isFinite else { return nil }
                    channels.append(percent / 100)
                } else {
                    guard let value = Float(part), value.isFinite else { return nil }
                    channels.append(value / 255)
                }
            }
            return Color(r: channels[0], g: channels[1], b: channels[2], a: alpha)
        case "hsl", "hsla":
            let hueText = parts[0].hasSuffix("deg") ? parts[0].dropLast(3) : parts[0]
            guard let hue = Float(hueText), hue.isFinite,
                  parts[1].hasSuffix("%"), parts[2].hasSuffix("%"),
                  let saturation = Float(parts[1].dropLast()), saturation.isFinite,
                  let lightness = Float(parts[2].dropLast()), lightness.isFinite else { return nil }
            return fromHSL(hue: hue, saturation: saturation / 100, lightness: lightness / 100, alpha: alpha)
        default:
            return nil
        }
    }

    private static func parseAlpha(_ text: Substring) -> Float? {
        if text.hasSuffix("%") {
            guard let percent = Float(text.dropLast()), percent.isFinite else { return nil }
            return percent / 100
        }
        guard let value = Float(text), value.isFinite else { return nil }
        return value
    }

    /// The CSS Color 3 HSL-to-RGB algorithm.
    private static func fromHSL(hue: Float, saturation: Float, lightness: Float, alpha: Float) -> Color {
        let h = (hue.truncatingRemainder(dividingBy: 360) + 360).truncatingRemainder(dividingBy: 360) / 360
        let s = unit(saturation), l = unit(lightness)
        let m2 = l <= 0.5 ? l * (s + 1) : l + s - l * s
        let m1 = l * 2 - m2
        func channel(_ t: Float) -> Float {
            var h = t
            if h < 0 { h += 1 }
            if h > 1 { h -= 1 }
            if h * 6 < 1 { return m1 + (m2 - m1) * h * 6 }
            if h * 2 < 1 { return m2 }
            if h * 3 < 2 { return m1 + (m2 - m1) * (2.0 / 3.0 - h) * 6 }
            return m1
        }
        return Color(r: channel(h + 1.0 / 3.0), g: channel(h), b: channel(h - 1.0 / 3.0), a: alpha)
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> Substring {
        let characters = Substring(self)
        guard let first = characters.firstIndex(where: { !$0.isWhitespace }),
              let last = characters.lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return characters[first...last]
    }
}

/// The CSS Color Module Level 4 named colours, as 0xRRGGBB.
private let namedColors: [String: UInt32] = [
    "aliceblue": 0xF0F8FF, "antiquewhite": 0xFAEBD7, "aqua": 0x00FFFF, "aquamarine": 0x7FFFD4,
    "azure": 0xF0FFFF, "beige": 0xF5F5DC, "bisque": 0xFFE4C4, "black": 0x000000,
    "blanchedalmond": 0xFFEBCD, "blue": 0x0000FF, "blueviolet": 0x8A2BE2, "brown": 0xA52A2A,
    "burlywood": 0xDEB887, "cadetblue": 0x5F9EA0, "chartreuse": 0x7FFF00, "chocolate": 0xD2691E,
    "coral": 0xFF7F50, "cornflowerblue": 0x6495ED, "cornsilk": 0xFFF8DC, "crimson": 0xDC143C,
    "cyan": 0x00FFFF, "darkblue": 0x00008B, "darkcyan": 0x008B8B, "darkgoldenrod": 0xB8860B,
    "darkgray": 0xA9A9A9, "darkgreen": 0x006400, "darkgrey": 0xA9A9A9, "darkkhaki": 0xBDB76B,
    "darkmagenta": 0x8B008B, "darkolivegreen": 0x556B2F, "darkorange": 0xFF8C00,
    "darkorchid": 0x9932CC, "darkred": 0x8B0000, "darksalmon": 0xE9967A, "darkseagreen": 0x8FBC8F,
    "darkslateblue": 0x483D8B, "darkslategray": 0x2F4F4F, "darkslategrey": 0x2F4F4F,
    "darkturquoise": 0x00CED1, "darkviolet": 0x9400D3, "deeppink": 0xFF1493,
    "deepskyblue": 0x00BFFF, "dimgray": 0x696969, "dimgrey": 0x696969, "dodgerblue": 0x1E90FF,
    "firebrick": 0xB22222, "floralwhite": 0xFFFAF0, "forestgreen": 0x228B22, "fuchsia": 0xFF00FF,
    "gainsboro": 0xDCDCDC, "ghostwhite": 0xF8F8FF, "gold": 0xFFD700, "goldenrod": 0xDAA520,
    "gray": 0x808080, "green": 0x008000, "greenyellow": 0xADFF2F, "grey": 0x808080,
    "honeydew": 0xF0FFF0, "hotpink": 0xFF69B4, "indianred": 0xCD5C5C, "indigo": 0x4B0082,
    "ivory": 0xFFFFF0, "khaki": 0xF0E68C, "lavender": 0xE6E6FA, "lavenderblush": 0xFFF0F5,
    "lawngreen": 0x7CFC00, "lemonchiffon": 0xFFFACD, "lightblue": 0xADD8E6, "lightcoral": 0xF08080,
    "lightcyan": 0xE0FFFF, "lightgoldenrodyellow": 0xFAFAD2, "lightgray": 0xD3D3D3,
    "lightgreen": 0x90EE90, "lightgrey": 0xD3D3D3, "lightpink": 0xFFB6C1, "lightsalmon": 0xFFA07A,
    "lightseagreen": 0x20B2AA, "lightskyblue": 0x87CEFA, "lightslategray": 0x778899,
    "lightslategrey": 0x778899, "lightsteelblue": 0xB0C4DE, "lightyellow": 0xFFFFE0,
    "lime": 0x00FF00, "limegreen": 0x32CD32, "linen": 0xFAF0E6, "magenta": 0xFF00FF,
    "maroon": 0x800000, "mediumaquamarine": 0x66CDAA, "mediumblue": 0x0000CD,
    "mediumorchid": 0xBA55D3, "mediumpurple": 0x9370DB, "mediumseagreen": 0x3CB371,
    "mediumslateblue": 0x7B68EE, "mediumspringgreen": 0x00FA9A, "mediumturquoise": 0x48D1CC,
    "mediumvioletred": 0xC71585, "midnightblue": 0x191970, "mintcream": 0xF5FFFA,
    "mistyrose": 0xFFE4E1, "moccasin": 0xFFE4B5, "navajowhite": 0xFFDEAD, "navy": 0x000080,
    "oldlace": 0xFDF5E6, "olive": 0x808000, "olivedrab": 0x6B8E23, "orange": 0xFFA500,
    "orangered": 0xFF4500, "orchid": 0xDA70D6, "palegoldenrod": 0xEEE8AA, "palegreen": 0x98FB98,
    "paleturquoise": 0xAFEEEE, "palevioletred": 0xDB7093, "papayawhip": 0xFFEFD5,
    "peachpuff": 0xFFDAB9, "peru": 0xCD853F, "pink": 0xFFC0CB, "plum": 0xDDA0DD,
    "powderblue": 0xB0E0E6, "purple": 0x800080, "rebeccapurple": 0x663399, "red": 0xFF0000,
    "rosybrown": 0xBC8F8F, "royalblue": 0x4169E1, "saddlebrown": 0x8B4513, "salmon": 0xFA8072,
    "sandybrown": 0xF4A460, "seagreen": 0x2E8B57, "seashell": 0xFFF5EE, "sienna": 0xA0522D,
    "silver": 0xC0C0C0, "skyblue": 0x87CEEB, "slateblue": 0x6A5ACD, "slategray": 0x708090,
    "slategrey": 0x708090, "snow": 0xFFFAFA, "springgreen": 0x00FF7F, "steelblue": 0x4682B4,
    "tan": 0xD2B48C, "teal": 0x008080, "thistle": 0xD8BFD8, "tomato": 0xFF6347,
    "turquoise": 0x40E0D0, "violet": 0xEE82EE, "wheat": 0xF5DEB3, "white": 0xFFFFFF,
    "whitesmoke": 0xF5F5F5, "yellow": 0xFFFF00, "yellowgreen": 0x9ACD32,
]
