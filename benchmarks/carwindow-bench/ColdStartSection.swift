import CarWindow
import CarWindowSystemSupport
import Foundation

/// From nothing to the first IDR handed to the sink, through a projection session, phase by
/// phase: a new GL context, the renderer (its shaders and render target), the first view's
/// tiles and label glyphs, the encoder, then the first picture drawn and encoded as an IDR.
struct ColdStartSection: BenchmarkSection {
    let name = "coldstart"
    let summary = "context to first IDR at the sink, per phase (goal: <= 300 ms at 800x480)"

    static let goalMilliseconds = 300.0
    /// The quick run's goal: the full goal with room for a loaded machine (reported, never failed).
    static let quickGoalMilliseconds = 600.0

    struct Phase {
        var name: String
        var milliseconds: Double
    }

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        var table = TextTable(title: "Cold start: a new context and session to the first IDR at the sink",
                              header: ["size", "context", "renderer + shaders", "tiles + glyphs", "encoder", "first draw",
                                       "IDR encode", "hand-over", "total ms"])
        var chart = StackedBarChart(title: "Cold start to the first IDR, per phase", unit: "ms")
        for size in context.sizes {
            let phases = try await measure(context, size: size)
            let total = phases.map(\.milliseconds).reduce(0, +)
            var entry = CaseResult(label: size.description)
            for phase in phases {
                entry.add("\(phase.name.replacingOccurrences(of: " ", with: "_"))_ms", phase.milliseconds, "ms", better: .lower)
            }
            entry.add("total_ms", total, "ms", better: .lower)
            result.cases.append(entry)
            table.rows.append([size.description] + phases.map { formatted($0.milliseconds, "%.1f") } + [formatted(total, "%.1f")])
            chart.bars.append((label: size.description, parts: phases.map { ($0.name, $0.milliseconds) }))
            if size == FrameSize(width: 800, height: 480) {
                let limit = context.quick ? Self.quickGoalMilliseconds : Self.goalMilliseconds
                result.checks.append(.goal(total <= limit, "coldstart \(size): first IDR within \(Int(limit)) ms",
                                             "\(formatted(total, "%.0f")) ms"))
            }
        }
        result.tables.append(table)
        result.chartDocuments.append((name: "coldstart-phases", svg: chart.svg()))
        result.notes.append("Each size starts from a new RenderContext, but not the process's first: that one took \(formatted(context.firstContextMilliseconds, "%.1f")) ms (EGL display and driver loading). On llvmpipe the shaders are compiled to machine code at the first draw that uses them (first draw), unless Mesa's on-disk shader cache (on by default; MESA_SHADER_CACHE_DISABLE=true turns it off) has them from an earlier run. Goal \(Int(Self.goalMilliseconds)) ms at 800x480; the quick run's goal is \(Int(Self.quickGoalMilliseconds)) ms. Reported, never failed: it moves with machine load.")
        return result
    }

    private func measure(_ context: BenchContext, size: FrameSize) async throws -> [Phase] {
        func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e6 }
        let camera = Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16, pitch: 45)
        let sink = CountingSink()
        // The data is opened before the clock starts: an engine has its tiles, style and fonts at hand.
        var configuration = ProjectionSessionConfiguration(
            tiles: try openTileSource(at: context.tiles), dayStyle: try Style(contentsOf: context.style("day")),
            fonts: try FontLibrary(directory: context.assets.appendingPathComponent("fonts")), camera: camera,
            makeSink: { _ in sink })
        configuration.name = "bench-coldstart"
        let start = now()
        let render = try await RenderContext()
        let contextMade = now()
        let session = ProjectionSession(configuration: configuration, context: render)
        try await session.connect(display: BenchContext.display(size))
        let connected = now()
        await session.preloadTiles(along: [camera], drawing: false)
        let tilesLoaded = now()
        try await session.startStreaming()
        let started = now()
        try await sink.waitForUnits(above: 0)
        let arrived = (sink.times.first ?? 0) * 1000
        let statistics = await session.statistics
        await session.close()
        await render.shutdown()
        let draw = statistics.renderTimes.first?.inMilliseconds ?? .nan
        let encode = statistics.encodeTimes.first?.inMilliseconds ?? .nan
        return [Phase(name: "context", milliseconds: contextMade - start),
                Phase(name: "renderer and shaders", milliseconds: connected - contextMade),
                Phase(name: "tiles and glyphs", milliseconds: tilesLoaded - connected),
                Phase(name: "encoder", milliseconds: started - tilesLoaded),
                Phase(name: "first draw", milliseconds: draw),
                Phase(name: "IDR encode", milliseconds: encode),
                Phase(name: "hand-over", milliseconds: max(arrived - started - draw - encode, 0))]
    }
}
