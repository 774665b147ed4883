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
    ///
    /// The soft descriptor limit is raised to the hard one, too: libdispatch ends a process that
    /// runs out of descriptors (its worker monitor cannot open /proc), so a flood of connections
    /// to `--web` must meet the server's own cap, which follows the limit, long before that.
    static func main() async {
        signal(SIGPIPE, SIG_IGN)
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        await main(nil)
    }
}
