import CarWindowGeo
import CarWindowSystemSupport
/// The layer kinds a navigation map draws; other MapLibre kinds are skipped with a warning.
public enum LayerType: String, Sendable, CaseIterable {
    case background
    case fill
    case line
    case fillExtrusion = "fill-extrusion"
    case symbol
}

/// Whether a layer is drawn at all (the `visibility` layout property).
public enum Visibility: String, Sendable, CaseIterable, StyleEnumeration {
    case visible
    case none
}

/// How line ends are drawn (`line-cap`).
public enum LineCap: String, Sendable, CaseIterable, StyleEnumeration {
    case butt, round, square
}

/// How line segments meet (`line-join`).
public enum LineJoin: String, Sendable, CaseIterable, StyleEnumeration {
    case bevel, round, miter
}

/// Where labels go relative to their geometry (`symbol-placement`).
public enum SymbolPlacement: String, Sendable, CaseIterable, StyleEnumeration {
    case point
    case line
    case lineCenter = "line-center"
}

/// Which part of a label sits on its anchor point (`text-anchor`).
public enum TextAnchor: String, Sendable, CaseIterable, StyleEnumeration {
    case center, left, right, top, bottom
    case topLeft = "top-left"
    case topRight = "top-right"
    case bottomLeft = "bottom-left"
    case bottomRight = "bottom-right"
}

/// Case conversion applied to label text (`text-transform`).
public enum TextTransform: String, Sendable, CaseIterable, StyleEnumeration {
    case none, uppercase, lowercase
}

/// One layer of a style: which features to draw and how.
public struct StyleLayer: Sendable {
    /// The layer's `id`, unique within a loaded style (later duplicates are skipped).
    public var id: String
    /// The kind of layer, which decides its paint and layout properties.
    public var type: LayerType
    /// The source id; nil only for background layers.
    public var source: String?
    /// The layer of a vector source to draw from (`source-layer`).
    public var sourceLayer: String?
    /// The layer is drawn from this zoom on (inclusive).
    public var minZoom: Double
    /// The layer is hidden from this zoom on (exclusive).
    public var maxZoom: Double
    /// Whether the layer is drawn at all (`visibility`).
    public var visibility: Visibility
    /// Only features for which this evaluates to `true` are drawn; nil draws every feature.
    public var filter: Expression?
    /// Paint properties of the layer's kind.
    public var paint: LayerPaint
    /// Layout properties of the layer's kind; ``LayerLayout/none`` for kinds without any.
    public var layout: LayerLayout

    /// Makes a layer; paint and layout left nil take MapLibre's defaults for `type`, and the
    /// zoom range defaults to 0..<24.
    public init(id: String, type: LayerType, source: String? = nil, sourceLayer: String? = nil,
                minZoom: Double = 0, maxZoom: Double = 24, visibility: Visibility = .visible,
                filter: Expression? = nil, paint: LayerPaint? = nil, layout: LayerLayout? = nil) {
        self.id = id
        self.type = type
        self.source = source
        self.sourceLayer = sourceLayer
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.visibility = visibility
        self.filter = filter
        self.paint = paint ?? LayerPaint(defaultsFor: type)
        self.layout = layout ?? LayerLayout(defaultsFor: type)
    }

    /// Whether the layer draws at zoom `z`: visible and `minZoom <= z < maxZoom`, as MapLibre.
    public func isVisible(atZoom z: Double) -> Bool {
        visibility == .visible && minZoom <= z && z < maxZoom
    }

    /// Whether `feature` passes the layer's filter at `zoom`.
    public func matches(_ feature: VectorTileFeature, zoom: Double) -> Bool {
        filter?.matches(EvaluationContext(zoom: zoom, feature: feature)) ?? true
    }
}

/// Paint properties, typed by layer kind.
public enum LayerPaint: Sendable {
    case background(BackgroundPaint)
    case fill(FillPaint)
    case line(LinePaint)
    case fillExtrusion(FillExtrusionPaint)
    case symbol(SymbolPaint)

    /// MapLibre's defaults for a layer of `type`.
    public init(defaultsFor type: LayerType) {
        switch type {
        case .background: self = .background(BackgroundPaint())
        case .fill: self = .fill(FillPaint())
        case .line: self = .line(LinePaint())
        case .fillExtrusion: self = .fillExtrusion(FillExtrusionPaint())
        case .symbol: self = .symbol(SymbolPaint())
        }
    }

