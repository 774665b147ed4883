import Foundation
import CarWindowGeo
import CarWindowStyle
/// What the navigation engine draws over the map: its route, its vehicle and on-screen controls.
public struct MapOverlays: Sendable, Equatable {
    /// The route, first point first; empty for none.
    public var route: [GeoCoordinate]
    /// Metres of ``route`` already driven, measured along it from its first point: that part
    /// is not drawn. Moving it costs no geometry work (the route is trimmed as it is drawn), so
    /// set the whole route once and move the progress as the car drives, rather than sending
    /// the remaining route again. 0 draws all of it; past the end draws none.
    public var routeProgress: Double
    /// Traffic along the route, as stretches of it by metres from its first point, in order and
    /// not overlapping (``RouteCongestion/normalized(_:)``); the rest is of unknown congestion.
    /// A style colours them by the `congestion` property its route layers read.
    public var routeCongestion: [RouteCongestion] = []
    /// The vehicle marker, if any.
    public var vehicle: VehicleMarker?
    /// Whether the zoom and recenter buttons are drawn.
    public var showsControls: Bool
    /// The rectangle (screen pixels) the app's own focus is on, drawn as a ring around it: for
    /// head units with neither touch nor haptic data, where the app moves the focus itself.
    public var focusRing: ScreenRect?
    /// The edges of the screen the engine's own panels cover (a maneuver card, an ETA bar): the
    /// controls sit in the rest.
    public var coveredInsets: ScreenInsets

    /// Makes the overlays; by default no route, no vehicle, the controls shown, no focus ring
    /// and nothing covered.
    public init(route: [GeoCoordinate] = [], routeProgress: Double = 0, vehicle: VehicleMarker? = nil,
                showsControls: Bool = true, focusRing: ScreenRect? = nil, coveredInsets: ScreenInsets = .zero) {
        self.route = route
        self.routeProgress = routeProgress
        self.vehicle = vehicle
        self.showsControls = showsControls
        self.focusRing = focusRing
        self.coveredInsets = coveredInsets
    }
}

/// How busy the road is along a stretch of the route, by the names navigation SDKs use: the
/// value of the `congestion` property a style's route layers see.
public enum CongestionLevel: Int, Sendable, CaseIterable, CustomStringConvertible {
    case unknown, low, moderate, heavy, severe

    /// The property value: `unknown`, `low`, `moderate`, `heavy` or `severe`.
    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .low: "low"
        case .moderate: "moderate"
        case .heavy: "heavy"
        case .severe: "severe"
        }
    }
}

/// A stretch of the route and its traffic, by metres along the route from its first point.
public struct RouteCongestion: Sendable, Hashable {
    /// Where the stretch starts, metres from the route's first point.
    public var startMetres: Double
    /// Where it ends; more than ``startMetres``.
    public var endMetres: Double
    /// How busy it is.
    public var level: CongestionLevel

    /// A stretch from `startMetres` to `endMetres` at `level`.
    public init(startMetres: Double, endMetres: Double, level: CongestionLevel) {
        self.startMetres = startMetres
        self.endMetres = endMetres
        self.level = level
    }

    /// The most stretches a route keeps; an engine's per-segment traffic of a long route fits.
    public static let maximumCount = 10_000

    /// `stretches` made drawable: those with ends that are not finite or not in order left out,
    /// negative starts moved to 0, sorted by start, each cut where the one before ended, and
    /// neighbours of one level merged; at most ``maximumCount`` kept (the first ones). Also
    /// returns how many were left out as invalid or beyond the limit.
    public static func normalized(_ stretches: [RouteCongestion]) -> (kept: [RouteCongestion], dropped: Int) {
        var valid = stretches.filter { $0.startMetres.isFinite && $0.endMetres.isFinite && $0.endMetres > max($0.startMetres, 0) }
        let invalid = stretches.count - valid.count
        for index in valid.indices { valid[index].startMetres = max(valid[index].startMetres, 0) }
        valid.sort { ($0.startMetres, $0.endMetres) < ($1.startMetres, $1.endMetres) }
        var kept: [RouteCongestion] = []
        kept.reserveCapacity(min(valid.count, maximumCount))
        var overflow = 0
        for var stretch in valid {
            if let last = kept.last {
                // Overlaps go to the stretch that starts first.
                stretch.startMetres = max(stretch.startMetres, last.endMetres)
                guard stretch.endMetres > stretch.startMetres else { continue }
                if last.level == stretch.level, last.endMetres == stretch.startMetres {
                    kept[kept.count - 1].endMetres = stretch.endMetres
                    continue
                }
            }
            guard kept.count < maximumCount else {
                overflow += 1
                continue
            }
            kept.append(stretch)
        }
        return (kept, invalid + overflow)
    }
}

/// How far in from each edge the engine's own panels cover the screen, in screen pixels: what
/// Android's car library calls the visible area and CarPlay the safe area, from the other side.
public struct ScreenInsets: Sendable, Hashable, CustomStringConvertible {
    /// Pixels covered from the top edge.
    public var top: Double
    /// Pixels covered from the left edge.
    public var left: Double
    /// Pixels covered from the bottom edge.
    public var bottom: Double
    /// Pixels covered from the right edge.
    public var right: Double

    /// Nothing covered.
    public static let zero = ScreenInsets(top: 0, left: 0, bottom: 0, right: 0)

