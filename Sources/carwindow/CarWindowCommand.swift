import ArgumentParser
import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

@main
struct CarWindowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "carwindow",
        abstract: "Draws OpenStreetMap vector tiles headless with OpenGL ES, for car head units.",
        subcommands: [DriveCommand.self, HeadUnitCommand.self, RenderCommand.self, EncodeCommand.self])
}
