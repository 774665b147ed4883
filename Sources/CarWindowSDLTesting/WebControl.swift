import Foundation
import CarWindowSDLProtocol

/// What the browser page asks of the head unit (`POST /control`, JSON).
package enum WebControl: Sendable, Equatable {
    case level(SDLHMILevel)
    case resize(width: Int, height: Int)
    case refuse(width: Int, height: Int)
    case ambientLight(night: Bool)
    case button(SDLButtonName)
    case touch(SDLTouchEvent)

    /// A control as the page writes it. Every number is read as a Double, which no JSON number
    /// can trap (an integer type would take 1e19 only to trap on it later), and checked here.
    private struct Body: Decodable {
        struct Finger: Decodable {
            var id: Double
            var ts: Double
            var x: Double
            var y: Double
        }
        var action: String
        var level: String?
        var width: Double?
        var height: Double?
        var night: Bool?
        var name: String?
        var type: String?
        var touches: [Finger]?
    }

    /// The head unit's screen sides and finger numbers, as the page may ask for them.
    package static let sideRange = 16...8192
    /// Finger ids, as SDL's `TouchEvent.id`.
    package static let fingerRange = 0...9
    /// Touch times in milliseconds, as SDL's `TouchEvent.ts`.
    package static let timestampRange = 0...5_000_000_000

    /// Reads one request body; nil for anything malformed or out of range (the page is the only
    /// writer, but anything that gets past the server's checks is untrusted too). Numbers must
    /// be finite and whole where SDL wants integers; touches are rounded to whole pixels, as
    /// head units send them, and clamped to `screen` (the head unit's screen in pixels).
    package static func parse(_ body: [UInt8], screen: (width: Int, height: Int)) -> WebControl? {
        // JSONDecoder refuses what does not fit the types: a number for a Boolean, `true` for
        // a number, numbers beyond Double's range, and strings such as "NaN".
        guard let object = try? JSONDecoder().decode(Body.self, from: Data(body)) else { return nil }
        func size() -> (Int, Int)? {
            guard let width = object.width.flatMap({ whole($0, in: sideRange) }),
                  let height = object.height.flatMap({ whole($0, in: sideRange) }) else { return nil }
            return (width, height)
        }
        switch object.action {
        case "level":
            return object.level.flatMap(SDLHMILevel.init(rawValue:)).map { .level($0) }
        case "resize": return size().map { .resize(width: $0.0, height: $0.1) }
        case "refuse": return size().map { .refuse(width: $0.0, height: $0.1) }
        case "light": return object.night.map { .ambientLight(night: $0) }
        case "button":
            // SDL's button names: upper-case ASCII letters, digits and underscores.
            guard let name = object.name, (1...64).contains(name.utf8.count),
                  name.utf8.allSatisfy({ (65...90).contains($0) || (48...57).contains($0) || $0 == 95 }) else { return nil }
            return .button(SDLButtonName(rawValue: name))
        case "touch":
            guard let type = object.type.flatMap(SDLTouchEvent.TouchType.init(rawValue:)),
                  let touches = object.touches, touches.count <= fingerRange.count else { return nil }
            let right = Double(max(screen.width, 1) - 1), bottom = Double(max(screen.height, 1) - 1)
            var fingers: [SDLTouchEvent.Touch] = []
            for touch in touches {
                guard let id = whole(touch.id, in: fingerRange), let time = whole(touch.ts, in: timestampRange),
                      touch.x.isFinite, touch.y.isFinite else { return nil }
                fingers.append(SDLTouchEvent.Touch(id: id, timestamp: time, x: min(max(touch.x.rounded(), 0), right),
                                                   y: min(max(touch.y.rounded(), 0), bottom)))
            }
            return .touch(SDLTouchEvent(type: type, touches: fingers))
        default: return nil
        }
    }

    /// `value` as an integer when it is a whole number in `range`; the check comes before the
    /// conversion, which would trap beyond Int's range.
    private static func whole(_ value: Double, in range: ClosedRange<Int>) -> Int? {
        guard value.isFinite, value == value.rounded(), value >= Double(range.lowerBound),
              value <= Double(range.upperBound) else { return nil }
        return Int(value)
    }
}

