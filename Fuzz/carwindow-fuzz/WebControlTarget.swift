import CarWindow
import CarWindowSDLTesting

/// A request to the browser head unit's server as a local program or another site could send
/// it: the request head through `WebRequest` and the server's checks of where it came from,
/// and the body through the control parser, as `POST /control` reads them. A control must come
/// out within its ranges whatever the numbers in the JSON (touches on the screen, whole sizes).
///
/// The first byte chooses the screen; the rest is a request head and its body, split at the
/// first empty line (all of it is a body when there is none).
enum WebControlTarget {
    static let screens = [(800, 480), (1, 1), (16, 8192), (8192, 16), (640, 384), (1280, 720), (2, 3), (8192, 8192)]
    static let port = 8080
    static let token = "0123abcd-4567-89ef"

    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let screen = screens[Int(input.byte() & 7)]
        let rest = input.remainder()
        var body = rest[...]
        if let end = rest.firstRange(of: [13, 10, 13, 10]) {
            body = rest[end.upperBound...]
            if let request = WebRequest.parse(head: rest[..<end.upperBound]) {
                check(request)
            }
        }
        guard let control = WebControl.parse(Array(body), screen: screen) else { return }
        check(control, screen: screen)
    }

    static func check(_ request: WebRequest) {
        guard request.path.hasPrefix("/"), (0...999_999_999).contains(request.contentLength) else {
            fatalError("a request head read as path \(request.path.debugDescription), length \(request.contentLength)")
        }
        let refusal = request.refusal(port: port, token: token)
        _ = refusal?.reason(port: port)
        let host = request.headers["host"]?.lowercased()
        if refusal == nil, !["127.0.0.1:8080", "localhost:8080", "[::1]:8080"].contains(host ?? "") {
            fatalError("a request for Host \(host.debugDescription) was let through")
        }
        if refusal == nil, request.method != "GET", request.method != "HEAD", request.headers[WebRequest.tokenHeader] != token {
            fatalError("a \(request.method) without the page's token was let through")
        }
    }

    static func check(_ control: WebControl, screen: (Int, Int)) {
        switch control {
        case .resize(let width, let height), .refuse(let width, let height):
            if !WebControl.sideRange.contains(width) || !WebControl.sideRange.contains(height) {
                fatalError("a size of \(width)x\(height) came through")
            }
        case .button(let name):
            if name.rawValue.isEmpty || !name.rawValue.utf8.allSatisfy({ (65...90).contains($0) || (48...57).contains($0) || $0 == 95 }) {
                fatalError("a button name \(name.rawValue.debugDescription) came through")
            }
        case .touch(let event):
            if event.touches.count > 10 { fatalError("\(event.touches.count) fingers came through") }
            for touch in event.touches {
                guard WebControl.fingerRange.contains(touch.id), touch.timestamps.allSatisfy(WebControl.timestampRange.contains),
                      touch.coordinates.allSatisfy({ point in
                          point.x == point.x.rounded() && point.y == point.y.rounded()
                              && (0...Double(screen.0 - 1)).contains(point.x) && (0...Double(screen.1 - 1)).contains(point.y)
                      }) else {
                    fatalError("a touch off the \(screen.0)x\(screen.1) screen or out of range came through: \(touch)")
                }
            }
            // What the session is handed next must not trap either.
            _ = try? event.touchEvent.validate()
        case .level, .ambientLight:
            break
        }
    }
}
