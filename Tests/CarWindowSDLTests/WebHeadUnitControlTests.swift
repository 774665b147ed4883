import Foundation
import Testing
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL
@testable import CarWindowSDLTesting
@testable import CarWindowSystemSupport
@testable import CarWindowTestSupport

/// The browser head unit takes controls only from its own page (issue 25), and its control
/// parser checks every number before it goes anywhere.
@Suite struct WebHeadUnitControlTests {
    /// A cross-site "simple" POST (text/plain, another site's Origin) drove the head unit. Now
    /// a control needs a JSON content type, the page's token, a loopback Host with our port and,
    /// when there is one, the page's own Origin; anything else is refused with 403.
    @Test(.timeLimit(.minutes(2))) func controlsComeOnlyFromThePageItself() async throws {
        let logs = LockedState<[String]>([])
        let server = try WebHeadUnitServerTests.server(logs: logs)
        defer { server.stop() }
        let port = server.port
        let pageText = try WebHeadUnitServerTests.exchange(port, "GET", "/")
        #expect(WebHeadUnitServerTests.status(pageText) == 200)
        let token = server.token
        #expect(pageText.contains("<p>\(token)</p>"), "the page does not carry its token: \(pageText.debugDescription)")
        let level = #"{"action":"level","level":"NONE"}"#
        let json = ("Content-Type", "application/json")
        let carriesToken = ("X-CarWindow-Token", token)
        let refusals: [(String, String?, [(String, String)])] = [
            ("text/plain, as a cross-site form or fetch sends it", nil, [("Content-Type", "text/plain"), carriesToken]),
            ("no content type", nil, [carriesToken]),
            ("another site's Origin", nil, [json, carriesToken, ("Origin", "http://evil.example")]),
            ("the right host on another port as Origin", nil, [json, carriesToken, ("Origin", "http://127.0.0.1:\(port + 1)")]),
            ("a null Origin", nil, [json, carriesToken, ("Origin", "null")]),
            ("another Host (DNS rebinding)", "evil.example:\(port)", [json, carriesToken]),
            ("a loopback Host with another port", "127.0.0.1:\(port + 1)", [json, carriesToken]),
            ("no token", nil, [json]),
            ("a wrong token", nil, [json, ("X-CarWindow-Token", String(repeating: "0", count: token.count))]),
        ]
        for (reason, host, headers) in refusals {
            let response = try WebHeadUnitServerTests.exchange(port, "POST", "/control", host: host, headers: headers, body: level)
            #expect(WebHeadUnitServerTests.status(response) == 403, "\(reason): \(response.debugDescription)")
        }
        // Rebinding must not read the page (and its token) or its streams either.
        #expect(WebHeadUnitServerTests.status(try WebHeadUnitServerTests.exchange(port, "GET", "/", host: "evil.example:\(port)")) == 403)
        #expect(WebHeadUnitServerTests.status(try WebHeadUnitServerTests.exchange(port, "GET", "/events", headers: [("Origin", "http://evil.example")])) == 403)
        // A CORS preflight is never answered positively.
        #expect(WebHeadUnitServerTests.status(try WebHeadUnitServerTests.exchange(port, "OPTIONS", "/control", headers: [("Origin", "http://evil.example")])) != 204)
        // The page itself, under each of its loopback names.
        for name in ["127.0.0.1", "localhost", "[::1]"] {
            let origin = ("Origin", "http://\(name):\(port)")
            let full = #"{"action":"level","level":"FULL"}"#
            let response = try WebHeadUnitServerTests.exchange(port, "POST", "/control", host: "\(name):\(port)",
                                             headers: [("Content-Type", "application/json; charset=utf-8"), carriesToken, origin],
                                             body: full)
            #expect(WebHeadUnitServerTests.status(response) == 204, "\(name): \(response.debugDescription)")
        }
        var controls = server.requests.makeAsyncIterator()
        for _ in 0..<3 { #expect(await controls.next() == .level(.full), "a refused control reached the head unit") }
        let logged = logs.withLock { $0 }
        #expect(logged.count >= 1 && logged.count <= refusals.count + 3, "refusals are logged once per kind: \(logged)")
    }

    /// Numbers in a control are checked before they go anywhere: no conversion traps, sizes
    /// must be whole and in range, and touches are clamped to the screen.
    @Test func controlNumbersAreCheckedAndClamped() {
        let screen = (width: 800, height: 480)
        func parse(_ text: String) -> WebControl? { WebControl.parse(Array(text.utf8), screen: screen) }
        func touch(_ finger: String) -> String { #"{"action":"touch","type":"BEGIN","touches":[\#(finger)]}"# }
        #expect(parse(touch(#"{"id":0,"ts":5,"x":1e19,"y":-1e300}"#))
                == .touch(SDLTouchEvent(type: .begin, touches: [.init(id: 0, timestamp: 5, x: 799, y: 0)])))
        #expect(parse(touch(#"{"id":1,"ts":5,"x":12.4,"y":479.6}"#))
                == .touch(SDLTouchEvent(type: .begin, touches: [.init(id: 1, timestamp: 5, x: 12, y: 479)])))
        for finger in [#"{"id":1e19,"ts":5,"x":1,"y":1}"#, #"{"id":-1,"ts":5,"x":1,"y":1}"#, #"{"id":0.5,"ts":5,"x":1,"y":1}"#,
                       #"{"id":true,"ts":5,"x":1,"y":1}"#, #"{"id":0,"ts":1e19,"x":1,"y":1}"#, #"{"id":0,"ts":-1,"x":1,"y":1}"#,
                       #"{"id":0,"ts":5,"x":1e400,"y":1}"#, #"{"id":0,"ts":5,"x":"NaN","y":1}"#, #"{"id":0,"ts":5,"x":"Infinity","y":1}"#,
                       #"{"id":0,"ts":5,"x":null,"y":1}"#, #"{"id":0,"ts":5,"x":true,"y":1}"#] {
            #expect(parse(touch(finger)) == nil, "\(finger)")
        }
        #expect(parse(#"{"action":"resize","width":640,"height":384}"#) == .resize(width: 640, height: 384))
        for size in [#""width":1e19,"height":384"#, #""width":-1e19,"height":384"#, #""width":640.5,"height":384"#,
                     #""width":12345678901234567890,"height":384"#, #""width":640,"height":9000"#, #""width":true,"height":384"#] {
            #expect(parse(#"{"action":"resize",\#(size)}"#) == nil, "\(size)")
            #expect(parse(#"{"action":"refuse",\#(size)}"#) == nil, "\(size)")
        }
        #expect(parse(#"{"action":"light","night":1}"#) == nil, "a number is no Boolean")
        #expect(parse(#"{"action":"light","night":true}"#) == .ambientLight(night: true))
    }
}
