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
        // Each size twice: from an empty program cache (every shader compiled, as a first start)
        // and again from what that start stored (as every later start).
        let cacheFolder = FileManager.default.temporaryDirectory
            .appendingPathComponent("carwindow-bench-programs-\(ProcessInfo.processInfo.processIdentifier)", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: cacheFolder) }
        for size in context.sizes {
            try? FileManager.default.removeItem(at: cacheFolder)
            let programs = try ProgramBinaryCache(directory: cacheFolder)
            for warm in [false, true] {
                let phases = try await measure(context, size: size, programs: programs)
                let total = phases.map(\.milliseconds).reduce(0, +)
                let label = warm ? "\(size) warm" : size.description
                var entry = CaseResult(label: label)
                for phase in phases {
                    entry.add("\(phase.name.replacingOccurrences(of: " ", with: "_"))_ms", phase.milliseconds, "ms", better: .lower)
                }
                entry.add("total_ms", total, "ms", better: .lower)
                result.cases.append(entry)
                table.rows.append([label] + phases.map { formatted($0.milliseconds, "%.1f") } + [formatted(total, "%.1f")])
                chart.bars.append((label: label, parts: phases.map { ($0.name, $0.milliseconds) }))
                if size == FrameSize(width: 800, height: 480), !warm {
                    let limit = context.quick ? Self.quickGoalMilliseconds : Self.goalMilliseconds
                    result.checks.append(.goal(total <= limit, "coldstart \(size): first IDR within \(Int(limit)) ms",
                                                 "\(formatted(total, "%.0f")) ms"))
                }
            }
        }
        result.tables.append(table)
        result.chartDocuments.append((name: "coldstart-phases", svg: chart.svg()))
        result.notes.append("Each size starts from a new RenderContext, but not the process's first: that one took \(formatted(context.firstContextMilliseconds, "%.1f")) ms (EGL display and driver loading). On llvmpipe the shaders are compiled to machine code at the first draw that uses them (first draw), unless Mesa's on-disk shader cache (on by default; MESA_SHADER_CACHE_DISABLE=true turns it off) has them from an earlier run. Each size runs twice: from an empty GL program cache, then ('warm') linking every program from the binaries the first run stored, as a second process would. Goal \(Int(Self.goalMilliseconds)) ms at 800x480; the quick run's goal is \(Int(Self.quickGoalMilliseconds)) ms. Reported, never failed: it moves with machine load.")
        return result
    }

    private func measure(_ context: BenchContext, size: FrameSize, programs: ProgramBinaryCache) async throws -> [Phase] {
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
        let render = try await RenderContext(programCache: programs)
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
