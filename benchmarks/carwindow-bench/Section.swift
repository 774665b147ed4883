import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// One benchmark of the harness. A new benchmark is one new file with a type conforming to this
/// protocol, plus one line in ``SectionRegistry/all``.
///
/// The harness measures the process around `run` (wall time, CPU percent, peak RSS), checks that
/// every figure is finite, prints the section's tables and writes its charts; the section only
/// measures and reports.
protocol BenchmarkSection: Sendable {
    /// Short name used by `--only` and as the key in results.json.
    var name: String { get }
    /// One line for `--list`.
    var summary: String { get }
    /// Whether `--quick` runs it when `--only` is not given.
    var runsInQuickMode: Bool { get }
    func run(_ context: BenchContext) async throws -> SectionResult
}

extension BenchmarkSection {
    var runsInQuickMode: Bool { true }
}

/// Every section, in the order a run goes through them.
enum SectionRegistry {
    static let all: [any BenchmarkSection] = [
        ColdStartSection(),
        RenderSection(),
        EncodeSection(),
        EncoderThreadsSection(),
        EngineContentSection(),
        AdherenceSection(),
        AgreementSection(),
        IdleSection(),
        DriveSection(),
        LinkSection(),
        SecuritySection(),
        MemorySection(),
    ]
}

/// What a section hands to every benchmark: the GL context, where things are, the sizes and the
/// optional peers.
struct BenchContext: Sendable {
    let render: RenderContext
    /// The package root (or bundle folder): holds assets/ and scripts/.
    let root: URL
    /// Where results, charts and images go.
    let out: URL
    let sizes: [FrameSize]
    let quick: Bool
    /// Styles besides day and night that the agreement section compares (`--agreement-style`).
    var agreementStyles: [URL] = []
    /// MapLibre Native through scripts/maplibre_render.py; nil when skipped (see `peerSkipReason`).
    let peer: MapLibrePeer?
    let peerSkipReason: String?
    /// ffmpeg, the independent decoder of our streams; nil when not installed.
    let ffmpeg: String?
    /// Whether a missing ffmpeg fails the decode checks instead of skipping them.
    let requireFFmpeg: Bool
    let verbose: Bool
    /// How long the process's first RenderContext took (the cold start section makes later ones).
    let firstContextMilliseconds: Double
    /// OpenH264's threads in the sessions (`--encoder-threads`).
    let encoderThreads: EncoderThreads

    var assets: URL { root.appendingPathComponent("assets") }
    /// The bundled Helsinki tiles every section draws.
    var tiles: URL { assets.appendingPathComponent("helsinki.pmtiles") }

    func style(_ name: String) -> URL { assets.appendingPathComponent("styles/\(name).json") }

    /// Quick mode's or full mode's count.
    func count(quick quickCount: Int, full: Int) -> Int { quick ? quickCount : full }

    func makeRenderer(style name: String = "day", size: FrameSize, camera: Camera) async throws -> MapRenderer {
        try await makeRenderer(style: style(name), size: size, camera: camera)
    }

    func makeRenderer(style url: URL, size: FrameSize, camera: Camera) async throws -> MapRenderer {
        try await MapRenderer(
            context: render, width: size.width, height: size.height,
            style: try Style(contentsOf: url),
            tiles: try openTileSource(at: tiles),
            fonts: try FontLibrary(directory: assets.appendingPathComponent("fonts")), camera: camera)
    }
}

/// A frame size such as 800x480.
struct FrameSize: Sendable, Hashable, CustomStringConvertible {
    var width: Int
    var height: Int
    var description: String { "\(width)x\(height)" }

    /// Parses "800x480,1280x720"; sizes must be even and between 16 and 4096.
    static func parseList(_ text: String) throws -> [FrameSize] {
        let sizes = try text.split(separator: ",").map { item -> FrameSize in
            let parts = item.split(separator: "x").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 2, (16...4096).contains(parts[0]), (16...4096).contains(parts[1]),
                  parts[0] % 2 == 0, parts[1] % 2 == 0 else {
                throw BenchError("bad size '\(item)': write WIDTHxHEIGHT, even numbers from 16 to 4096, e.g. 800x480")
            }
            return FrameSize(width: parts[0], height: parts[1])
        }
        guard !sizes.isEmpty else { throw BenchError("--sizes is empty; give e.g. 800x480,1280x720") }
        return sizes
    }
}

/// An error of the harness, with what was wrong and what to do.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
