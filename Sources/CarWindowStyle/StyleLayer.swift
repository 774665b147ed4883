import CarWindowGeo
/// The layer kinds a navigation map draws; other MapLibre kinds are skipped with a warning.
public enum LayerType: String, Sendable, CaseIterable {
    case background
    case fill
    case line
    case fillExtrusion = "fill-extrusion"
    case symbol
    case circle
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

/// How lines of a multi-line label align with each other (`text-justify`).
public enum TextJustify: String, Sendable, CaseIterable, StyleEnumeration {
    /// Follows the anchor: left anchors justify left, right anchors right, others centre.
    case auto
    case left, center, right
}

/// What a symbol's icon or text turns and tilts with (`icon-rotation-alignment`,
/// `text-rotation-alignment`, and the pitch alignments).
public enum SymbolAlignment: String, Sendable, CaseIterable, StyleEnumeration {
    /// With the map: along the line for line placement, with the map's bearing otherwise.
    case map
    /// Upright on the screen, whatever the map's bearing and the line's direction.
    case viewport
    /// `map` for line placement, `viewport` for point placement, as MapLibre resolves it.
    case auto
}

/// How an icon is stretched around its text (`icon-text-fit`): road shields grow with the
/// number they carry.
public enum IconTextFit: String, Sendable, CaseIterable, StyleEnumeration {
    case none, width, height, both
}

/// What a `*-translate` offset is measured along (`*-translate-anchor`): the map's axes, turning
/// with its bearing, or the screen's.
public enum TranslateAnchor: String, Sendable, CaseIterable, StyleEnumeration {
    case map, viewport
}

/// Whether circles lie on the map or face the viewer (`circle-pitch-alignment`), and whether
/// they shrink with distance under pitch (`circle-pitch-scale`).
public enum CirclePitchAlignment: String, Sendable, CaseIterable, StyleEnumeration {
    case map, viewport
}

/// Case conversion applied to label text (`text-transform`).
public enum TextTransform: String, Sendable, CaseIterable, StyleEnumeration {
    case none, uppercase, lowercase
}

/// One layer of a style: which features to draw and how.
public struct StyleLayer: Sendable {
    /// The source id of the engine's route: its line layers draw the route where the style puts
    /// them (the map's `RouteOverlay`).
    package static let routeSourceID = "carwindow-route"
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
    case circle(CirclePaint)