    /// The insets as given, in screen pixels.
    public init(top: Double = 0, left: Double = 0, bottom: Double = 0, right: Double = 0) {
        self.top = top
        self.left = left
        self.bottom = bottom
        self.right = right
    }

    /// The part of a `width` x `height` screen the insets leave visible. Insets that are not
    /// finite or are negative count as 0, and together they leave at least a fifth of each side,
    /// so a wrong value from a panel's layout never leaves the map no room.
    public func visibleRect(width: Int, height: Int) -> ScreenRect {
        func clamped(_ value: Double) -> Double { value.isFinite ? max(value, 0) : 0 }
        let w = Double(max(width, 1)), h = Double(max(height, 1))
        var top = clamped(top), left = clamped(left), bottom = clamped(bottom), right = clamped(right)
        let widthScale = min(1, w * 0.8 / max(left + right, 1e-9))
        let heightScale = min(1, h * 0.8 / max(top + bottom, 1e-9))
        left *= widthScale
        right *= widthScale
        top *= heightScale
        bottom *= heightScale
        return ScreenRect(x: left, y: top, width: w - left - right, height: h - top - bottom)
    }

    public var description: String { "(top \(top), left \(left), bottom \(bottom), right \(right))" }
}

/// Where the vehicle is and which way it points.
public struct VehicleMarker: Sendable, Equatable {
    /// Where the vehicle is.
    public var coordinate: GeoCoordinate
    /// Degrees clockwise from north.
    public var heading: Double

    /// Makes a marker at `coordinate` pointing `heading` degrees clockwise from north.
    public init(coordinate: GeoCoordinate, heading: Double) {
        self.coordinate = coordinate
        self.heading = heading
    }
}

/// A rectangle in screen pixels, origin top-left.
public struct ScreenRect: Sendable, Hashable, CustomStringConvertible {
    /// Left edge, in pixels from the screen's left.
    public var x: Double
    /// Top edge, in pixels from the screen's top.
    public var y: Double
    /// Width in pixels.
    public var width: Double
    /// Height in pixels.
    public var height: Double

    /// Makes the rectangle with its top-left corner at (`x`, `y`), in pixels.
    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// The centre point, in pixels.
    public var center: SIMD2<Double> { SIMD2(x + width / 2, y + height / 2) }

    /// Whether `point` lies inside, edges included.
    public func contains(_ point: SIMD2<Double>) -> Bool {
        point.x >= x && point.x <= x + width && point.y >= y && point.y <= y + height
    }

    public var description: String { "(\(x), \(y), \(width)x\(height))" }
}

/// An on-screen control the renderer draws in GL. GL has no view tree, so these rectangles are
/// what a head unit's haptic layer (and touch hit-testing) needs.
public struct MapControl: Sendable, Hashable {
    /// What the control does.
    public enum Kind: Int, Sendable, CaseIterable {
        case zoomIn = 1
        case zoomOut = 2
        case recenter = 3
    }

    /// Stable across frames and sizes: the kind's raw value.
    public var id: Int { kind.rawValue }
    /// Which control this is.
    public var kind: Kind
    /// Where the control is drawn, in screen pixels.
    public var rect: ScreenRect
}

/// The attribution of the bundled data (OpenStreetMap's ODbL and the OpenMapTiles schema).
public let mapAttribution = "© OpenStreetMap contributors © OpenMapTiles"

/// The credit line a map frame carries: "© OpenStreetMap contributors" always, then what the
/// style's sources and the tile source's metadata ask for, each credit once.
public enum MapAttribution {
    /// Credits longer than this are cut: the line must fit a corner of a car's screen, and the
    /// text comes from files.
    public static let maximumLength = 160

    /// The credit line for `style` drawn over `tiles` and the tile sources bound to its source
    /// ids. HTML in the attributions (links, `&copy;`) is reduced to its text, and credits are
    /// told apart by their "©".
    public static func text(style: Style, tiles: (any TileSource)?, sources bound: [String: any TileSource] = [:]) -> String {
        var credits = ["OpenStreetMap contributors"]
        var seen: Set<String> = ["openstreetmap contributors"]
        var sources = style.sources.sorted { $0.key < $1.key }.compactMap(\.value.attribution)
        if let attribution = tiles?.attribution { sources.append(attribution) }
        sources += bound.sorted { $0.key < $1.key }.compactMap { style.sources[$0.key] == nil ? nil : $0.value.attribution }
        for attribution in sources {
            for credit in Self.credits(in: attribution) where seen.insert(credit.lowercased()).inserted {
                credits.append(credit)
            }
        }
        var line = credits.map { "© " + $0 }.joined(separator: " ")
        if line.count > maximumLength { line = String(line.prefix(maximumLength - 1)) + "…" }
        return line
    }

    /// The credits of one attribution: its text without markup, split at each "©".
    static func credits(in attribution: String) -> [String] {
        var text = ""
        var inTag = false
        for character in attribution.prefix(4096) {
            switch character {
            case "<": inTag = true
            case ">": inTag = false; text.append(" ")
            default: if !inTag { text.append(character) }
            }
        }
        text = text.replacingOccurrences(of: "&copy;", with: "©").replacingOccurrences(of: "&amp;", with: "&")
            .replacingOccurrences(of: "(c)", with: "©").replacingOccurrences(of: "(C)", with: "©")
        return text.split(separator: "©").map {
            $0.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }.filter { !$0.isEmpty }
    }
}