    /// The background paint, if this is a background layer's.
    public var background: BackgroundPaint? { if case .background(let p) = self { p } else { nil } }
    /// The fill paint, if this is a fill layer's.
    public var fill: FillPaint? { if case .fill(let p) = self { p } else { nil } }
    /// The line paint, if this is a line layer's.
    public var line: LinePaint? { if case .line(let p) = self { p } else { nil } }
    /// The extrusion paint, if this is a fill-extrusion layer's.
    public var fillExtrusion: FillExtrusionPaint? { if case .fillExtrusion(let p) = self { p } else { nil } }
    /// The text paint, if this is a symbol layer's.
    public var symbol: SymbolPaint? { if case .symbol(let p) = self { p } else { nil } }
}

/// Layout properties, typed by layer kind; kinds without layout properties besides
/// `visibility` (kept on ``StyleLayer``) have none here.
public enum LayerLayout: Sendable {
    case line(LineLayout)
    case symbol(SymbolLayout)
    case none

    /// MapLibre's defaults for a layer of `type`.
    public init(defaultsFor type: LayerType) {
        switch type {
        case .line: self = .line(LineLayout())
        case .symbol: self = .symbol(SymbolLayout())
        default: self = .none
        }
    }

    /// The line layout, if this is a line layer's.
    public var line: LineLayout? { if case .line(let l) = self { l } else { nil } }
    /// The symbol layout, if this is a symbol layer's.
    public var symbol: SymbolLayout? { if case .symbol(let l) = self { l } else { nil } }
}

/// `background-*` paint properties.
public struct BackgroundPaint: Sendable {
    /// The colour under everything else (`background-color`); black by default.
    public var backgroundColor: StyleProperty<Color> = .constant(.black)
    /// Opacity of the background, 0...1 (`background-opacity`).
    public var backgroundOpacity: StyleProperty<Double> = .constant(1)
    /// MapLibre's defaults: opaque black.
    public init() {}
}

/// `fill-*` paint properties.
public struct FillPaint: Sendable {
    /// Colour of the polygons' interiors (`fill-color`); black by default.
    public var fillColor: StyleProperty<Color> = .constant(.black)
    /// Opacity of the fill, 0...1 (`fill-opacity`).
    public var fillOpacity: StyleProperty<Double> = .constant(1)
    /// Nil means the outline takes `fill-color`, as MapLibre does.
    public var fillOutlineColor: StyleProperty<Color>?
    /// Whether polygon edges get an outline that smooths them (`fill-antialias`).
    public var fillAntialias: StyleProperty<Bool> = .constant(true)
    /// MapLibre's defaults: opaque black, antialiased.
    public init() {}
}

/// `line-*` paint properties.
public struct LinePaint: Sendable {
    /// Colour of the line (`line-color`); black by default.
    public var lineColor: StyleProperty<Color> = .constant(.black)
    /// Width of the line in pixels (`line-width`); 1 by default.
    public var lineWidth: StyleProperty<Double> = .constant(1)
    /// Opacity of the line, 0...1 (`line-opacity`).
    public var lineOpacity: StyleProperty<Double> = .constant(1)
    /// Dash and gap lengths in line widths; nil draws a solid line.
    public var lineDasharray: StyleProperty<[Double]>?
    /// How far the line's edges fade out, in pixels (`line-blur`).
    public var lineBlur: StyleProperty<Double> = .constant(0)
    /// Gap in pixels inside a line drawn as two parallel lines (`line-gap-width`); read, but not drawn yet.
    public var lineGapWidth: StyleProperty<Double> = .constant(0)
    /// Sideways shift of the line in pixels, positive to the right of its direction
    /// (`line-offset`); read, but not drawn yet.
    public var lineOffset: StyleProperty<Double> = .constant(0)
    /// MapLibre's defaults: a solid, opaque, one-pixel black line.
    public init() {}
}

/// `line-*` layout properties.
public struct LineLayout: Sendable {
    /// How line ends are drawn (`line-cap`); butt by default.
    public var lineCap: StyleProperty<LineCap> = .constant(.butt)
    /// How segments meet (`line-join`); miter by default.
    public var lineJoin: StyleProperty<LineJoin> = .constant(.miter)
    /// Miter joins that would reach further than this many half widths from the centre line
    /// become bevels (`line-miter-limit`).
    public var lineMiterLimit: StyleProperty<Double> = .constant(2)
    /// Round joins whose miter would reach at most this many half widths are drawn as miters
    /// (`line-round-limit`).
    public var lineRoundLimit: StyleProperty<Double> = .constant(1.05)
    /// MapLibre's defaults: butt caps and miter joins.
    public init() {}
}