    /// MapLibre's defaults for a layer of `type`.
    public init(defaultsFor type: LayerType) {
        switch type {
        case .background: self = .background(BackgroundPaint())
        case .fill: self = .fill(FillPaint())
        case .line: self = .line(LinePaint())
        case .fillExtrusion: self = .fillExtrusion(FillExtrusionPaint())
        case .symbol: self = .symbol(SymbolPaint())
        case .circle: self = .circle(CirclePaint())
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
    /// The text and icon paint, if this is a symbol layer's.
    public var symbol: SymbolPaint? { if case .symbol(let p) = self { p } else { nil } }
    /// The circle paint, if this is a circle layer's.
    public var circle: CirclePaint? { if case .circle(let p) = self { p } else { nil } }
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
    /// A sprite image repeated over the whole map instead of the colour (`background-pattern`).
    public var backgroundPattern: StyleProperty<String>?
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
    /// A sprite image repeated over the polygons instead of their colour (`fill-pattern`);
    /// the same image for every feature of the layer.
    public var fillPattern: StyleProperty<String>?
    /// Pixels the polygons are moved by, right and down (`fill-translate`): a building's roof
    /// drawn over its darker footprint, say.
    public var fillTranslate: StyleProperty<[Double]> = .constant([0, 0])
    /// Whether ``fillTranslate`` turns with the map or stays on the screen's axes.
    public var fillTranslateAnchor: StyleProperty<TranslateAnchor> = .constant(.map)
    /// MapLibre's defaults: opaque black, antialiased.
    public init() {}
}

/// `line-*` paint properties.
public struct LinePaint: Sendable {
    /// Colour of the line (`line-color`); black by default.
    public var lineColor: StyleProperty<Color> = .constant(.black)
    /// Pixels the line is moved by, right and down (`line-translate`).
    public var lineTranslate: StyleProperty<[Double]> = .constant([0, 0])
    /// Whether ``lineTranslate`` turns with the map or stays on the screen's axes.
    public var lineTranslateAnchor: StyleProperty<TranslateAnchor> = .constant(.map)
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
    /// A sprite image repeated along the line instead of its colour (`line-pattern`): as tall
    /// as the image across the line's middle (the line's width where narrower), and along the
    /// line one image per `image width x line width / image height` pixels, as MapLibre draws
    /// it. Dashes do not apply to a patterned line.
    public var linePattern: StyleProperty<String>?
    /// Colours along the line by `["line-progress"]`, 0 at its start and 1 at its end, in place
    /// of ``lineColor`` (`line-gradient`). Drawn on the engine's route (source
    /// `carwindow-route`), where the progress is the share of the whole route; a tile line
    /// keeps its colour, with a warning when the style loads.
    public var lineGradient: StyleProperty<Color>?
    /// The feature property `["line-progress"]` reads.
    package static let lineProgressKey = "\u{0}line-progress"
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

/// `circle-*` paint properties: a disc per point feature, as search results and traffic
/// incidents are commonly drawn.
public struct CirclePaint: Sendable {
    /// Radius of the disc in pixels (`circle-radius`); 5 by default.
    public var circleRadius: StyleProperty<Double> = .constant(5)
    /// Colour of the disc (`circle-color`); black by default.
    public var circleColor: StyleProperty<Color> = .constant(.black)
    /// Opacity of the disc, 0...1 (`circle-opacity`); the stroke has its own.
    public var circleOpacity: StyleProperty<Double> = .constant(1)
    /// How much of the radius fades out, 0 (a sharp edge) to 1 (fading from the centre)
    /// (`circle-blur`).
    public var circleBlur: StyleProperty<Double> = .constant(0)
    /// Width in pixels of the ring drawn outside the disc (`circle-stroke-width`).
    public var circleStrokeWidth: StyleProperty<Double> = .constant(0)
    /// Colour of the ring (`circle-stroke-color`); black by default.
    public var circleStrokeColor: StyleProperty<Color> = .constant(.black)
    /// Opacity of the ring, 0...1 (`circle-stroke-opacity`).
    public var circleStrokeOpacity: StyleProperty<Double> = .constant(1)
    /// Whether discs lie flat on a pitched map or face the viewer (`circle-pitch-alignment`).
    public var circlePitchAlignment: StyleProperty<CirclePitchAlignment> = .constant(.viewport)
    /// Whether discs shrink with distance on a pitched map (`circle-pitch-scale`: `map`) or
    /// keep their size (`viewport`).
    public var circlePitchScale: StyleProperty<CirclePitchAlignment> = .constant(.map)
    /// MapLibre's defaults: black five-pixel discs without a ring.
    public init() {}
}

/// `text-*` and `icon-*` paint properties of symbol layers.
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
    /// Colour of an SDF icon (`icon-color`); icons in full colour ignore it.
    public var iconColor: StyleProperty<Color> = .constant(.black)
    /// Colour of the outline around an SDF icon (`icon-halo-color`).
    public var iconHaloColor: StyleProperty<Color> = .constant(.transparent)
    /// Width of an SDF icon's halo in pixels (`icon-halo-width`).
    public var iconHaloWidth: StyleProperty<Double> = .constant(0)
    /// How far an SDF icon's halo fades out, in pixels (`icon-halo-blur`); read, but not drawn yet.
    public var iconHaloBlur: StyleProperty<Double> = .constant(0)
    /// Opacity of the icon, 0...1 (`icon-opacity`).
    public var iconOpacity: StyleProperty<Double> = .constant(1)
    /// MapLibre's defaults: black text without a halo, icons as the sprite draws them.
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
    /// Shift of an upright label from its anchor in ems, x right and y down (`text-offset`);
    /// labels bent along a line ignore it.
    public var textOffset: StyleProperty<[Double]> = .constant([0, 0])
    /// Which part of a point label sits on its anchor (`text-anchor`); line labels are centred.
    public var textAnchor: StyleProperty<TextAnchor> = .constant(.center)
    /// Anchors tried in turn for a point label until one fits (`text-variable-anchor`); nil
    /// keeps ``textAnchor``. Names that are not anchors are left out.
    public var textVariableAnchor: StyleProperty<[String]>?
    /// Distance in ems from the anchor point, in the direction of the anchor used, for variable
    /// anchors (`text-radial-offset`); 0 takes ``textOffset``'s parts instead.
    public var textRadialOffset: StyleProperty<Double> = .constant(0)
    /// How the lines of a wrapped label align (`text-justify`).
    public var textJustify: StyleProperty<TextJustify> = .constant(.center)
    /// Case conversion of the text (`text-transform`).
    public var textTransform: StyleProperty<TextTransform> = .constant(.none)
    /// Whether the label is drawn even where it collides with others (`text-allow-overlap`).
    public var textAllowOverlap: StyleProperty<Bool> = .constant(false)
    /// Whether other labels may be drawn over this one (`text-ignore-placement`).
    public var textIgnorePlacement: StyleProperty<Bool> = .constant(false)
    /// Whether the icon may be drawn without its text when the text collides (`text-optional`).
    public var textOptional: StyleProperty<Bool> = .constant(false)
    /// Whether labels sit on points or follow lines (`symbol-placement`).
    public var symbolPlacement: StyleProperty<SymbolPlacement> = .constant(.point)
    /// Distance between repeated labels along a line, in pixels (`symbol-spacing`).
    public var symbolSpacing: StyleProperty<Double> = .constant(250)
    /// Nil keeps the source order for placement priority.
    public var symbolSortKey: StyleProperty<Double>?
    /// Whether labels keep clear of tile edges (`symbol-avoid-edges`); read, but not used yet.
    public var symbolAvoidEdges: StyleProperty<Bool> = .constant(false)
    /// What the text turns with (`text-rotation-alignment`): `viewport` keeps a line-placed
    /// label upright at its anchor instead of bending it along the line.
    public var textRotationAlignment: StyleProperty<SymbolAlignment> = .constant(.auto)
    /// Whether text lies on a pitched map or faces the viewer (`text-pitch-alignment`); read,
    /// but labels follow their rotation alignment.
    public var textPitchAlignment: StyleProperty<SymbolAlignment> = .constant(.auto)

    /// The sprite image of the icon (`icon-image`); legacy `{token}` strings are compiled to
    /// lookups. Nil or an empty name draws no icon.
    public var iconImage: StyleProperty<String>?
    /// Scale of the icon against its sprite size (`icon-size`); 1 by default.
    public var iconSize: StyleProperty<Double> = .constant(1)
    /// Clockwise turn of the icon in degrees (`icon-rotate`).
    public var iconRotate: StyleProperty<Double> = .constant(0)
    /// Shift of the icon from its anchor in sprite pixels times `icon-size`, x right and y down
    /// (`icon-offset`).
    public var iconOffset: StyleProperty<[Double]> = .constant([0, 0])
    /// Which part of the icon sits on the anchor (`icon-anchor`).
    public var iconAnchor: StyleProperty<TextAnchor> = .constant(.center)
    /// Extra room around the icon's box when checking for collisions, in pixels (`icon-padding`).
    public var iconPadding: StyleProperty<Double> = .constant(2)
    /// Whether the icon is drawn even where it collides with others (`icon-allow-overlap`).
    public var iconAllowOverlap: StyleProperty<Bool> = .constant(false)
    /// Whether other symbols may be drawn over this icon (`icon-ignore-placement`).
    public var iconIgnorePlacement: StyleProperty<Bool> = .constant(false)
    /// Whether the text may be drawn without its icon when the icon collides (`icon-optional`).
    public var iconOptional: StyleProperty<Bool> = .constant(false)
    /// What the icon turns with (`icon-rotation-alignment`): `map` turns a line-placed icon
    /// (a one-way arrow) along its line.
    public var iconRotationAlignment: StyleProperty<SymbolAlignment> = .constant(.auto)
    /// Whether the icon lies on a pitched map (`icon-pitch-alignment`); read, but icons face the viewer.
    public var iconPitchAlignment: StyleProperty<SymbolAlignment> = .constant(.auto)
    /// How the icon stretches to surround its text (`icon-text-fit`).
    public var iconTextFit: StyleProperty<IconTextFit> = .constant(.none)
    /// Room around the text inside a fitted icon, in pixels: top, right, bottom, left
    /// (`icon-text-fit-padding`).
    public var iconTextFitPadding: StyleProperty<[Double]> = .constant([0, 0, 0, 0])
    /// Whether line-placed icons flip to stay upright (`icon-keep-upright`).
    public var iconKeepUpright: StyleProperty<Bool> = .constant(false)
    /// MapLibre's defaults: 16-pixel centred point labels, no icon.
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
            case "background-pattern": try update(&p.backgroundPattern, json, path, default: "")
            default: return false
            }
            paint = .background(p)
        case .fill(var p):
            switch key {
            case "fill-color": try update(&p.fillColor, json, path)
            case "fill-opacity": try update(&p.fillOpacity, json, path)
            case "fill-outline-color": try update(&p.fillOutlineColor, json, path, default: .black)
            case "fill-antialias": try update(&p.fillAntialias, json, path)
            case "fill-pattern": try update(&p.fillPattern, json, path, default: "")
            case "fill-translate": try update(&p.fillTranslate, json, path)
            case "fill-translate-anchor": try update(&p.fillTranslateAnchor, json, path)
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
            case "line-translate": try update(&p.lineTranslate, json, path)
            case "line-translate-anchor": try update(&p.lineTranslateAnchor, json, path)
            case "line-pattern": try update(&p.linePattern, json, path, default: "")
            case "line-gradient": try update(&p.lineGradient, json, path, default: .black)
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
            case "icon-color": try update(&p.iconColor, json, path)
            case "icon-halo-color": try update(&p.iconHaloColor, json, path)
            case "icon-halo-width": try update(&p.iconHaloWidth, json, path)
            case "icon-halo-blur": try update(&p.iconHaloBlur, json, path)
            case "icon-opacity": try update(&p.iconOpacity, json, path)
            default: return false
            }
            paint = .symbol(p)
        case .circle(var p):
            switch key {
            case "circle-radius": try update(&p.circleRadius, json, path)
            case "circle-color": try update(&p.circleColor, json, path)
            case "circle-opacity": try update(&p.circleOpacity, json, path)
            case "circle-blur": try update(&p.circleBlur, json, path)
            case "circle-stroke-width": try update(&p.circleStrokeWidth, json, path)
            case "circle-stroke-color": try update(&p.circleStrokeColor, json, path)
            case "circle-stroke-opacity": try update(&p.circleStrokeOpacity, json, path)
            case "circle-pitch-alignment": try update(&p.circlePitchAlignment, json, path)
            case "circle-pitch-scale": try update(&p.circlePitchScale, json, path)
            default: return false
            }
            paint = .circle(p)
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
            case "text-variable-anchor": try update(&l.textVariableAnchor, json, path, default: [])
            case "text-radial-offset": try update(&l.textRadialOffset, json, path)
            case "text-justify": try update(&l.textJustify, json, path)
            case "text-transform": try update(&l.textTransform, json, path)
            case "text-allow-overlap": try update(&l.textAllowOverlap, json, path)
            case "text-ignore-placement": try update(&l.textIgnorePlacement, json, path)
            case "text-optional": try update(&l.textOptional, json, path)
            case "symbol-placement": try update(&l.symbolPlacement, json, path)
            case "symbol-spacing": try update(&l.symbolSpacing, json, path)
            case "symbol-sort-key": try update(&l.symbolSortKey, json, path, default: 0)
            case "symbol-avoid-edges": try update(&l.symbolAvoidEdges, json, path)
            case "text-rotation-alignment": try update(&l.textRotationAlignment, json, path)
            case "text-pitch-alignment": try update(&l.textPitchAlignment, json, path)
            case "icon-image": try update(&l.iconImage, json, path, default: "")
            case "icon-size": try update(&l.iconSize, json, path)
            case "icon-rotate": try update(&l.iconRotate, json, path)
            case "icon-offset": try update(&l.iconOffset, json, path)
            case "icon-anchor": try update(&l.iconAnchor, json, path)
            case "icon-padding": try update(&l.iconPadding, json, path)
            case "icon-allow-overlap": try update(&l.iconAllowOverlap, json, path)
            case "icon-ignore-placement": try update(&l.iconIgnorePlacement, json, path)
            case "icon-optional": try update(&l.iconOptional, json, path)
            case "icon-rotation-alignment": try update(&l.iconRotationAlignment, json, path)
            case "icon-pitch-alignment": try update(&l.iconPitchAlignment, json, path)
            case "icon-text-fit": try update(&l.iconTextFit, json, path)
            case "icon-text-fit-padding": try update(&l.iconTextFitPadding, json, path)
            case "icon-keep-upright": try update(&l.iconKeepUpright, json, path)
            default: return false
            }
            layout = .symbol(l)
        case .none:
            return false
        }
        return true
    }
}
