import Foundation
import CarWindowSDL

/// What the browser page asks of the head unit (`POST /control`, JSON).
package enum WebControl: Sendable, Equatable {
    case level(SDLHMILevel)
    case resize(width: Int, height: Int)
    case refuse(width: Int, height: Int)
    case ambientLight(night: Bool)
    case button(SDLButtonName)
    case touch(SDLTouchEvent)

    /// Reads one request body; nil for anything malformed or out of range (the page is the only
    /// writer, but any local program can post). `screen` is the head unit's screen in pixels.
    package static func parse(_ body: [UInt8], screen: (width: Int, height: Int)) -> WebControl? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let action = object["action"] as? String else { return nil }
        func size() -> (Int, Int)? {
            guard let width = object["width"] as? Int, let height = object["height"] as? Int,
                  (16...8192).contains(width), (16...8192).contains(height) else { return nil }
            return (width, height)
        }
        switch action {
        case "level":
            return (object["level"] as? String).flatMap(SDLHMILevel.init(rawValue:)).map { .level($0) }
        case "resize": return size().map { .resize(width: $0.0, height: $0.1) }
        case "refuse": return size().map { .refuse(width: $0.0, height: $0.1) }
        case "light": return (object["night"] as? Bool).map { .ambientLight(night: $0) }
        case "button":
            guard let name = object["name"] as? String, name.count <= 64,
                  name.allSatisfy({ $0.isUppercase || $0 == "_" || $0.isNumber }) else { return nil }
            return .button(SDLButtonName(rawValue: name))
        case "touch":
            guard let type = (object["type"] as? String).flatMap(SDLTouchEvent.TouchType.init(rawValue:)),
                  let touches = object["touches"] as? [[String: Any]], touches.count <= 10 else { return nil }
            var fingers: [SDLTouchEvent.Touch] = []
            for touch in touches {
                guard let id = touch["id"] as? Int, (0...9).contains(id), let time = touch["ts"] as? Int, time >= 0,
                      let x = (touch["x"] as? NSNumber)?.doubleValue, let y = (touch["y"] as? NSNumber)?.doubleValue,
                      x.isFinite, y.isFinite else { return nil }
                // Whole pixels, as head units send them.
                fingers.append(SDLTouchEvent.Touch(id: id, timestamp: time, x: x.rounded(), y: y.rounded()))
            }
            return .touch(SDLTouchEvent(type: type, touches: fingers))
        default: return nil
        }
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

    /// Reads a request head (request line and headers, up to and including the empty line);
    /// nil when it is no request.
    package static func parse(head: ArraySlice<UInt8>) -> WebRequest? {
        guard let text = String(bytes: head, encoding: .utf8) else { return nil }
        let lines = text.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = headers["content-length"].map { Int($0) ?? -1 } ?? 0
        guard length >= 0 else { return nil }
        return WebRequest(method: String(parts[0]), path: String(parts[1].split(separator: "?").first ?? ""),
                          headers: headers, contentLength: length)
    }
}
