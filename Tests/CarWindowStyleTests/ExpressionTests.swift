import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowTestSupport

@Suite("Style expressions")
struct ExpressionTests {
    static let road = VectorTileFeature(
        id: 42, type: .lineString,
        properties: ["class": .string("primary"), "name:latin": .string("Mannerheimintie"),
                     "lanes": .uint(4), "width": .double(7.5), "oneway": .int(1), "tunnel": .bool(false)],
        geometry: [])
    static let building = VectorTileFeature(
        id: nil, type: .polygon, properties: ["render_height": .float(24), "class": .string("commercial")],
        geometry: [])
    static let place = VectorTileFeature(
        id: 7, type: .point, properties: ["class": .string("suburb"), "name:latin": .string("Kluuvi")], geometry: [])

    private func json(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    private func evaluate(_ text: String, zoom: Double = 0, feature: VectorTileFeature? = road) throws -> StyleValue {
        try Expression(json(text)).evaluate(EvaluationContext(zoom: zoom, feature: feature))
    }

    /// `image` gives its name, or null where the sprite lacks it, so `coalesce` reaches the
    /// first image that exists; without a sprite to ask, every name counts as present.
    @Test func imageFallsThroughToTheFirstImageTheSpriteHas() throws {
        let expression = try Expression(json(#"["coalesce", ["image", ["concat", ["get", "class"], "_11"]], ["image", "dot"]]"#))
        #expect(expression.isFeatureDependent) // through ["get", "class"]
        func image(_ available: Set<String>?) -> StyleValue {
            expression.evaluate(EvaluationContext(zoom: 14, feature: Self.road, availableImages: available))
        }
        #expect(image(["primary_11", "dot"]) == .string("primary_11"))
        #expect(image(["dot"]) == .string("dot"))
        #expect(image([]) == .null)
        #expect(image(nil) == .string("primary_11"))
    }

    private func filter(_ text: String, _ feature: VectorTileFeature, zoom: Double = 0) throws -> Bool {
        try Expression.filter(json(text)).matches(EvaluationContext(zoom: zoom, feature: feature))
    }

    private func number(_ value: StyleValue) -> Double? {
        if case .number(let n) = value { return n }
        return nil
    }

    // MARK: Lookups

    @Test func featureLookups() throws {
        #expect(try evaluate(#"["get", "class"]"#) == .string("primary"))
        #expect(try evaluate(#"["get", "lanes"]"#) == .number(4))
        #expect(try evaluate(#"["get", "tunnel"]"#) == .bool(false))
        #expect(try evaluate(#"["get", "missing"]"#) == .null)
        #expect(try evaluate(#"["get", ["concat", "na", "me:latin"]]"#) == .string("Mannerheimintie"))
        #expect(try evaluate(#"["has", "class"]"#) == .bool(true))
        #expect(try evaluate(#"["has", "missing"]"#) == .bool(false))
        #expect(try evaluate(#"["id"]"#) == .number(42))
        #expect(try evaluate(#"["id"]"#, feature: Self.building) == .null)
        #expect(try evaluate(#"["geometry-type"]"#) == .string("LineString"))
        #expect(try evaluate(#"["geometry-type"]"#, feature: Self.building) == .string("Polygon"))
        #expect(try evaluate(#"["geometry-type"]"#, feature: Self.place) == .string("Point"))
        #expect(try evaluate(#"["zoom"]"#, zoom: 13.5) == .number(13.5))
        #expect(try evaluate(#"["literal", [1, "a", true]]"#) == .array([.number(1), .string("a"), .bool(true)]))
    }

    @Test func dependencies() throws {
        let zoomOnly = try Expression(json(#"["interpolate", ["linear"], ["zoom"], 10, 1, 14, 4]"#))
        #expect(zoomOnly.isZoomDependent && !zoomOnly.isFeatureDependent)
        let featureOnly = try Expression(json(#"["match", ["get", "class"], "primary", 3, 1]"#))
        #expect(!featureOnly.isZoomDependent && featureOnly.isFeatureDependent)
        let constant = try Expression(json(#"["+", 1, 2]"#))
        #expect(!constant.isZoomDependent && !constant.isFeatureDependent)
    }

    // MARK: Logic and comparison

    @Test func booleanLogic() throws {
        #expect(try evaluate(#"["!", false]"#) == .bool(true))
        #expect(try evaluate(#"["!", ["has", "class"]]"#) == .bool(false))
        #expect(try evaluate(#"["all", true, ["==", ["get", "class"], "primary"]]"#) == .bool(true))
        #expect(try evaluate(#"["all", true, false]"#) == .bool(false))
        #expect(try evaluate(#"["all"]"#) == .bool(true))
        #expect(try evaluate(#"["any", false, ["has", "lanes"]]"#) == .bool(true))
        #expect(try evaluate(#"["any"]"#) == .bool(false))
        // A non-boolean operand is a runtime error, which evaluates to null.
        #expect(try evaluate(#"["!", ["get", "class"]]"#) == .null)
    }

    @Test func comparisonsFollowTheSpecTyping() throws {
        #expect(try evaluate(#"["==", ["get", "class"], "primary"]"#) == .bool(true))
        #expect(try evaluate(#"["!=", ["get", "class"], "primary"]"#) == .bool(false))
        #expect(try evaluate(#"["==", ["get", "lanes"], 4]"#) == .bool(true))
        // Equality across types is false, never an error: "4" is not 4.
        #expect(try evaluate(#"["==", ["get", "lanes"], "4"]"#) == .bool(false))
        #expect(try evaluate(#"["!=", ["get", "lanes"], "4"]"#) == .bool(true))
        #expect(try evaluate(#"["==", ["get", "missing"], null]"#) == .bool(true))
        #expect(try evaluate(#"["<", ["get", "width"], 8]"#) == .bool(true))
        #expect(try evaluate(#"["<=", ["get", "lanes"], 4]"#) == .bool(true))
        #expect(try evaluate(#"[">", ["get", "lanes"], 4]"#) == .bool(false))
        #expect(try evaluate(#"[">=", ["get", "lanes"], 4]"#) == .bool(true))
        #expect(try evaluate(#"["<", "abc", "abd"]"#) == .bool(true))
        // Ordering a string against a number is a runtime error (null), so filters reject it.
        #expect(try evaluate(#"["<", ["get", "class"], 5]"#) == .null)
        #expect(try filter(#"["<", ["get", "class"], 5]"#, Self.road) == false)
        #expect(try evaluate(#"["<", ["get", "missing"], 5]"#) == .null)
    }

    @Test func inExpression() throws {
        #expect(try evaluate(#"["in", ["get", "class"], ["literal", ["primary", "secondary"]]]"#) == .bool(true))
        #expect(try evaluate(#"["in", ["get", "class"], ["literal", ["minor"]]]"#) == .bool(false))
        #expect(try evaluate(#"["in", "heim", ["get", "name:latin"]]"#) == .bool(true))
        #expect(try evaluate(#"["in", "x", ["get", "name:latin"]]"#) == .bool(false))
        #expect(try evaluate(#"["in", 4, ["literal", [1, 4]]]"#) == .bool(true))
    }

    // MARK: Branching

    @Test func matchCaseCoalesce() throws {
        let match = #"["match", ["get", "class"], ["motorway", "trunk"], 10, "primary", 8, 2]"#
        #expect(try evaluate(match) == .number(8))
        #expect(try evaluate(match, feature: Self.place) == .number(2))
        #expect(try evaluate(#"["match", ["get", "lanes"], 4, "four", "other"]"#) == .string("four"))
        // A number input never matches string labels.
        #expect(try evaluate(#"["match", ["get", "lanes"], "4", "four", "other"]"#) == .string("other"))
        let cases = #"["case", ["==", ["get", "class"], "minor"], 1, ["has", "lanes"], ["get", "lanes"], 0]"#
        #expect(try evaluate(cases) == .number(4))
        #expect(try evaluate(cases, feature: Self.place) == .number(0))
        #expect(try evaluate(#"["coalesce", ["get", "name:en"], ["get", "name:latin"], "?"]"#) == .string("Mannerheimintie"))
        #expect(try evaluate(#"["coalesce", ["get", "a"], ["get", "b"]]"#) == .null)
    }

    // MARK: Conversions and strings

    @Test func typeConversions() throws {
        #expect(try evaluate(#"["to-string", ["get", "lanes"]]"#) == .string("4"))
        #expect(try evaluate(#"["to-string", ["get", "width"]]"#) == .string("7.5"))
        #expect(try evaluate(#"["to-string", ["get", "missing"]]"#) == .string(""))
        #expect(try evaluate(#"["to-string", true]"#) == .string("true"))
        #expect(try evaluate(#"["to-string", ["to-color", "red"]]"#) == .string("rgba(255,0,0,1)"))
        #expect(try evaluate(#"["to-number", "12.5"]"#) == .number(12.5))
        #expect(try evaluate(#"["to-number", "abc", ["get", "lanes"]]"#) == .number(4))
        #expect(try evaluate(#"["to-number", true]"#) == .number(1))
        #expect(try evaluate(#"["to-number", null]"#) == .number(0))
        #expect(try evaluate(#"["to-number", "abc"]"#) == .null)
        #expect(try evaluate(#"["to-boolean", ""]"#) == .bool(false))
        #expect(try evaluate(#"["to-boolean", "x"]"#) == .bool(true))
        #expect(try evaluate(#"["to-boolean", 0]"#) == .bool(false))
        #expect(try evaluate(#"["to-boolean", ["get", "missing"]]"#) == .bool(false))
        #expect(try evaluate(##"["to-color", "#00ff00"]"##) == .color(Color(r: 0, g: 1, b: 0)))
        #expect(try evaluate(#"["to-color", ["literal", [255, 0, 0, 0.5]]]"#) == .color(Color(r: 1, g: 0, b: 0, a: 0.5)))
        #expect(try evaluate(#"["to-color", "nope", "blue"]"#) == .color(Color(r: 0, g: 0, b: 1)))
        #expect(try evaluate(#"["to-color", "nope"]"#) == .null)
        #expect(try evaluate(#"["number", ["get", "class"], 3]"#) == .number(3))
        #expect(try evaluate(#"["string", ["get", "class"]]"#) == .string("primary"))
        #expect(try evaluate(#"["boolean", ["get", "class"]]"#) == .null)
    }

    @Test func stringOperators() throws {
        #expect(try evaluate(#"["concat", ["get", "name:latin"], " ", ["get", "lanes"]]"#) == .string("Mannerheimintie 4"))
        #expect(try evaluate(#"["upcase", ["get", "name:latin"]]"#) == .string("MANNERHEIMINTIE"))
        #expect(try evaluate(#"["downcase", "Töölö"]"#) == .string("töölö"))
        #expect(try evaluate(#"["upcase", 3]"#) == .null)
        #expect(try evaluate(#"["length", "abc"]"#) == .number(3))
    }

    @Test func arithmetic() throws {
        #expect(try evaluate(#"["+", 1, 2, 3]"#) == .number(6))
        #expect(try evaluate(#"["-", 10, 4]"#) == .number(6))
        #expect(try evaluate(#"["-", 3]"#) == .number(-3))
        #expect(try evaluate(#"["*", ["get", "width"], 2]"#) == .number(15))
        #expect(try evaluate(#"["/", 7, 2]"#) == .number(3.5))
        #expect(try evaluate(#"["%", 7, 4]"#) == .number(3))
        #expect(try evaluate(#"["^", 2, 10]"#) == .number(1024))
        #expect(try evaluate(#"["min", 3, 1, 2]"#) == .number(1))
        #expect(try evaluate(#"["max", 3, 1, 2]"#) == .number(3))
        #expect(try evaluate(#"["+", 1, "a"]"#) == .null)
    }

    // MARK: Zoom curves

    @Test func step() throws {
        let step = #"["step", ["zoom"], 1, 10, 2, 14, 3]"#
        #expect(try evaluate(step, zoom: 5) == .number(1))
        #expect(try evaluate(step, zoom: 10) == .number(2))
        #expect(try evaluate(step, zoom: 13.99) == .number(2))
        #expect(try evaluate(step, zoom: 14) == .number(3))
        #expect(try evaluate(step, zoom: 20) == .number(3))
        #expect(try evaluate(#"["step", ["get", "lanes"], "narrow", 3, "wide"]"#) == .string("wide"))
    }

    @Test func linearAndExponentialInterpolation() throws {
        let linear = #"["interpolate", ["linear"], ["zoom"], 10, 1, 14, 9]"#
        #expect(try evaluate(linear, zoom: 8) == .number(1))
        #expect(try evaluate(linear, zoom: 11) == .number(3))
        #expect(try evaluate(linear, zoom: 16) == .number(9))
        // MapLibre's factor (base^progress - 1) / (base^range - 1); Python gives
        // t = (1.5**2 - 1) / (1.5**4 - 1) = 0.3076923076923077 and 1 + 8t = 3.4615384615384617.
        let exponential = #"["interpolate", ["exponential", 1.5], ["zoom"], 10, 1, 14, 9]"#
        let value = try #require(number(evaluate(exponential, zoom: 12)))
        #expect(abs(value - 3.4615384615384617) < 1e-12)
        // Three stops: z 11 lies between 10 and 12; Python: 2 + 8 * (2**1 - 1) / (2**2 - 1).
        let threeStops = #"["interpolate", ["exponential", 2], ["zoom"], 8, 0, 10, 2, 12, 10]"#
        let between = try #require(number(evaluate(threeStops, zoom: 11)))
        #expect(abs(between - 4.666666666666666) < 1e-12)
        // cubic-bezier(0, 0, 1, 1) is the identity curve.
        let bezier = #"["interpolate", ["cubic-bezier", 0, 0, 1, 1], ["zoom"], 0, 0, 10, 10]"#
        let eased = try #require(number(evaluate(bezier, zoom: 3)))
        #expect(abs(eased - 3) < 1e-6)
    }

    @Test func interpolatesColoursAndArrays() throws {
        let colours = ##"["interpolate", ["linear"], ["zoom"], 0, "#000000", 10, "#ffffff"]"##
        guard case .color(let grey) = try evaluate(colours, zoom: 5) else {
            Issue.record("not a colour")
            return
        }
        #expect(abs(grey.r - 0.5) < 1e-6 && abs(grey.g - 0.5) < 1e-6 && grey.a == 1)
        // Premultiplied, as MapLibre Native: red fading to transparent stays red, half as opaque.
        let fade = #"["interpolate", ["linear"], ["zoom"], 0, "rgba(255,0,0,1)", 10, "rgba(0,0,255,0)"]"#
        guard case .color(let faded) = try evaluate(fade, zoom: 5) else {
            Issue.record("not a colour")
            return
        }
        #expect(abs(faded.r - 1) < 1e-6 && faded.b == 0 && abs(faded.a - 0.5) < 1e-6)
        let arrays = #"["interpolate", ["linear"], ["zoom"], 0, ["literal", [0, 10]], 10, ["literal", [10, 0]]]"#
        #expect(try evaluate(arrays, zoom: 2.5) == .array([.number(2.5), .number(7.5)]))
        let mismatched = #"["interpolate", ["linear"], ["zoom"], 0, 1, 10, "a"]"#
        #expect(try evaluate(mismatched, zoom: 5) == .null)
    }

    /// Expected pixels come from MapLibre Native (the mapli oracle, EGL_PLATFORM=surfaceless):
    /// a background layer with each colour expression, rendered 512 px wide over a bbox
    /// 360 / 2^z degrees wide so the camera zoom is exactly z, centre pixel read with Pillow.
    @Test func colourInterpolationMatchesMapLibreNative() throws {
        let cases: [(expression: String, zoom: Double, rgba: [Int])] = [
            (##"["interpolate", ["linear"], ["zoom"], 0, "rgba(255,0,0,1)", 10, "rgba(0,0,255,0)"]"##, 5, [255, 0, 0, 128]),
            (##"["interpolate", ["exponential", 1.5], ["zoom"], 10, "#000000", 14, "#ffffff"]"##, 12, [78, 78, 78, 255]),
            (##"["interpolate", ["linear"], ["zoom"], 0, "#000000", 10, "#ffffff"]"##, 5, [128, 128, 128, 255]),
        ]
        for (expression, zoom, rgba) in cases {
            guard case .color(let color) = try evaluate(expression, zoom: zoom) else {
                Issue.record("\(expression) is not a colour")
                continue
            }
            let ours = [color.r, color.g, color.b, color.a].map { Int(($0 * 255).rounded()) }
            // Renders differ by up to 2/255 between runs, so allow that much.
            #expect(zip(ours, rgba).allSatisfy { abs($0 - $1) <= 2 }, "\(expression) at z\(zoom): \(ours) vs \(rgba)")
        }
    }

    /// The JSON depth limit also bounds expression recursion; the deepest legal nesting must
    /// compile and evaluate on a test worker thread without exhausting its stack.
    @Test func deepestNestingEvaluates() throws {
        let depth = JSONParser.maximumDepth - 1
        let text = String(repeating: #"["!", "#, count: depth) + "true" + String(repeating: "]", count: depth)
        #expect(try evaluate(text) == .bool(depth % 2 == 0))
        let sums = String(repeating: #"["+", 1, "#, count: depth) + "0" + String(repeating: "]", count: depth)
        #expect(try evaluate(sums) == .number(Double(depth)))
    }

    // MARK: Compile errors

    @Test func malformedExpressionsNameTheirPath() throws {
        #expect(throws: StyleError.unknownOperator(path: "p", name: "frobnicate")) {
            try Expression(json(#"["frobnicate", 1]"#), path: "p")
        }
        #expect(throws: StyleError.unknownOperator(path: "p[2]", name: "nope")) {
            try Expression(json(#"["+", 1, ["nope"]]"#), path: "p")
        }
        #expect(throws: StyleError.self) { try Expression(json(#"["get"]"#)) }
        #expect(throws: StyleError.self) { try Expression(json("[]")) }
        #expect(throws: StyleError.self) { try Expression(json("[1, 2]")) }
        #expect(throws: StyleError.self) { try Expression(json(#"["step", ["zoom"], 1, 10, 2, 5, 3]"#)) }
        #expect(throws: StyleError.self) { try Expression(json(#"["interpolate", ["cubic"], ["zoom"], 1, 2]"#)) }
        #expect(throws: StyleError.self) { try Expression(json(#"["match", ["get", "a"], 1, 2]"#)) }
        #expect(throws: StyleError.self) { try Expression(json(#"["case", true, 1]"#)) }
        #expect(throws: StyleError.self) { try Expression(json(#"{"a": 1}"#)) }
    }

    // MARK: Legacy filters

    @Test func legacyFiltersAreDetectedAsMapLibreDoes() throws {
        let detect = { (text: String) throws -> Bool in try ExpressionCompiler.isExpressionFilter(self.json(text)) }
        #expect(try detect(#"["==", "class", "primary"]"#) == false)
        #expect(try detect(#"["==", ["get", "class"], "primary"]"#) == true)
        #expect(try detect(#"["in", "class", "a", "b"]"#) == false)
        #expect(try detect(#"["in", ["get", "class"], ["literal", ["a"]]]"#) == true)
        #expect(try detect(#"["in", "class", ["literal", ["a"]]]"#) == true)
        #expect(try detect(#"["has", "$type"]"#) == false)
        #expect(try detect(#"["has", "name"]"#) == true)
        #expect(try detect(#"["!in", "class", "a"]"#) == false)
        #expect(try detect(#"["none", ["==", "a", 1]]"#) == false)
        #expect(try detect(#"["all", ["==", "a", 1], ["has", "b"]]"#) == false)
        #expect(try detect(#"["all", ["==", ["get", "a"], 1], true]"#) == true)
        #expect(try detect("true") == true)
    }

    @Test func legacyFilters() throws {
        #expect(try filter(#"["==", "class", "primary"]"#, Self.road))
        #expect(try !filter(#"["==", "class", "primary"]"#, Self.place))
        #expect(try filter(#"["!=", "class", "primary"]"#, Self.place))
        #expect(try filter(#"["!=", "missing", "x"]"#, Self.place))
        #expect(try filter(#"["==", "lanes", 4]"#, Self.road))
        #expect(try !filter(#"["==", "lanes", "4"]"#, Self.road))
        #expect(try filter(#"["<", "lanes", 5]"#, Self.road))
        #expect(try filter(#"["<=", "lanes", 4]"#, Self.road))
        #expect(try !filter(#"[">", "lanes", 4]"#, Self.road))
        #expect(try filter(#"[">=", "render_height", 24]"#, Self.building))
        #expect(try !filter(#"["<", "class", 5]"#, Self.road))
        #expect(try !filter(#"["<", "missing", 5]"#, Self.road))
        #expect(try filter(#"["in", "class", "primary", "secondary"]"#, Self.road))
        #expect(try !filter(#"["in", "class", "minor", "service"]"#, Self.road))
        #expect(try filter(#"["!in", "class", "minor", "service"]"#, Self.road))
        #expect(try filter(#"["has", "name:latin"]"#, Self.place))
        #expect(try !filter(#"["has", "name:latin"]"#, Self.building))
        #expect(try filter(#"["!has", "name:latin"]"#, Self.building))
        #expect(try filter(#"["==", "$type", "Polygon"]"#, Self.building))
        #expect(try !filter(#"["==", "$type", "Polygon"]"#, Self.road))
        #expect(try filter(#"["in", "$type", "LineString", "Point"]"#, Self.road))
        #expect(try filter(#"["==", "$id", 42]"#, Self.road))
        #expect(try filter(#"["has", "$id"]"#, Self.road))
        #expect(try filter(#"["!has", "$id"]"#, Self.building))
        #expect(try filter(#"["all", ["==", "$type", "LineString"], ["in", "class", "primary", "trunk"]]"#, Self.road))
        #expect(try !filter(#"["all", ["==", "$type", "LineString"], ["in", "class", "minor"]]"#, Self.road))
        #expect(try filter(#"["any", ["==", "class", "minor"], ["==", "class", "primary"]]"#, Self.road))
        #expect(try filter(#"["none", ["==", "class", "minor"], ["==", "class", "service"]]"#, Self.road))
        #expect(try !filter(#"["none", ["==", "class", "primary"]]"#, Self.road))
        #expect(throws: StyleError.unknownOperator(path: "", name: "~=")) { try Expression.filter(json(#"["~=", "a", 1]"#)) }
    }

    @Test func expressionFiltersRejectNonBooleans() throws {
        #expect(try filter(#"["==", ["get", "class"], "primary"]"#, Self.road))
        #expect(try filter("true", Self.road))
        #expect(try !filter("false", Self.road))
        #expect(try !filter(#"["get", "class"]"#, Self.road))
        #expect(try !filter(#"["get", "tunnel"]"#, Self.road))
        #expect(try filter(#"["all", ["==", ["geometry-type"], "LineString"], [">=", ["zoom"], 12]]"#, Self.road, zoom: 13))
        #expect(try !filter(#"["all", ["==", ["geometry-type"], "LineString"], [">=", ["zoom"], 12]]"#, Self.road, zoom: 11))
    }

    // MARK: Legacy functions

    private func function(_ text: String, kind: ValueKind) throws -> Expression {
        var compiler = ExpressionCompiler()
        guard case .object(let object) = try json(text) else { throw StyleError.invalidValue(path: "", reason: "test") }
        let root = try compiler.compileFunction(object, path: "f", kind: kind)
        return Expression(root: root, isZoomDependent: compiler.usesZoom, isFeatureDependent: compiler.usesFeature, warnings: [])
    }

    @Test func legacyZoomFunctions() throws {
        let exponential = try function(#"{"base": 1.5, "stops": [[10, 1], [14, 9]]}"#, kind: .number)
        #expect(exponential.isZoomDependent && !exponential.isFeatureDependent)
        let value = try #require(number(exponential.evaluate(EvaluationContext(zoom: 12))))
        #expect(abs(value - 3.4615384615384617) < 1e-12)
        let linear = try function(##"{"stops": [[0, "#000000"], [10, "#ffffff"]]}"##, kind: .color)
        guard case .color(let grey) = linear.evaluate(EvaluationContext(zoom: 5)) else {
            Issue.record("not a colour")
            return
        }
        #expect(abs(grey.r - 0.5) < 1e-6)
        // Without "type", non-interpolatable properties step (interval), including below the first stop.
        let interval = try function(#"{"stops": [[10, "butt"], [14, "round"]]}"#, kind: .enumeration(["butt", "round"]))
        #expect(interval.evaluate(EvaluationContext(zoom: 5)) == .string("butt"))
        #expect(interval.evaluate(EvaluationContext(zoom: 13)) == .string("butt"))
        #expect(interval.evaluate(EvaluationContext(zoom: 14)) == .string("round"))
    }

    @Test func legacyPropertyFunctions() throws {
        let identity = try function(#"{"property": "render_height", "type": "identity"}"#, kind: .number)
        #expect(identity.isFeatureDependent && !identity.isZoomDependent)
        #expect(identity.evaluate(EvaluationContext(zoom: 0, feature: Self.building)) == .number(24))
        let categorical = try function(
            ##"{"property": "class", "type": "categorical", "stops": [["primary", "#ff0000"], ["minor", "#ffffff"]], "default": "#000000"}"##,
            kind: .color)
        #expect(categorical.evaluate(EvaluationContext(zoom: 0, feature: Self.road)) == .color(Color(r: 1, g: 0, b: 0)))
        #expect(categorical.evaluate(EvaluationContext(zoom: 0, feature: Self.place)) == .color(.black))
        #expect(categorical.evaluate(EvaluationContext(zoom: 0, feature: Self.building)) == .color(.black))
        let interval = try function(#"{"property": "lanes", "type": "interval", "stops": [[0, 1], [2, 3], [4, 5]]}"#, kind: .number)
        #expect(interval.evaluate(EvaluationContext(zoom: 0, feature: Self.road)) == .number(5))
        let exponential = try function(
            #"{"property": "render_height", "type": "exponential", "stops": [[0, 0], [48, 1]], "default": 0.25}"#, kind: .number)
        #expect(exponential.evaluate(EvaluationContext(zoom: 0, feature: Self.building)) == .number(0.5))
        // Missing or non-numeric input falls back to "default".
        #expect(exponential.evaluate(EvaluationContext(zoom: 0, feature: Self.road)) == .number(0.25))
        #expect(throws: StyleError.unsupportedFeature(path: "f", feature: "a zoom-and-property function")) {
            try function(#"{"property": "a", "stops": [[{"zoom": 1, "value": 1}, 2]]}"#, kind: .number)
        }
        #expect(throws: StyleError.missingProperty(path: "f.stops")) { try function(#"{"base": 2}"#, kind: .number) }
        #expect(throws: StyleError.self) { try function(#"{"stops": [[5, 1], [1, 2]]}"#, kind: .number) }
    }

    @Test func tokenStrings() throws {
        var compiler = ExpressionCompiler()
        let root = compiler.compileTokens("{name:latin} ({class}) {missing}!")
        #expect(compiler.usesFeature)
        let text = try root.evaluate(EvaluationContext(zoom: 0, feature: Self.road))
        #expect(text == .string("Mannerheimintie (primary) !"))
        var plain = ExpressionCompiler()
        #expect(try plain.compileTokens("Helsinki {").evaluate(EvaluationContext(zoom: 0)) == .string("Helsinki {"))
        #expect(!plain.usesFeature)
    }

    @Test func formatKeepsTextAndWarns() throws {
        let expression = try Expression(json(#"["format", ["get", "name:latin"], {"font-scale": 1.2}, " ", ["get", "class"], {}]"#))
        #expect(expression.evaluate(EvaluationContext(zoom: 0, feature: Self.road)) == .string("Mannerheimintie primary"))
        #expect(expression.warnings.count == 1)
    }
}
