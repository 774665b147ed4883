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
    public var id: String
    public var type: LayerType
    /// The source id; nil only for background layers.
    public var source: String?
    /// The layer of a vector source to draw from (`source-layer`).
    public var sourceLayer: String?
    /// The layer is drawn from this zoom on (inclusive).
    public var minZoom: Double
    /// The layer is hidden from this zoom on (exclusive).
    public var maxZoom: Double
    public var visibility: Visibility
    /// Only features for which this evaluates to `true` are drawn; nil draws every feature.
    public var filter: Expression?
    public var paint: LayerPaint
    public var layout: LayerLayout

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

    public var background: BackgroundPaint? { if case .background(let p) = self { p } else { nil } }
    public var fill: FillPaint? { if case .fill(let p) = self { p } else { nil } }
    public var line: LinePaint? { if case .line(let p) = self { p } else { nil } }
    public var fillExtrusion: FillExtrusionPaint? { if case .fillExtrusion(let p) = self { p } else { nil } }
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

    public var line: LineLayout? { if case .line(let l) = self { l } else { nil } }
    public var symbol: SymbolLayout? { if case .symbol(let l) = self { l } else { nil } }
}

/// `background-*` paint properties.
public struct BackgroundPaint: Sendable {
    public var backgroundColor: StyleProperty<Color> = .constant(.black)
    public var backgroundOpacity: StyleProperty<Double> = .constant(1)
    public init() {}
}

/// `fill-*` paint properties.
public struct FillPaint: Sendable {
    public var fillColor: StyleProperty<Color> = .constant(.black)
    public var fillOpacity: StyleProperty<Double> = .constant(1)
    /// Nil means the outline takes `fill-color`, as MapLibre does.
    public var fillOutlineColor: StyleProperty<Color>?
    public var fillAntialias: StyleProperty<Bool> = .constant(true)
    public init() {}
}

/// `line-*` paint properties.
public struct LinePaint: Sendable {
    public var lineColor: StyleProperty<Color> = .constant(.black)
    public var lineWidth: StyleProperty<Double> = .constant(1)
    public var lineOpacity: StyleProperty<Double> = .constant(1)
    /// Dash and gap lengths in line widths; nil draws a solid line.
    public var lineDasharray: StyleProperty<[Double]>?
    public var lineBlur: StyleProperty<Double> = .constant(0)
    public var lineGapWidth: StyleProperty<Double> = .constant(0)
    public var lineOffset: StyleProperty<Double> = .constant(0)
    public init() {}
}

/// `line-*` layout properties.
public struct LineLayout: Sendable {
    public var lineCap: StyleProperty<LineCap> = .constant(.butt)
    public var lineJoin: StyleProperty<LineJoin> = .constant(.miter)
    public var lineMiterLimit: StyleProperty<Double> = .constant(2)
    public var lineRoundLimit: StyleProperty<Double> = .constant(1.05)
    public init() {}
}

/// `fill-extrusion-*` paint properties.
public struct FillExtrusionPaint: Sendable {
    public var fillExtrusionColor: StyleProperty<Color> = .constant(.black)
    public var fillExtrusionHeight: StyleProperty<Double> = .constant(0)
    public var fillExtrusionBase: StyleProperty<Double> = .constant(0)
    public var fillExtrusionOpacity: StyleProperty<Double> = .constant(1)
    public init() {}
}

/// `text-*` paint properties of symbol layers.
public struct SymbolPaint: Sendable {
    public var textColor: StyleProperty<Color> = .constant(.black)
    public var textHaloColor: StyleProperty<Color> = .constant(.transparent)
    public var textHaloWidth: StyleProperty<Double> = .constant(0)
    public var textHaloBlur: StyleProperty<Double> = .constant(0)
    public var textOpacity: StyleProperty<Double> = .constant(1)
    public init() {}
}

/// `text-*` and `symbol-*` layout properties of symbol layers.
public struct SymbolLayout: Sendable {
    /// The label text; legacy `{token}` strings are already compiled to lookups.
    public var textField: StyleProperty<String> = .constant("")
    public var textFont: StyleProperty<[String]> = .constant(["Open Sans Regular", "Arial Unicode MS Regular"])
    public var textSize: StyleProperty<Double> = .constant(16)
    public var textMaxAngle: StyleProperty<Double> = .constant(45)
    public var textMaxWidth: StyleProperty<Double> = .constant(10)
    public var textLetterSpacing: StyleProperty<Double> = .constant(0)
    public var textLineHeight: StyleProperty<Double> = .constant(1.2)
    public var textPadding: StyleProperty<Double> = .constant(2)
    public var textOffset: StyleProperty<[Double]> = .constant([0, 0])
    public var textAnchor: StyleProperty<TextAnchor> = .constant(.center)
    public var textTransform: StyleProperty<TextTransform> = .constant(.none)
    public var textAllowOverlap: StyleProperty<Bool> = .constant(false)
    public var textIgnorePlacement: StyleProperty<Bool> = .constant(false)
    public var textOptional: StyleProperty<Bool> = .constant(false)
    public var symbolPlacement: StyleProperty<SymbolPlacement> = .constant(.point)
    public var symbolSpacing: StyleProperty<Double> = .constant(250)
    /// Nil keeps the source order for placement priority.
    public var symbolSortKey: StyleProperty<Double>?
    public var symbolAvoidEdges: StyleProperty<Bool> = .constant(false)
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
