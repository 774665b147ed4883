import Foundation

// Usage: carwindow-embed-shaders OUTPUT.swift SHADER...
// Writes one `static let` per shader file into `enum EmbeddedShaders`, keyed by file name,
// as raw string literals so the GLSL needs no escaping.
let arguments = CommandLine.arguments.dropFirst()
guard let outputPath = arguments.first else {
    FileHandle.standardError.write(Data("usage: carwindow-embed-shaders OUTPUT.swift SHADER...\n".utf8))
    exit(2)
}
var swift = "// Generated from shaders/ at build time. Do not edit.\n\n"
swift += "enum EmbeddedShaders {\n    static let sources: [String: String] = [\n"
for path in arguments.dropFirst() {
    let url = URL(fileURLWithPath: path)
    let text = try String(contentsOf: url, encoding: .utf8)
    let fence = String(repeating: "#", count: 4)
    swift += "        \"\(url.lastPathComponent)\": \(fence)\"\"\"\n\(text)\n\"\"\"\(fence),\n"
}
swift += "    ]\n}\n"
try swift.write(toFile: outputPath, atomically: true, encoding: .utf8)
