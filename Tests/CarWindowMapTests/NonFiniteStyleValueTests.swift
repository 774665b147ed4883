import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// Arithmetic that is not finite (`["/", 1, 0]`) in a numeric property is a warning and the
/// property's default, as MapLibre does, whether the expression is constant, zoom-dependent or
/// feature-dependent; and nothing drawn from such a style traps or carries NaN or infinity.
@Suite("Non-finite style values")
struct NonFiniteStyleValueTests {
    /// Expressions whose value is not finite, or not finite as the renderer's 32-bit floats.
    static let nonFinite = [#"["/", 1, 0]"#, #"["%", 5, 0]"#, #"["^", 10, 400]"#, #"["-", ["/", 1, 0], ["/", 1, 0]]"#,
                            #"["*", 1e200, 1e200]"#, #"["*", 1e30, 1e30]"#, #"["sqrt", -1]"#]

    /// Every numeric property: (layer type, "paint" or "layout", key, default).
    static let numericProperties: [(type: String, group: String, key: String, defaultValue: Double)] = [
        ("background", "paint", "background-opacity", 1),
        ("fill", "paint", "fill-opacity", 1),
        ("line", "paint", "line-width", 1), ("line", "paint", "line-opacity", 1), ("line", "paint", "line-blur", 0),
        ("line", "paint", "line-gap-width", 0), ("line", "paint", "line-offset", 0),
        ("line", "layout", "line-miter-limit", 2), ("line", "layout", "line-round-limit", 1.05),
        ("fill-extrusion", "paint", "fill-extrusion-height", 0), ("fill-extrusion", "paint", "fill-extrusion-base", 0),
        ("fill-extrusion", "paint", "fill-extrusion-opacity", 1),
        ("symbol", "paint", "text-halo-width", 0), ("symbol", "paint", "text-halo-blur", 0),
        ("symbol", "paint", "text-opacity", 1),
        ("symbol", "layout", "text-size", 16), ("symbol", "layout", "text-max-angle", 45),
        ("symbol", "layout", "text-max-width", 10), ("symbol", "layout", "text-letter-spacing", 0),
        ("symbol", "layout", "text-line-height", 1.2), ("symbol", "layout", "text-padding", 2),
        ("symbol", "layout", "symbol-spacing", 250), ("symbol", "layout", "symbol-sort-key", 0),
    ]

    static func style(type: String, group: String, key: String, value: String) throws(StyleError) -> Style {
        let source = type == "background" ? "" : #", "source": "omt", "source-layer": "roads""#
        return try Style(data: Data(#"""
            {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}},
             "layers": [{"id": "a", "type": "\#(type)"\#(source), "\#(group)": {"\#(key)": \#(value)}}]}
            """#.utf8))
    }

    /// The property `key` of the style's only layer, wherever it lives.
    static func property(_ style: Style, _ key: String) throws -> StyleProperty<Double> {
        let layer = try #require(style.layers.first)
        let properties: [String: StyleProperty<Double>?] = [
            "background-opacity": layer.paint.background?.backgroundOpacity,
            "fill-opacity": layer.paint.fill?.fillOpacity,
            "line-width": layer.paint.line?.lineWidth, "line-opacity": layer.paint.line?.lineOpacity,
            "line-blur": layer.paint.line?.lineBlur, "line-gap-width": layer.paint.line?.lineGapWidth,
            "line-offset": layer.paint.line?.lineOffset,
            "line-miter-limit": layer.layout.line?.lineMiterLimit, "line-round-limit": layer.layout.line?.lineRoundLimit,
            "fill-extrusion-height": layer.paint.fillExtrusion?.fillExtrusionHeight,
            "fill-extrusion-base": layer.paint.fillExtrusion?.fillExtrusionBase,
            "fill-extrusion-opacity": layer.paint.fillExtrusion?.fillExtrusionOpacity,
            "text-halo-width": layer.paint.symbol?.textHaloWidth, "text-halo-blur": layer.paint.symbol?.textHaloBlur,
            "text-opacity": layer.paint.symbol?.textOpacity,
            "text-size": layer.layout.symbol?.textSize, "text-max-angle": layer.layout.symbol?.textMaxAngle,
            "text-max-width": layer.layout.symbol?.textMaxWidth,
            "text-letter-spacing": layer.layout.symbol?.textLetterSpacing,
            "text-line-height": layer.layout.symbol?.textLineHeight, "text-padding": layer.layout.symbol?.textPadding,
            "symbol-spacing": layer.layout.symbol?.symbolSpacing, "symbol-sort-key": layer.layout.symbol?.symbolSortKey,
        ]
        return try #require(properties[key] ?? nil, "no property \(key)")
    }

    @Test func constantNonFiniteValuesWarnAndUseTheDefault() throws {
        for (type, group, key, defaultValue) in Self.numericProperties {
            for expression in Self.nonFinite {
                let style = try Self.style(type: type, group: group, key: key, value: expression)
                let property = try Self.property(style, key)
                #expect(property.isConstant, "\(key): \(expression)")
                #expect(property.evaluate(zoom: 12) == defaultValue, "\(key): \(expression)")
                #expect(style.warnings.count == 1, "\(key): \(expression)")
                let warning = try #require(style.warnings.first)
                #expect(warning.path == "layers[0].\(group).\(key)")
                #expect(warning.message.contains("not a finite number") && warning.message.contains("default"),
                        "\(warning.message)")
            }
        }
    }

    @Test func zoomDependentNonFiniteValuesUseTheDefault() throws {
        for (type, group, key, defaultValue) in Self.numericProperties {
            let style = try Self.style(type: type, group: group, key: key, value: #"["/", ["zoom"], 0]"#)
            let property = try Self.property(style, key)
            #expect(property.dependsOnZoom)
            #expect(property.evaluate(zoom: 12) == defaultValue, "\(key)")
            #expect(property.evaluate(zoom: 0) == defaultValue, "\(key): 0/0 is NaN")
        }
    }

    /// One feature's NaN or infinity falls back to the default for that feature only.
    @Test func featureDependentNonFiniteValuesUseTheDefaultForThatFeature() throws {
        for (type, group, key, defaultValue) in Self.numericProperties where type != "background" {
            let style = try Self.style(type: type, group: group, key: key, value: #"["/", 2, ["get", "divisor"]]"#)
            let property = try Self.property(style, key)
            #expect(property.dependsOnFeature)
            func feature(_ divisor: Double) -> VectorTileFeature {
                VectorTileFeature(type: .lineString, properties: ["divisor": .double(divisor)], geometry: [])
            }
            #expect(property.evaluate(zoom: 12, feature: feature(0)) == defaultValue, "\(key): 2/0")
            #expect(property.evaluate(zoom: 12, feature: feature(.nan)) == defaultValue, "\(key): 2/NaN")
            #expect(property.evaluate(zoom: 12, feature: feature(1e-300)) == defaultValue, "\(key): 2e300 is no Float")
            #expect(property.evaluate(zoom: 12, feature: feature(4)) == 0.5, "\(key): 2/4")
        }
    }

    /// Number arrays (text-offset, line-dasharray) are checked element by element, and the error
    /// for a wrong element says which type it has, not "an array".
    @Test func numberArraysNameTheirWrongElement() throws {
        #expect(throws: StyleError.wrongType(path: "layers[0].layout.text-offset", expected: "an array of numbers",
                                             found: "array containing a string")) {
            try Self.style(type: "symbol", group: "layout", key: "text-offset", value: #"["literal", [1, "a"]]"#)
        }
        #expect(throws: StyleError.wrongType(path: "layers[0].paint.line-width", expected: "a number", found: "string")) {
            try Self.style(type: "line", group: "paint", key: "line-width", value: #"["concat", "a", "b"]"#)
        }
    }

    /// A feature-dependent width and height that are infinite for one feature lay out with finite
    /// numbers only.
    @Test func layoutsCarryNoNonFiniteNumbers() throws {
        let style = try Style(data: Data(#"""
            {"version": 8, "sources": {"omt": {"type": "vector", "url": "x"}}, "layers": [
              {"id": "roads", "type": "line", "source": "omt", "source-layer": "shapes",
               "paint": {"line-width": ["/", 4, ["get", "divisor"]], "line-opacity": ["%", 1, ["get", "divisor"]]}},
              {"id": "houses", "type": "fill-extrusion", "source": "omt", "source-layer": "shapes",
               "paint": {"fill-extrusion-height": ["/", 10, ["get", "divisor"]]}}]}
            """#.utf8))
        let square: [TilePoint] = [TilePoint(x: 0, y: 0), TilePoint(x: 100, y: 0), TilePoint(x: 100, y: 100),
                                   TilePoint(x: 0, y: 100)]
        let features = [0.0, 2.0, 1e-300].flatMap { divisor in
            [VectorTileFeature(type: .lineString, properties: ["divisor": .double(divisor)], geometry: [square]),
             VectorTileFeature(type: .polygon, properties: ["divisor": .double(divisor)], geometry: [square])]
        }
        let fonts = try FontLibrary(directory: TestPaths.fonts)
        let builder = TileLayoutBuilder(style: style, glyphs: GlyphAtlas(library: fonts), fonts: fonts, sourceMaxZoom: 14)
        let layout = builder.layout(TileID(z: 14, x: 0, y: 0),
                                    VectorTile(layers: [VectorTileLayer(name: "shapes", features: features)]))
        guard case .line(let line)? = layout.buckets[0], case .extrusion(let extrusion)? = layout.buckets[1] else {
            Issue.record("both layers should have buckets")
            return
        }
        let widths = try #require(line.widths)
        #expect(widths.allSatisfy { $0.isFinite })
        #expect(Set(widths) == [1, 2], "the default 1 for 4/0 and 4/1e-300, and 4/2")
        #expect(extrusion.heights.allSatisfy { $0.x.isFinite && $0.y.isFinite })
        #expect(Set(extrusion.heights.map(\.y)) == [0, 5], "the default 0 for 10/0 and 10/1e-300, and 10/2")
    }

    /// Labels sized beyond any screen are placed or refused without trapping on the conversion
    /// of their boxes to grid cells.
    @Test func collisionGridTakesBoxesOfAnySize() {
        var grid = CollisionGrid()
        grid.reset(width: 800, height: 480)
        let huge: Float = 1e30
        for box in [SIMD4<Float>(-huge, -huge, huge, huge), SIMD4(10, 10, huge, 20), SIMD4(-.infinity, 0, .infinity, 1),
                    SIMD4(.nan, .nan, .nan, .nan), SIMD4(1e20, 1e20, 1e21, 1e21)] {
            _ = grid.collides(box)
            grid.insert(box)
        }
        #expect(grid.collides(SIMD4(100, 100, 110, 110)), "the screen-sized box covers every cell")
        var empty = CollisionGrid()
        empty.reset(width: 800, height: 480)
        empty.insert(SIMD4(1e20, 1e20, 1e21, 1e21))
        #expect(!empty.collides(SIMD4(100, 100, 110, 110)), "a box off the screen takes no cell")
    }
}