/// `fill-extrusion-*` paint properties.
public struct FillExtrusionPaint: Sendable {
    /// Colour of the extruded walls and roofs (`fill-extrusion-color`); black by default.
    public var fillExtrusionColor: StyleProperty<Color> = .constant(.black)
    /// Height of the top above the ground, in metres (`fill-extrusion-height`).
    public var fillExtrusionHeight: StyleProperty<Double> = .constant(0)
    /// Height of the bottom above the ground, in metres (`fill-extrusion-base`); a top
    /// below it is raised to it.
    public var fillExtrusionBase: StyleProperty<Double> = .constant(0)
    /// Opacity of the whole layer, 0...1 (`fill-extrusion-opacity`).
    public var fillExtrusionOpacity: StyleProperty<Double> = .constant(1)
    /// MapLibre's defaults: flat, opaque black.
    public init() {}
}

/// `text-*` paint properties of symbol layers.
public struct SymbolPaint: Sendable {
    /// Colour of the glyphs (`text-color`); black by default.
    public var textColor: StyleProperty<Color> = .constant(.black)
    /// Colour of the outline around the glyphs (`text-halo-color`); transparent by default.
    public var textHaloColor: StyleProperty<Color> = .constant(.transparent)
    /// Width of the halo in pixels (`text-halo-width`).
    public var textHaloWidth: StyleProperty<Double> = .constant(0)
    /// How far the halo fades out, in pixels (`text-halo-blur`); read, but not drawn yet.
    public var textHaloBlur: StyleProperty<Double> = .constant(0)
    /// Opacity of the label, 0...1 (`text-opacity`).
    public var textOpacity: StyleProperty<Double> = .constant(1)
    /// MapLibre's defaults: black text without a halo.
    public init() {}
}

/// `text-*` and `symbol-*` layout properties of symbol layers.
public struct SymbolLayout: Sendable {
    /// The label text; legacy `{token}` strings are already compiled to lookups.
    public var textField: StyleProperty<String> = .constant("")
    /// Font names, first choice first; the first loaded one is used (`text-font`).
    public var textFont: StyleProperty<[String]> = .constant(["Open Sans Regular", "Arial Unicode MS Regular"])
    /// Glyph size in pixels (`text-size`); 16 by default.
    public var textSize: StyleProperty<Double> = .constant(16)
    /// Largest turn in degrees between neighbouring glyphs of a label along a line
    /// (`text-max-angle`); sharper bends leave the label out there.
    public var textMaxAngle: StyleProperty<Double> = .constant(45)
    /// Width in ems beyond which point labels wrap (`text-max-width`).
    public var textMaxWidth: StyleProperty<Double> = .constant(10)
    /// Extra space between glyphs in ems (`text-letter-spacing`).
    public var textLetterSpacing: StyleProperty<Double> = .constant(0)
    /// Distance between the baselines of wrapped lines, in ems (`text-line-height`).
    public var textLineHeight: StyleProperty<Double> = .constant(1.2)
    /// Extra room around a label's box when checking for collisions, in pixels (`text-padding`).
    public var textPadding: StyleProperty<Double> = .constant(2)
    /// Shift of the label from its anchor in ems, x right and y down (`text-offset`); read, but not drawn yet.
    public var textOffset: StyleProperty<[Double]> = .constant([0, 0])
    /// Which part of a point label sits on its anchor (`text-anchor`); line labels are centred.
    public var textAnchor: StyleProperty<TextAnchor> = .constant(.center)
    /// Case conversion of the text (`text-transform`).
    public var textTransform: StyleProperty<TextTransform> = .constant(.none)
    /// Whether the label is drawn even where it collides with others (`text-allow-overlap`).
    public var textAllowOverlap: StyleProperty<Bool> = .constant(false)
    /// Whether other labels may be drawn over this one (`text-ignore-placement`);
    /// read, but not used in placement yet.
    public var textIgnorePlacement: StyleProperty<Bool> = .constant(false)
    /// Whether the text may be left out while its icon is drawn (`text-optional`); read, but
    /// unused, as labels have no icons.
    public var textOptional: StyleProperty<Bool> = .constant(false)
    /// Whether labels sit on points or follow lines (`symbol-placement`).
    public var symbolPlacement: StyleProperty<SymbolPlacement> = .constant(.point)
    /// Distance between repeated labels along a line, in pixels (`symbol-spacing`).
    public var symbolSpacing: StyleProperty<Double> = .constant(250)
    /// Nil keeps the source order for placement priority.
    public var symbolSortKey: StyleProperty<Double>?
    /// Whether labels keep clear of tile edges (`symbol-avoid-edges`); read, but not used yet.
    public var symbolAvoidEdges: StyleProperty<Bool> = .constant(false)
    /// MapLibre's defaults: 16-pixel centred point labels.
    public init() {}
}

// MARK: - Reading properties

