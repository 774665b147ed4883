import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowTestSupport

@Suite("CSS colours")
struct ColorTests {
    private func components(_ css: String) -> [Float]? {
        Color(css: css).map { [$0.r, $0.g, $0.b, $0.a] }
    }

    private func close(_ a: [Float]?, _ b: [Float], tolerance: Float = 1e-5) -> Bool {
        guard let a, a.count == b.count else { return false }
        return zip(a, b).allSatisfy { abs($0 - $1) <= tolerance }
    }

    /// Channels given as 0-255 bytes, to compare against parsed 0...1 components.
    private func bytes(_ r: Int, _ g: Int, _ b: Int, _ a: Int = 255) -> [Float] {
        [Float(r) / 255, Float(g) / 255, Float(b) / 255, Float(a) / 255]
    }

    @Test func hexForms() {
        #expect(close(components("#f00"), [1, 0, 0, 1]))
        #expect(close(components("#F008"), bytes(255, 0, 0, 0x88)))
        #expect(close(components("#1a2b3c"), bytes(0x1A, 0x2B, 0x3C)))
        #expect(close(components("#1A2B3C80"), bytes(0x1A, 0x2B, 0x3C, 0x80)))
        for bad in ["#", "#12", "#12345", "#1234567", "#gggggg", "#123456789"] {
            #expect(Color(css: bad) == nil, "\(bad)")
        }
    }

    @Test func functionalForms() {
        #expect(close(components("rgb(255, 128, 0)"), bytes(255, 128, 0)))
        #expect(close(components("rgba(255,0,0,0.5)"), [1, 0, 0, 0.5]))
        #expect(close(components("rgb(100%, 50%, 0%)"), [1, 0.5, 0, 1]))
        #expect(close(components("rgb(255 0 0 / 25%)"), [1, 0, 0, 0.25]))
        #expect(close(components("  RGBA( 0 , 0 , 255 , 1 ) "), [0, 0, 1, 1]))
        // Out-of-range channels clamp, as browsers and MapLibre do.
        #expect(close(components("rgb(300, -5, 0)"), [1, 0, 0, 1]))
        for bad in ["rgb(1,2)", "rgb(1,2,3,4,5)", "rgb(a,b,c)", "rgb 1 2 3", "rgba(1,2,3,)", "foo(1,2,3)", "rgb(nan,0,0)"] {
            #expect(Color(css: bad) == nil, "\(bad)")
        }
    }

    @Test func hslForms() {
        // Expected values from Python's colorsys.hls_to_rgb(h / 360, l, s).
        #expect(close(components("hsl(120, 100%, 25%)"), [0, 0.5, 0, 1]))
        #expect(close(components("hsl(0, 100%, 50%)"), [1, 0, 0, 1]))
        #expect(close(components("hsl(210, 50%, 60%)"), [0.4, 0.6, 0.8, 1]))
        #expect(close(components("hsl(-120, 100%, 50%)"), [0, 0, 1, 1]))
        #expect(close(components("hsl(480deg 100% 50%)"), [0, 1, 0, 1]))
        #expect(close(components("hsla(0, 100%, 50%, 0.3)"), [1, 0, 0, 0.3]))
        #expect(Color(css: "hsl(0, 100, 50)") == nil)
    }

    @Test func namedColours() {
        #expect(close(components("steelblue"), bytes(0x46, 0x82, 0xB4)))
        #expect(close(components("RebeccaPurple"), bytes(0x66, 0x33, 0x99)))
        #expect(close(components("white"), [1, 1, 1, 1]))
        #expect(close(components("transparent"), [0, 0, 0, 0]))
        #expect(Color(css: "notacolour") == nil)
        #expect(Color(css: "") == nil)
        // CSS Color 4 lists 148 names besides "transparent"; spot-check a few rarely used ones.
        for name in ["aliceblue", "lightgoldenrodyellow", "mediumspringgreen", "papayawhip", "yellowgreen", "darkslategrey"] {
            #expect(Color(css: name) != nil, "\(name)")
        }
    }

    @Test func premultipliedAndDescription() {
        let color = Color(r: 1, g: 0.5, b: 0, a: 0.5)
        #expect(color.premultiplied == SIMD4<Float>(0.5, 0.25, 0, 0.5))
        #expect(Color(premultiplied: SIMD4(0.5, 0.25, 0, 0.5)) == color)
        #expect(Color(premultiplied: SIMD4(0, 0, 0, 0)) == .transparent)
        #expect(Color(css: "#ff8000")?.description == "rgba(255,128,0,1)")
        #expect(Color(css: "rgba(0,0,255,0.5)")?.description == "rgba(0,0,255,0.5)")
    }
}