/// One HTTP request to the browser head unit, as far as it reads them: the request line, the
/// headers and the body.
package struct WebRequest: Sendable, Equatable {
    package var method: String
    /// The path without its query.
    package var path: String
    /// Header values by lowercased name.
    package var headers: [String: String]
    /// `Content-Length`: the body's length.
    package var contentLength: Int
    package var body: [UInt8] = []

    /// The headers the server's decisions rest on: a request that names one twice is refused
    /// rather than read one way here and another way by whoever sent it.
    static let singleHeaders: Set<String> = ["host", "origin", "content-type", "content-length", "transfer-encoding",
                                             WebRequest.tokenHeader]
    /// The header the page sends its token in.
    package static let tokenHeader = "x-carwindow-token"

    /// Reads a request head (request line and headers, up to and including the empty line);
    /// nil when it is no request this server takes: a malformed line, a repeated header of
    /// ``singleHeaders``, a body length that is no plain number, or a chunked body.
    package static func parse(head: ArraySlice<UInt8>) -> WebRequest? {
        guard let text = String(bytes: head, encoding: .utf8) else { return nil }
        let lines = text.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ", omittingEmptySubsequences: false) ?? []
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), !parts[0].isEmpty, parts[1].hasPrefix("/") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].lowercased()
            guard !name.isEmpty, !name.contains(where: { $0.isWhitespace }) else { return nil }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if headers[name] != nil {
                if singleHeaders.contains(name) { return nil }
                continue
            }
            headers[name] = value
        }
        guard headers["transfer-encoding"] == nil else { return nil }
        var length = 0
        if let text = headers["content-length"] {
            // Digits only, and few enough that the number cannot overflow.
            guard (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text) else {
                return nil
            }
            length = value
        }
        return WebRequest(method: String(parts[0]), path: String(parts[1].split(separator: "?").first ?? ""),
                          headers: headers, contentLength: length)
    }

    /// Why the server refuses a request: it did not come from its own page.
    package enum Refusal: Sendable, Equatable {
        /// `Host` names no loopback address with the server's port (DNS rebinding).
        case foreignHost(String?)
        /// `Origin` is another site's (a cross-site request).
        case foreignOrigin(String)
        /// A state-changing request whose body is not JSON: what a cross-site form or "simple"
        /// fetch sends without a preflight.
        case notJSON(String?)
        /// A state-changing request without the page's token.
        case missingToken

        /// One word per kind, for logging each kind once.
        package var kind: String {
            switch self {
            case .foreignHost: "host"
            case .foreignOrigin: "origin"
            case .notJSON: "content type"
            case .missingToken: "token"
            }
        }

        /// What was wrong and what to do, for the response and the log.
        package func reason(port: Int) -> String {
            switch self {
            case .foreignHost(let host):
                "refused: the Host \(host.map { "'\($0)'" } ?? "(none)") is not 127.0.0.1:\(port), localhost:\(port) or [::1]:\(port); "
                    + "open the page at http://127.0.0.1:\(port)/"
            case .foreignOrigin(let origin):
                "refused: a request from '\(origin)', another site; the head unit takes requests only from its own page, "
                    + "http://127.0.0.1:\(port)/"
            case .notJSON(let type):
                "refused: a control must be application/json, not \(type.map { "'\($0)'" } ?? "without a Content-Type"); "
                    + "controls come only from the head unit's page"
            case .missingToken:
                "refused: the control lacks the page's token (X-CarWindow-Token); reload http://127.0.0.1:\(port)/ "
                    + "(a token is good for one run of the server)"
            }
        }
    }

    /// The loopback names the page can be opened at, with `port`.
    private static func loopbackHosts(port: Int) -> [String] {
        // Browsers leave the port out of Host and Origin when it is HTTP's own.
        let suffixes = port == 80 ? ["", ":80"] : [":\(port)"]
        return ["127.0.0.1", "localhost", "[::1]"].flatMap { name in suffixes.map { name + $0 } }
    }

    /// Why the server on `port`, whose page carries `token`, must not serve this request; nil
    /// when it may. Every request needs a loopback `Host` with our port, so that a DNS name
    /// rebound to 127.0.0.1 reaches neither the page nor its token, and, when it has an
    /// `Origin` (browsers send one with every cross-site request and every POST), the page's
    /// own. A request that changes anything (any method but GET and HEAD) also needs a JSON
    /// content type, which another site cannot send without a CORS preflight that the server
    /// never answers, and the page's token.
    package func refusal(port: Int, token: String) -> Refusal? {
        let hosts = Self.loopbackHosts(port: port)
        guard let host = headers["host"], hosts.contains(host.lowercased()) else { return .foreignHost(headers["host"]) }
        if let origin = headers["origin"], !hosts.contains(where: { "http://" + $0 == origin.lowercased() }) {
            return .foreignOrigin(origin)
        }
        guard method != "GET", method != "HEAD" else { return nil }
        let type = headers["content-type"]
        let mediaType = type?.split(separator: ";", maxSplits: 1).first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/json" else { return .notJSON(type) }
        guard let sent = headers[Self.tokenHeader], Self.same(sent, token) else { return .missingToken }
        return nil
    }

    /// Compares without stopping at the first difference, so the time taken says nothing about
    /// how much of a guess was right.
    private static func same(_ a: String, _ b: String) -> Bool {
        let left = Array(a.utf8), right = Array(b.utf8)
        guard left.count == right.count else { return false }
        return zip(left, right).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