/// Sets one property from JSON; each returns false for a key it does not know.
extension PropertyReader {
    private mutating func update<T: StylePropertyValue>(_ property: inout StyleProperty<T>, _ json: JSONValue,
                                                        _ path: String) throws(StyleError) {
        property = try read(json, path: path, default: Self.defaultValue(of: property))
    }

    private mutating func update<T: StylePropertyValue>(_ property: inout StyleProperty<T>?, _ json: JSONValue,
                                                        _ path: String, default defaultValue: T) throws(StyleError) {
        property = try read(json, path: path, default: defaultValue)
    }

    mutating func setPaint(_ paint: inout LayerPaint, key: String, json: JSONValue, path: String) throws(StyleError) -> Bool {
        switch paint {
        case .background(var p):
            switch key {
            case "background-color": try update(&p.backgroundColor, json, path)
            case "background-opacity": try update(&p.backgroundOpacity, json, path)
            default: return false
            }
            paint = .background(p)
        case .fill(var p):
            switch key {
            case "fill-color": try update(&p.fillColor, json, path)
            case "fill-opacity": try update(&p.fillOpacity, json, path)
            case "fill-outline-color": try update(&p.fillOutlineColor, json, path, default: .black)
            case "fill-antialias": try update(&p.fillAntialias, json, path)
            default: return false
            }
            paint = .fill(p)
        case .line(var p):
            switch key {
            case "line-color": try update(&p.lineColor, json, path)
            case "line-width": try update(&p.lineWidth, json, path)
            case "line-opacity": try update(&p.lineOpacity, json, path)
            case "line-dasharray": try update(&p.lineDasharray, json, path, default: [])
            case "line-blur": try update(&p.lineBlur, json, path)
            case "line-gap-width": try update(&p.lineGapWidth, json, path)
            case "line-offset": try update(&p.lineOffset, json, path)
            default: return false
            }
            paint = .line(p)
        case .fillExtrusion(var p):
            switch key {
            case "fill-extrusion-color": try update(&p.fillExtrusionColor, json, path)
            case "fill-extrusion-height": try update(&p.fillExtrusionHeight, json, path)
            case "fill-extrusion-base": try update(&p.fillExtrusionBase, json, path)
            case "fill-extrusion-opacity": try update(&p.fillExtrusionOpacity, json, path)
            default: return false
            }
            paint = .fillExtrusion(p)
        case .symbol(var p):
            switch key {
            case "text-color": try update(&p.textColor, json, path)
            case "text-halo-color": try update(&p.textHaloColor, json, path)
            case "text-halo-width": try update(&p.textHaloWidth, json, path)
            case "text-halo-blur": try update(&p.textHaloBlur, json, path)
            case "text-opacity": try update(&p.textOpacity, json, path)
            default: return false
            }
            paint = .symbol(p)
        }
        return true
    }

    mutating func setLayout(_ layout: inout LayerLayout, key: String, json: JSONValue, path: String) throws(StyleError) -> Bool {
        switch layout {
        case .line(var l):
            switch key {
            case "line-cap": try update(&l.lineCap, json, path)
            case "line-join": try update(&l.lineJoin, json, path)
            case "line-miter-limit": try update(&l.lineMiterLimit, json, path)
            case "line-round-limit": try update(&l.lineRoundLimit, json, path)
            default: return false
            }
            layout = .line(l)
        case .symbol(var l):
            switch key {
            case "text-field": try update(&l.textField, json, path)
            case "text-font": try update(&l.textFont, json, path)
            case "text-size": try update(&l.textSize, json, path)
            case "text-max-angle": try update(&l.textMaxAngle, json, path)
            case "text-max-width": try update(&l.textMaxWidth, json, path)
            case "text-letter-spacing": try update(&l.textLetterSpacing, json, path)
            case "text-line-height": try update(&l.textLineHeight, json, path)
            case "text-padding": try update(&l.textPadding, json, path)
            case "text-offset": try update(&l.textOffset, json, path)
            case "text-anchor": try update(&l.textAnchor, json, path)
            case "text-transform": try update(&l.textTransform, json, path)
            case "text-allow-overlap": try update(&l.textAllowOverlap, json, path)
            case "text-ignore-placement": try update(&l.textIgnorePlacement, json, path)
            case "text-optional": try update(&l.textOptional, json, path)
            case "symbol-placement": try update(&l.symbolPlacement, json, path)
            case "symbol-spacing": try update(&l.symbolSpacing, json, path)
            case "symbol-sort-key": try update(&l.symbolSortKey, json, path, default: 0)
            case "symbol-avoid-edges": try update(&l.symbolAvoidEdges, json, path)
            default: return false
            }
            layout = .symbol(l)
        case .none:
            return false
        }
        return true
    }
}
