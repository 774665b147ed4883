#if CARWINDOW_FUZZING
import CLibFuzzer
#endif
import Foundation
import Logging

/// The fuzz targets: each takes arbitrary bytes and feeds them to one reader of untrusted input
/// the way the library does. A target returns normally for every input; a trap (overflow, bounds,
/// a failed invariant) is the finding.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// A byte stream from the head unit: frames, messages, control payloads, RPCs.
    case sdlStream = "sdl-stream"
    /// The same stream, checking that the head unit cannot raise the frame size limit beyond
    /// ours. Its own target because every input that trips this check would otherwise stop
    /// `sdl-stream` before it reaches what a huge MTU does further on.
    case sdlLimits = "sdl-limits"
    /// One BSON document, and the control payloads read from it.
    case bson
    /// One RPC service payload, and the notification and response parameters read from it.
    case rpc
    /// One Mapbox Vector Tile.
    case mvt
    /// One PMTiles archive or directory.
    case pmtiles
    /// One style document.
    case style
    /// One expression or filter, compiled and evaluated.
    case expression
    /// A sequence of touch events for the gesture recogniser.
    case touch
    /// One GeoJSON document, parsed and cut into a few tiles.
    case geojson
    /// A request to the browser head unit: its head, where it came from, and a control.
    case webControl = "web-control"
    /// The receiver's RTCP feedback to the RTP sink.
    case rtcp
    /// SDL's security layer: security queries and encrypted frames, before and after a handshake.
    case security

    func run(_ bytes: [UInt8]) {
        switch self {
        case .sdlStream: SDLStreamTarget.run(bytes, checksFrameLimit: false)
        case .sdlLimits: SDLStreamTarget.run(bytes, checksFrameLimit: true)
        case .bson: BSONTarget.run(bytes)
        case .rpc: RPCTarget.run(bytes)
        case .mvt: VectorTileTarget.run(bytes)
        case .pmtiles: PMTilesTarget.run(bytes)
        case .style: StyleTarget.run(bytes)
        case .expression: ExpressionTarget.run(bytes)
        case .touch: TouchTarget.run(bytes)
        case .geojson: GeoJSONTarget.run(bytes)
        case .webControl: WebControlTarget.run(bytes)
        case .rtcp: RTCPTarget.run(bytes)
        case .security: SecurityTarget.run(bytes)
        }
    }

    /// The environment variable naming the target a libFuzzer run drives.
    static let environmentKey = "CARWINDOW_FUZZ_TARGET"

    static let names = allCases.map(\.rawValue).joined(separator: ", ")

    /// The target named by ``environmentKey``; exits with a usage line when it names none.
    static let selected: FuzzTarget = {
        silenceLogging()
        let name = ProcessInfo.processInfo.environment[environmentKey] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("set \(environmentKey) to one of: \(names) (was \"\(name)\")\n".utf8))
            exit(2)
        }
        return target
    }()

    /// Warnings about bad input are expected by the thousand; printing them would be most of
    /// the work per input.
    static func silenceLogging() {
        LoggingSystem.bootstrap { _ in SwiftLogNoOpLogHandler() }
    }
}

/// libFuzzer's entry point: one input per call.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzTarget.selected.run(bytes)
    return 0
}

/// Built by scripts/fuzz.sh (CARWINDOW_FUZZING), this hands the command line to libFuzzer's
/// driver: `CARWINDOW_FUZZ_TARGET=bson carwindow-fuzz CORPUS... [-max_total_time=30]`.
/// The plain build replays inputs instead: `carwindow-fuzz TARGET FILE...` runs each file once,
/// so that a crash input can be reproduced and debugged without the sanitizers.
@main
struct FuzzMain {
    static func main() {
        #if CARWINDOW_FUZZING
        _ = FuzzTarget.selected
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzTestOneInput(data, size) })
        #else
        replay(CommandLine.arguments.dropFirst())
        #endif
    }

    static func replay(_ arguments: ArraySlice<String>) {
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            print("usage: carwindow-fuzz TARGET FILE...  (targets: \(FuzzTarget.names))")
            print("scripts/fuzz.sh builds the targets with libFuzzer and runs them.")
            exit(2)
        }
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("cannot read \(path)")
                exit(1)
            }
            target.run([UInt8](data))
            print("\(path): ok")
        }
    }
}
