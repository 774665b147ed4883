import Foundation
import Logging
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowTestSupport

@Suite("Style parsing")
struct StyleParsingTests {
    /// A small navigation style over the OpenMapTiles schema, mixing expression and legacy syntax
    /// the way real styles do.
    static let openMapTilesStyle = #"""
    {
      "version": 8,
      "name": "CarWindow test",
      "center": [24.945, 60.171],
      "zoom": 14,
      "glyphs": "fonts/{fontstack}/{range}.pbf",
      "sources": {
        "openmaptiles": {"type": "vector", "url": "pmtiles://helsinki.pmtiles", "minzoom": 10, "maxzoom": 14,
                         "attribution": "© OpenMapTiles © OpenStreetMap contributors"}
      },
      "layers": [
        {"id": "background", "type": "background", "paint": {"background-color": "#f2efe9"}},
        {"id": "landuse", "type": "fill", "source": "openmaptiles", "source-layer": "landuse",
         "filter": ["in", "class", "residential", "commercial"],
         "paint": {"fill-color": {"property": "class", "type": "categorical",
                                  "stops": [["residential", "#ece7e4"], ["commercial", "hsl(0, 60%, 92%)"]]},
                   "fill-opacity": {"base": 1, "stops": [[10, 0.4], [14, 1]]}}},
        {"id": "water", "type": "fill", "source": "openmaptiles", "source-layer": "water",
         "filter": ["all", ["==", "$type", "Polygon"], ["!=", "intermittent", 1]],
         "paint": {"fill-color": "rgb(158, 189, 255)", "fill-outline-color": "#8fa8d8", "fill-antialias": true}},
        {"id": "building", "type": "fill-extrusion", "source": "openmaptiles", "source-layer": "building",
         "minzoom": 13,
         "paint": {"fill-extrusion-color": "#dfdbd7",
                   "fill-extrusion-height": ["get", "render_height"],
                   "fill-extrusion-opacity": ["interpolate", ["linear"], ["zoom"], 13, 0, 15, 0.8]}},
        {"id": "road-minor", "type": "line", "source": "openmaptiles", "source-layer": "transportation",
         "filter": ["all", ["==", ["geometry-type"], "LineString"],
                           ["match", ["get", "class"], ["minor", "service"], true, false]],
         "layout": {"line-cap": "round", "line-join": "round"},
         "paint": {"line-color": "#ffffff",
                   "line-width": ["interpolate", ["exponential", 1.5], ["zoom"], 12, 0.5, 18, 12]}},
        {"id": "road-primary", "type": "line", "source": "openmaptiles", "source-layer": "transportation",
         "filter": ["==", "class", "primary"],
         "layout": {"line-cap": "round", "line-join": "round"},
         "paint": {"line-color": ["step", ["zoom"], "#f8d49b", 14, "#fcd27b"],
                   "line-width": {"base": 1.2, "stops": [[10, 1], [18, 20]]}}},
        {"id": "rail", "type": "line", "source": "openmaptiles", "source-layer": "transportation",
         "filter": ["==", ["get", "class"], "rail"],
         "paint": {"line-color": "#bbbbbb", "line-dasharray": [3, 3], "line-width": 1.5}},
        {"id": "road-label", "type": "symbol", "source": "openmaptiles", "source-layer": "transportation_name",
         "layout": {"symbol-placement": "line", "text-field": "{name:latin}", "text-font": ["Noto Sans Regular"],
                    "text-size": ["interpolate", ["linear"], ["zoom"], 13, 11, 18, 16],
                    "text-transform": "uppercase", "symbol-spacing": 300},
         "paint": {"text-color": "#444", "text-halo-color": "rgba(255,255,255,0.8)", "text-halo-width": 1.5}},
        {"id": "place-label", "type": "symbol", "source": "openmaptiles", "source-layer": "place",
         "layout": {"text-field": ["coalesce", ["get", "name:latin"], ["get", "name"]],
                    "text-anchor": "top", "text-offset": [0, 0.5], "text-max-width": 8},
         "paint": {"text-color": "#333"}}
      ]
    }
    """#

    static func load(_ text: String) throws(StyleError) -> Style {
        try Style(data: Data(text.utf8))
    }

    /// Loads a one-layer style built around `layer` (JSON text).
    static func loadLayer(_ layer: String) throws(StyleError) -> Style {
        try load(#"{"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}}, "layers": ["# + layer + "]}")
    }

    static func expectError(_ expected: StyleError, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: expected, sourceLocation: sourceLocation) { try load(text) }
    }

    static let primary = VectorTileFeature(id: 1, type: .lineString, properties: ["class": .string("primary")], geometry: [])
    static let minor = VectorTileFeature(id: 2, type: .lineString, properties: ["class": .string("minor")], geometry: [])

    @Test func loadsTheOpenMapTilesFixture() throws {
        let style = try Self.load(Self.openMapTilesStyle)
        #expect(style.version == 8)
        #expect(style.name == "CarWindow test")
        #expect(style.warnings.isEmpty, "\(style.warnings)")
        #expect(style.center == GeoCoordinate(latitude: 60.171, longitude: 24.945))
        #expect(style.zoom == 14)
        #expect(style.glyphs == "fonts/{fontstack}/{range}.pbf")
        let source = try #require(style.sources["openmaptiles"])
        #expect(source.type == .vector && source.url == "pmtiles://helsinki.pmtiles")
        #expect(source.minZoom == 10 && source.maxZoom == 14 && source.tiles.isEmpty)
        #expect(style.layers.map(\.id) == ["background", "landuse", "water", "building", "road-minor",
                                           "road-primary", "rail", "road-label", "place-label"])
        #expect(style.layers.map(\.type) == [.background, .fill, .fill, .fillExtrusion, .line, .line, .line, .symbol, .symbol])
        #expect(style.layer(withID: "road-label")?.sourceLayer == "transportation_name")
    }

    /// A layer painted with a sprite pattern not drawn yet is left out with a warning, not drawn
    /// in its default colour: OSM Bright's patterned water came out black. A null pattern is no pattern.
    @Test func patternLayersAreSkippedNotDrawnInAnotherColour() throws {
        for (type, key) in [("fill-extrusion", "fill-extrusion-pattern")] {
            let layer = """
                {"id": "patterned", "type": "\(type)", "source": "omt", "source-layer": "water",
                 "paint": {"\(key)": "wave", "\(type)-opacity": 0.5}}
                """
            let style = try Self.loadLayer(layer)
            #expect(style.layers.isEmpty, "\(type) with \(key) was kept")
            #expect(style.warnings.contains { $0.path == "layers[0].paint.\(key)" && $0.message.contains("skipped") }, "\(style.warnings)")
        }
        let background = try Self.load("""
            {"version": 8, "sources": {}, "layers": [{"id": "bg", "type": "background", "paint": {"background-pattern": ["get", "x"]}}]}
            """)
        #expect(background.layers.isEmpty)
        // Fill and background patterns are drawn: one image per layer, by name or by zoom.
        let fill = try Self.loadLayer("""
            {"id": "patterned", "type": "fill", "source": "omt", "source-layer": "water",
             "paint": {"fill-pattern": ["step", ["zoom"], "wave", 14, "ripple"], "fill-opacity": 0.5}}
            """)
        #expect(fill.layers.first?.paint.fill?.fillPattern?.evaluate(zoom: 15) == "ripple")
        let perFeature = try Self.loadLayer("""
            {"id": "patterned", "type": "fill", "source": "omt", "source-layer": "water", "paint": {"fill-pattern": ["get", "p"]}}
            """)
        #expect(perFeature.layers.isEmpty && perFeature.warnings.contains { $0.message.contains("skipped") })
        // Line patterns too, with the same rule for an image per feature.
        let line = try Self.loadLayer("""
            {"id": "patterned", "type": "line", "source": "omt", "source-layer": "transportation",
             "paint": {"line-pattern": ["step", ["zoom"], "dots", 14, "arrows"], "line-width": 6}}
            """)
        #expect(line.layers.first?.paint.line?.linePattern?.evaluate(zoom: 13) == "dots")
        #expect(line.warnings.isEmpty, "\(line.warnings)")
        let linePerFeature = try Self.loadLayer("""
            {"id": "patterned", "type": "line", "source": "omt", "source-layer": "transportation", "paint": {"line-pattern": ["get", "p"]}}
            """)
        #expect(linePerFeature.layers.isEmpty
                && linePerFeature.warnings.contains { $0.path == "layers[0].paint.line-pattern" && $0.message.contains("skipped") })
        // A line-gradient is read on any line layer, and drawn on the route's: elsewhere a warning.
        let gradient = ##"["interpolate", ["linear"], ["line-progress"], 0, "#ff0000", 1, "#0000ff"]"##
        let onTiles = try Self.loadLayer("""
            {"id": "graded", "type": "line", "source": "omt", "source-layer": "transportation", "paint": {"line-gradient": \(gradient)}}
            """)
        #expect(onTiles.layers.count == 1
                && onTiles.warnings.contains { $0.path == "layers[0].paint.line-gradient" && $0.message.contains("line-color") })
        let progress = try #require(onTiles.layers.first?.paint.line?.lineGradient)
        let half = VectorTileFeature(type: .lineString, properties: [LinePaint.lineProgressKey: .double(0.5)], geometry: [])
        let mixed = progress.evaluate(zoom: 14, feature: half)
        #expect(abs(mixed.r - 0.5) < 0.01 && abs(mixed.b - 0.5) < 0.01 && mixed.g == 0, "\(mixed)")
        let lineUnpatterned = try Self.loadLayer("""
            {"id": "plain", "type": "line", "source": "omt", "source-layer": "transportation", "paint": {"line-pattern": null}}
            """)
        #expect(lineUnpatterned.layers.first?.paint.line?.linePattern == nil)
        let unpatterned = try Self.loadLayer("""
            {"id": "plain", "type": "fill", "source": "omt", "source-layer": "water", "paint": {"fill-pattern": null, "fill-color": "rgb(0, 0, 255)"}}
            """)
        #expect(unpatterned.layers.map(\.id) == ["plain"])
    }

    @Test func paintValuesEvaluate() throws {
        let style = try Self.load(Self.openMapTilesStyle)
        let background = try #require(style.layer(withID: "background")?.paint.background)
        #expect(background.backgroundColor.isConstant)
        #expect(background.backgroundColor.evaluate(zoom: 0) == Color(css: "#f2efe9"))
        #expect(background.backgroundOpacity.evaluate(zoom: 0) == 1)

        let landuse = try #require(style.layer(withID: "landuse")?.paint.fill)
        let residential = VectorTileFeature(type: .polygon, properties: ["class": .string("residential")], geometry: [])
        #expect(landuse.fillColor.dependsOnFeature && !landuse.fillColor.dependsOnZoom)
        #expect(landuse.fillColor.evaluate(zoom: 12, feature: residential) == Color(css: "#ece7e4"))
        #expect(landuse.fillOpacity.dependsOnZoom)
        #expect(abs(landuse.fillOpacity.evaluate(zoom: 12) - 0.7) < 1e-12)

        let water = try #require(style.layer(withID: "water")?.paint.fill)
        #expect(water.fillOutlineColor?.evaluate(zoom: 0) == Color(css: "#8fa8d8"))

        let building = try #require(style.layer(withID: "building"))
        let extrusion = try #require(building.paint.fillExtrusion)
        let tall = VectorTileFeature(type: .polygon, properties: ["render_height": .int(30)], geometry: [])
        #expect(extrusion.fillExtrusionHeight.evaluate(zoom: 15, feature: tall) == 30)
        // A building without render_height gets the default height, 0.
        #expect(extrusion.fillExtrusionHeight.evaluate(zoom: 15, feature: Self.minor) == 0)
        #expect(abs(extrusion.fillExtrusionOpacity.evaluate(zoom: 14) - 0.4) < 1e-12)
        #expect(!building.isVisible(atZoom: 12.9) && building.isVisible(atZoom: 13) && building.isVisible(atZoom: 23.9))

        let minor = try #require(style.layer(withID: "road-minor"))
        let minorPaint = try #require(minor.paint.line)
        // Python: 0.5 + 11.5 * (1.5**3 - 1) / (1.5**6 - 1) = 3.1285714285714286.
        #expect(abs(minorPaint.lineWidth.evaluate(zoom: 15) - 3.1285714285714286) < 1e-12)
        #expect(minor.layout.line?.lineCap.evaluate(zoom: 0) == .round)
        #expect(minor.matches(Self.minor, zoom: 14) && !minor.matches(Self.primary, zoom: 14))

        let primary = try #require(style.layer(withID: "road-primary"))
        #expect(primary.matches(Self.primary, zoom: 14) && !primary.matches(Self.minor, zoom: 14))
        #expect(primary.paint.line?.lineColor.evaluate(zoom: 13) == Color(css: "#f8d49b"))
        #expect(primary.paint.line?.lineColor.evaluate(zoom: 14) == Color(css: "#fcd27b"))
        #expect(primary.layout.line?.lineMiterLimit.evaluate(zoom: 0) == 2)

        let rail = try #require(style.layer(withID: "rail")?.paint.line)
        #expect(rail.lineDasharray?.evaluate(zoom: 0) == [3, 3])
        #expect(rail.lineWidth.evaluate(zoom: 0) == 1.5)
    }

    @Test func symbolValuesEvaluate() throws {
        let style = try Self.load(Self.openMapTilesStyle)
        let roadLabel = try #require(style.layer(withID: "road-label"))
        let layout = try #require(roadLabel.layout.symbol)
        let street = VectorTileFeature(type: .lineString, properties: ["name:latin": .string("Aleksanterinkatu")], geometry: [])
        #expect(layout.textField.dependsOnFeature)
        #expect(layout.textField.evaluate(zoom: 15, feature: street) == "Aleksanterinkatu")
        #expect(layout.textField.evaluate(zoom: 15, feature: Self.minor) == "")
        #expect(layout.textFont.evaluate(zoom: 0) == ["Noto Sans Regular"])
        #expect(layout.textSize.evaluate(zoom: 15.5) == 13.5)
        #expect(layout.symbolPlacement.evaluate(zoom: 0) == .line)
        #expect(layout.textTransform.evaluate(zoom: 0) == .uppercase)
        #expect(layout.symbolSpacing.evaluate(zoom: 0) == 300)
        let paint = try #require(roadLabel.paint.symbol)
        #expect(paint.textColor.evaluate(zoom: 0) == Color(css: "#444444"))
        #expect(paint.textHaloColor.evaluate(zoom: 0) == Color(r: 1, g: 1, b: 1, a: 0.8))

        let placeLabel = try #require(style.layer(withID: "place-label")?.layout.symbol)
        let kluuvi = VectorTileFeature(type: .point, properties: ["name": .string("Gloet"), "name:latin": .string("Kluuvi")], geometry: [])
        #expect(placeLabel.textField.evaluate(zoom: 14, feature: kluuvi) == "Kluuvi")
        #expect(placeLabel.textAnchor.evaluate(zoom: 0) == .top)
        #expect(placeLabel.textOffset.evaluate(zoom: 0) == [0, 0.5])
        #expect(placeLabel.textMaxWidth.evaluate(zoom: 0) == 8)
    }

    @Test func propertyDefaultsMatchMapLibre() {
        // Values from the MapLibre style specification (v8).
        let line = LinePaint(), lineLayout = LineLayout()
        #expect(line.lineColor.evaluate(zoom: 0) == .black && line.lineWidth.evaluate(zoom: 0) == 1)
        #expect(line.lineOpacity.evaluate(zoom: 0) == 1 && line.lineDasharray == nil && line.lineBlur.evaluate(zoom: 0) == 0)
        #expect(line.lineGapWidth.evaluate(zoom: 0) == 0 && line.lineOffset.evaluate(zoom: 0) == 0)
        #expect(lineLayout.lineCap.evaluate(zoom: 0) == .butt && lineLayout.lineJoin.evaluate(zoom: 0) == .miter)
        #expect(lineLayout.lineMiterLimit.evaluate(zoom: 0) == 2 && lineLayout.lineRoundLimit.evaluate(zoom: 0) == 1.05)
        let fill = FillPaint()
        #expect(fill.fillColor.evaluate(zoom: 0) == .black && fill.fillOpacity.evaluate(zoom: 0) == 1)
        #expect(fill.fillOutlineColor == nil && fill.fillAntialias.evaluate(zoom: 0))
        let extrusion = FillExtrusionPaint()
        #expect(extrusion.fillExtrusionHeight.evaluate(zoom: 0) == 0 && extrusion.fillExtrusionBase.evaluate(zoom: 0) == 0)
        #expect(extrusion.fillExtrusionOpacity.evaluate(zoom: 0) == 1)
        let symbol = SymbolLayout(), symbolPaint = SymbolPaint()
        #expect(symbol.textField.evaluate(zoom: 0) == "")
        #expect(symbol.textFont.evaluate(zoom: 0) == ["Open Sans Regular", "Arial Unicode MS Regular"])
        #expect(symbol.textSize.evaluate(zoom: 0) == 16 && symbol.textMaxAngle.evaluate(zoom: 0) == 45)
        #expect(symbol.textMaxWidth.evaluate(zoom: 0) == 10 && symbol.textLineHeight.evaluate(zoom: 0) == 1.2)
        #expect(symbol.textPadding.evaluate(zoom: 0) == 2 && symbol.textLetterSpacing.evaluate(zoom: 0) == 0)
        #expect(symbol.textOffset.evaluate(zoom: 0) == [0, 0] && symbol.textAnchor.evaluate(zoom: 0) == .center)
        #expect(symbol.textTransform.evaluate(zoom: 0) == .none && !symbol.textAllowOverlap.evaluate(zoom: 0))
        #expect(!symbol.textIgnorePlacement.evaluate(zoom: 0) && !symbol.textOptional.evaluate(zoom: 0))
        #expect(symbol.symbolPlacement.evaluate(zoom: 0) == .point && symbol.symbolSpacing.evaluate(zoom: 0) == 250)
        #expect(symbol.symbolSortKey == nil && !symbol.symbolAvoidEdges.evaluate(zoom: 0))
        #expect(symbolPaint.textHaloColor.evaluate(zoom: 0) == .transparent && symbolPaint.textHaloWidth.evaluate(zoom: 0) == 0)
        #expect(symbolPaint.textOpacity.evaluate(zoom: 0) == 1 && symbolPaint.textColor.evaluate(zoom: 0) == .black)
        let background = BackgroundPaint()
        #expect(background.backgroundColor.evaluate(zoom: 0) == .black && background.backgroundOpacity.evaluate(zoom: 0) == 1)
        let layer = StyleLayer(id: "x", type: .line, source: "s")
        #expect(layer.minZoom == 0 && layer.maxZoom == 24 && layer.visibility == .visible)
        #expect(layer.isVisible(atZoom: 0) && !layer.isVisible(atZoom: 24))
    }

    @Test func visibilityAndZoomRange() throws {
        let style = try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "minzoom": 5, "maxzoom": 10, "layout": {"visibility": "none"}}"#)
        let layer = try #require(style.layers.first)
        #expect(layer.visibility == .none && !layer.isVisible(atZoom: 7))
        var visible = layer
        visible.visibility = .visible
        #expect(!visible.isVisible(atZoom: 4.99) && visible.isVisible(atZoom: 5) && !visible.isVisible(atZoom: 10))
    }

    // MARK: Warnings

    @Test func unknownLayerTypesAreSkippedWithOneWarning() throws {
        let style = try Self.load(#"""
        {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}},
         "layers": [{"id": "dots", "type": "heatmap", "source": "omt"},
                    {"id": "roads", "type": "line", "source": "omt"}]}
        """#)
        #expect(style.layers.map(\.id) == ["roads"])
        #expect(style.warnings.count == 1)
        let warning = try #require(style.warnings.first)
        #expect(warning.path == "layers[0].type")
        #expect(warning.message.contains("\"dots\"") && warning.message.contains("\"heatmap\""))
    }

    @Test func spritesIconsAndCirclesAreRead() throws {
        let style = try Self.load(#"""
        {"version": 8, "sprite": [{"id": "default", "url": "a"}, {"id": "b", "url": "b"}, {"id": "b", "url": "c"}],
         "sources": {"omt": {"type": "vector", "url": "x"}},
         "layers": [{"id": "dots", "type": "circle", "source": "omt",
                     "paint": {"circle-radius": ["interpolate", ["linear"], ["zoom"], 10, 2, 14, 8],
                               "circle-stroke-width": 2, "circle-pitch-scale": "viewport"}},
                    {"id": "pois", "type": "symbol", "source": "omt",
                     "layout": {"icon-image": "{class}_11", "icon-text-fit": "both", "icon-text-fit-padding": [1, 2, 3, 4],
                                "icon-anchor": "bottom", "icon-rotation-alignment": "map", "text-rotation-alignment": "viewport"},
                     "paint": {"icon-color": "#ff0000", "icon-halo-width": 1.5}}]}
        """#)
        #expect(style.sprites == [SpriteReference(id: "default", url: "a"), SpriteReference(id: "b", url: "b")])
        #expect(style.warnings.count == 1) // the second sprite "b"
        #expect(SpriteReference(id: "b", url: "b").imageName("x") == "b:x")
        let circle = try #require(style.layers.first?.paint.circle)
        #expect(circle.circleRadius.evaluate(zoom: 12) == 5)
        #expect(circle.circleStrokeWidth.evaluate(zoom: 12) == 2)
        #expect(circle.circlePitchScale.evaluate(zoom: 12) == .viewport)
        let layout = try #require(style.layers.last?.layout.symbol)
        let feature = VectorTileFeature(id: 1, type: .point, properties: ["class": .string("fuel")], geometry: [])
        #expect(layout.iconImage?.evaluate(zoom: 14, feature: feature) == "fuel_11")
        #expect(layout.iconTextFit.evaluate(zoom: 14) == .both)
        #expect(layout.iconTextFitPadding.evaluate(zoom: 14) == [1, 2, 3, 4])
        #expect(layout.iconAnchor.evaluate(zoom: 14) == .bottom)
        #expect(layout.iconRotationAlignment.evaluate(zoom: 14) == .map)
        #expect(layout.textRotationAlignment.evaluate(zoom: 14) == .viewport)
        let paint = try #require(style.layers.last?.paint.symbol)
        #expect(paint.iconColor.evaluate(zoom: 14) == Color(r: 1, g: 0, b: 0, a: 1))
        #expect(paint.iconHaloWidth.evaluate(zoom: 14) == 1.5)
    }

    /// A constant image expression is not folded at load: the sprite decides when drawing.
    @Test func imageExpressionsWaitForTheSprite() throws {
        let style = try Self.load(#"""
        {"version": 8, "sources": {"s": {"type": "vector", "url": "x"}},
         "layers": [{"id": "a", "type": "symbol", "source": "s",
                     "layout": {"icon-image": ["coalesce", ["image", "a"], ["image", "b"]]}}]}
        """#)
        let property = try #require(style.layers.first?.layout.symbol?.iconImage)
        #expect(property.evaluate(zoom: 14, feature: nil, availableImages: ["b"]) == "b")
        #expect(property.evaluate(zoom: 14, feature: nil, availableImages: ["a", "b"]) == "a")
        // An image expression is one image for the whole layer: a pattern written that way draws.
        let pattern = try Self.loadLayer("""
            {"id": "p", "type": "fill", "source": "omt", "source-layer": "water", "paint": {"fill-pattern": ["image", "wave"]}}
            """)
        #expect(pattern.layers.first?.paint.fill?.fillPattern?.evaluate(zoom: 14, feature: nil, availableImages: ["wave"]) == "wave")
    }

    @Test func spriteOfTheWrongShapeIsATypedError() throws {
        #expect(throws: StyleError.self) {
            try Self.load(#"{"version": 8, "sprite": 3, "sources": {}, "layers": []}"#)
        }
        #expect(throws: StyleError.missingProperty(path: "sprite[0].url")) {
            try Self.load(#"{"version": 8, "sprite": [{"id": "a"}], "sources": {}, "layers": []}"#)
        }
    }

    @Test func variableAnchorsRadialOffsetAndJustifyAreRead() throws {
        let style = try Self.loadLayer(#"""
        {"id": "places", "type": "symbol", "source": "omt",
         "layout": {"text-field": "{name}", "text-variable-anchor": ["top", "bottom", "nowhere", "left"],
                    "text-radial-offset": 0.8, "text-justify": "auto"}}
        """#)
        #expect(style.warnings.isEmpty, "\(style.warnings)")
        let layout = try #require(style.layers.first?.layout.symbol)
        #expect(layout.textVariableAnchor?.evaluate(zoom: 10, feature: nil) == ["top", "bottom", "nowhere", "left"])
        #expect(layout.textRadialOffset.evaluate(zoom: 10) == 0.8)
        #expect(layout.textJustify.evaluate(zoom: 10) == .auto)
    }

    @Test func unknownPropertiesWarnAndTheRestDraws() throws {
        let style = try Self.loadLayer(#"""
        {"id": "roads", "type": "line", "source": "omt",
         "layout": {"line-sort-key": 3, "line-cap": "square"},
         "paint": {"line-width": 4, "line-emissive-strength": 1, "line-color": ["frobnicate", 1], "line-opacity": 0.5}}
        """#)
        let layer = try #require(style.layers.first)
        let paint = try #require(layer.paint.line)
        #expect(paint.lineWidth.evaluate(zoom: 0) == 4)
        #expect(paint.lineOpacity.evaluate(zoom: 0) == 0.5)
        #expect(paint.lineColor.evaluate(zoom: 0) == .black)
        #expect(layer.layout.line?.lineCap.evaluate(zoom: 0) == .square)
        #expect(style.warnings.map(\.path) == ["layers[0].layout.line-sort-key", "layers[0].paint.line-emissive-strength",
                                               "layers[0].paint.line-color"])
        #expect(style.warnings[1].message.contains("line-emissive-strength"))
        #expect(style.warnings[2].message.contains("frobnicate"))
    }

    @Test func unknownFilterOperatorWarnsAndDrawsUnfiltered() throws {
        let style = try Self.loadLayer(#"{"id": "a", "type": "fill", "source": "omt", "filter": ["within", {"type": "Polygon"}]}"#)
        #expect(style.layers.first?.filter == nil)
        #expect(style.warnings.map(\.path) == ["layers[0].filter"])
    }

    @Test func layersOnMissingSourcesAndDuplicatesAreSkipped() throws {
        let style = try Self.load(#"""
        {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}, "odd": {"type": "teleport"}},
         "layers": [{"id": "a", "type": "line", "source": "nowhere"},
                    {"id": "b", "type": "line", "source": "odd"},
                    {"id": "c", "type": "line", "source": "omt"},
                    {"id": "c", "type": "fill", "source": "omt"}]}
        """#)
        #expect(style.layers.map(\.id) == ["c"])
        #expect(style.layers.first?.type == .line)
        #expect(style.warnings.map(\.path) == ["sources.odd.type", "layers[0].source", "layers[1].source", "layers[3]"])
    }

    @Test func dataDrivenWrongTypeFallsBackToDefault() throws {
        let style = try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "paint": {"line-width": ["get", "class"]}}"#)
        let width = try #require(style.layers.first?.paint.line?.lineWidth)
        #expect(width.evaluate(zoom: 0, feature: Self.primary) == 1)
        let wide = VectorTileFeature(type: .lineString, properties: ["class": .double(3)], geometry: [])
        #expect(width.evaluate(zoom: 0, feature: wide) == 3)
    }

    // MARK: Errors

    @Test func wrongTypesNameTheirPath() {
        Self.expectError(.wrongType(path: "layers", expected: "an array of layers", found: "object"),
                         #"{"version": 8, "sources": {}, "layers": {}}"#)
        Self.expectError(.wrongType(path: "", expected: "a JSON object", found: "array"), "[]")
        Self.expectError(.missingProperty(path: "layers"), #"{"version": 8, "sources": {}}"#)
        Self.expectError(.missingProperty(path: "version"), #"{"sources": {}, "layers": []}"#)
        Self.expectError(.unsupportedVersion(found: "7"), #"{"version": 7, "sources": {}, "layers": []}"#)
        Self.expectError(.missingProperty(path: "layers[0].id"), #"{"version": 8, "sources": {}, "layers": [{"type": "background"}]}"#)
        Self.expectError(.missingProperty(path: "layers[0].source"), #"{"version": 8, "sources": {}, "layers": [{"id": "a", "type": "fill"}]}"#)
        Self.expectError(.wrongType(path: "sources.omt.tiles[1]", expected: "a URL string", found: "number"),
                         #"{"version": 8, "sources": {"omt": {"type": "vector", "tiles": ["a", 3]}}, "layers": []}"#)
        Self.expectError(.invalidValue(path: "layers[0].minzoom", reason: "zoom levels must lie in 0...24, not 30"),
                         #"{"version": 8, "sources": {}, "layers": [{"id": "a", "type": "background", "minzoom": 30}]}"#)
    }

    @Test func invalidValuesNameTheirPath() throws {
        #expect(throws: StyleError.wrongType(path: "layers[0].paint.line-width", expected: "a number", found: "string")) {
            try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "paint": {"line-width": "wide"}}"#)
        }
        #expect(throws: StyleError.wrongType(path: "layers[0].paint.line-width", expected: "a number", found: "array")) {
            try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "paint": {"line-width": [1, 2]}}"#)
        }
        #expect(throws: StyleError.self) {
            try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "layout": {"line-cap": "pointy"}}"#)
        }
        #expect(throws: StyleError.self) {
            try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "paint": {"line-color": "not-a-colour"}}"#)
        }
        #expect(throws: StyleError.wrongType(path: "layers[0].paint.line-width", expected: "a number", found: "string")) {
            try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "paint": {"line-width": ["literal", "wide"]}}"#)
        }
        do {
            _ = try Self.loadLayer(#"{"id": "a", "type": "line", "source": "omt", "paint": {"line-width": ["interpolate", ["linear"], ["zoom"], 10, 1, 5]}}"#)
            Issue.record("a malformed interpolate loaded")
        } catch {
            guard case .invalidValue(let path, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(path == "layers[0].paint.line-width")
        }
        #expect(throws: StyleError.invalidJSON(line: 1, column: 14, reason: "expected ',' or '}' in an object, found ']'")) {
            try Self.load(#"{"version": 8]"#)
        }
    }

    @Test func errorDescriptionsSayWhatToDo() {
        let error = StyleError.wrongType(path: "layers[3].paint.line-width", expected: "a number", found: "string")
        #expect(error.description == "The value at layers[3].paint.line-width should be a number but is a string. Change it to a number as the MapLibre style specification describes.")
        #expect(StyleError.missingProperty(path: "layers").description.contains("Add it"))
        #expect(StyleError.unsupportedVersion(found: "7").description.contains("\"version\": 8"))
        #expect(StyleWarning(path: "layers[0].type", message: "skipped").description == "layers[0].type: skipped")
    }

    @Test func loadsFromAFile() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-style-\(UUID().uuidString).json")
        try Data(Self.openMapTilesStyle.utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        #expect(try Style(contentsOf: url).layers.count == 9)
        let missing = URL(fileURLWithPath: "/nonexistent/carwindow/style.json")
        #expect {
            try Style(contentsOf: missing)
        } throws: { error in
            guard let error = error as? StyleError, case .unreadable(let path, _) = error else { return false }
            return path == missing.path
        }
    }

    // MARK: Fuzzing

    /// Fuzzing produces thousands of warnings; they are counted, not printed.
    static let silent = Logger(label: "carwindow.style.fuzz") { _ in SwiftLogNoOpLogHandler() }

    @Test func byteMutationsNeverCrash() {
        let original = Array(Self.openMapTilesStyle.utf8)
        let interesting = Array("{}[]\",:0-.e\\u".utf8) + [0x00, 0xFF, 0xC3, 0x7F]
        var outcomes = (loaded: 0, failed: 0)
        for seed in 0..<4000 {
            var random = SplitMix64(seed: UInt64(seed))
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes[position] = interesting.randomElement(using: &random) ?? 0
                case 2: bytes.remove(at: position)
                case 3: bytes.insert(interesting.randomElement(using: &random) ?? 0, at: position)
                default: bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...40, using: &random)))
                }
                if bytes.isEmpty { bytes = [0x7B] }
            }
            do {
                _ = try Style(data: Data(bytes), logger: Self.silent)
                outcomes.loaded += 1
            } catch {
                outcomes.failed += 1
            }
        }
        #expect(outcomes.loaded + outcomes.failed == 4000)
        // Both paths must be exercised for the fuzzing to mean anything.
        #expect(outcomes.loaded > 50 && outcomes.failed > 1000, "\(outcomes)")
    }

    /// Replaces values deep inside the parsed style with values of other types, reaching the
    /// model and expression code that byte mutations mostly stop short of.
    @Test func structuralMutationsNeverCrash() throws {
        let original = try JSONValue(parsing: Array(Self.openMapTilesStyle.utf8))
        let replacements: [JSONValue] = [
            .null, .bool(true), .number(-1), .number(1e300), .number(0.5), .string(""), .string("{name}"),
            .string("red"), .array([]), .array([.string("get")]), .array([.string("zoom")]), .object(JSONObject()),
            .array([.string("interpolate"), .array([.string("exponential"), .number(0)]), .array([.string("zoom")]), .number(1), .number(2)]),
            .array([.string("step"), .array([.string("get"), .string("class")]), .number(1), .number(2), .number(3)]),
            .array([.string("match"), .number(1), .array([]), .number(1), .number(2)]),
            .array([.string("=="), .string("class")]),
            .object(JSONObject([.init(key: "stops", value: .array([.array([.number(1)])]))])),
            .object(JSONObject([.init(key: "property", value: .string("class")), .init(key: "type", value: .string("identity"))])),
        ]
        var outcomes = (loaded: 0, failed: 0)
        for seed in 0..<3000 {
            var random = SplitMix64(seed: UInt64(seed) &* 7919)
            var document = original
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                document = Self.mutate(document, depth: 0, using: &random, replacements: replacements)
            }
            do {
                var loader = StyleLoader(reader: PropertyReader(logger: Self.silent))
                let style = try loader.load(document)
                // Evaluate everything that loaded, with and without a feature.
                for layer in style.layers {
                    _ = layer.matches(Self.primary, zoom: 14)
                    if let line = layer.paint.line {
                        _ = line.lineWidth.evaluate(zoom: 15, feature: Self.primary)
                        _ = line.lineColor.evaluate(zoom: 3)
                    }
                    if let symbol = layer.layout.symbol {
                        _ = symbol.textField.evaluate(zoom: 14, feature: Self.minor)
                        _ = symbol.textSize.evaluate(zoom: 14)
                    }
                }
                outcomes.loaded += 1
            } catch {
                outcomes.failed += 1
            }
        }
        #expect(outcomes.loaded > 100 && outcomes.failed > 100, "\(outcomes)")
    }

    static func mutate(_ value: JSONValue, depth: Int, using random: inout SplitMix64,
                       replacements: [JSONValue]) -> JSONValue {
        let stopHere = Int.random(in: 0..<6, using: &random) == 0 || depth > 8
        switch value {
        case .array(var elements) where !elements.isEmpty && !stopHere:
            let index = Int.random(in: 0..<elements.count, using: &random)
            elements[index] = mutate(elements[index], depth: depth + 1, using: &random, replacements: replacements)
            return .array(elements)
        case .object(var object) where !object.members.isEmpty && !stopHere:
            let index = Int.random(in: 0..<object.members.count, using: &random)
            object.members[index].value = mutate(object.members[index].value, depth: depth + 1, using: &random,
                                                 replacements: replacements)
            return .object(object)
        default:
            return replacements.randomElement(using: &random) ?? .null
        }
    }
}
