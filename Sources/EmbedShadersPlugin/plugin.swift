import Foundation
import PackagePlugin

/// Runs `carwindow-embed-shaders` over every file in the package's top-level `shaders/` folder.
@main
struct EmbedShadersPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let shaderFolder = context.package.directoryURL.appending(path: "shaders")
        let shaders = try FileManager.default
            .contentsOfDirectory(at: shaderFolder, includingPropertiesForKeys: nil)
            .filter { ["vert", "frag", "glsl"].contains($0.pathExtension) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedShaders.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(shaders.count) shaders",
                executable: try context.tool(named: "carwindow-embed-shaders").url,
                arguments: [output.path] + shaders.map(\.path),
                inputFiles: shaders,
                outputFiles: [output]
            )
        ]
    }
}
