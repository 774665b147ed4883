import ArgumentParser
import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation
import Glibc

@main
struct CarWindowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "carwindow",
        abstract: "Draws OpenStreetMap vector tiles headless with OpenGL ES, for car head units.",
        subcommands: [DriveCommand.self, HeadUnitCommand.self, RenderCommand.self, EncodeCommand.self])

    /// Ignores SIGPIPE before any command runs: a reader of standard output that goes away
    /// (`carwindow drive | head -1`) must not kill the process before it has finished its files;
    /// the writes then fail with EPIPE, which ``Console`` tolerates.
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        await main(nil)
    }
}
