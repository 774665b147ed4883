import Foundation

/// Finds the bundled assets/ folder: $CARWINDOW_ASSETS, then next to the package the binary
/// was built in (.build/<config>/carwindow), then ./assets.
enum Assets {
    static var folder: URL {
        if let path = ProcessInfo.processInfo.environment["CARWINDOW_ASSETS"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = directory.appendingPathComponent("assets", isDirectory: true)
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("helsinki.pmtiles").path) {
                return candidate
            }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: "assets", isDirectory: true)
    }

    static var tiles: URL { folder.appendingPathComponent("helsinki.pmtiles") }
    static var fonts: URL { folder.appendingPathComponent("fonts", isDirectory: true) }
    static func style(_ name: String) -> URL {
        folder.appendingPathComponent("styles", isDirectory: true).appendingPathComponent("\(name).json")
    }
}
