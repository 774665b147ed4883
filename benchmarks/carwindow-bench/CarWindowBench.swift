import ArgumentParser
import CarWindow
import CarWindowMap
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

@main
struct CarWindowBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "carwindow-bench",
        abstract: "Measures CarWindow (render, H.264) against MapLibre Native and ffmpeg libx264 in one run.",
        discussion: "Writes results.json, results.md and SVG charts to --out-dir. See benchmarks/README.md.")

    @Flag(help: "Fewer frames and 800x480 only (unless --sizes): under 2 minutes, with sanity checks, for CI.")
    var quick = false
    @Option(help: "Sizes to measure, comma-separated (default: 800x480,1280x720,1920x1080; quick: 800x480).")
    var sizes: String?
    @Option(help: "Sections to run, comma-separated (default: all; quick: those marked quick). --list shows them.")
    var only: String?
    @Option(help: "Folder of MapLibre glyph PBFs (<fontstack>/<range>.pbf) for the MapLibre Native peer; default $CARWINDOW_GLYPHS, else written from assets/fonts into --out-dir.")
    var glyphs: String?
    @Option(help: "Write the bundled fonts as MapLibre glyph PBFs into this folder (for scripts/maplibre_render.py --glyphs), then exit.")
    var writeGlyphs: String?
    @Option(help: "Python with mapli and pmtiles (Pillow optional: the PNG column of the render section), for the MapLibre Native peer.")
    var python = "python3"
    @Option(name: .customLong("agreement-style"),
            help: "Another MapLibre style to compare with MapLibre Native in the agreement section, over the bundled tiles (its sprite on both sides); repeatable.")
    var agreementStyles: [String] = []
    @Option(help: "OpenH264's threads in the sessions: auto (from the cores and the size) or 1-16. The threads section compares counts whatever this is.")
    var encoderThreads = "auto"
    @Option(help: "Where results.json, results.md, charts and images go.")
    var outDir = "benchmarks/results"
    @Flag(name: .customLong("require-ffmpeg"), help: "Fail (instead of skip) the decode and Y-PSNR checks when ffmpeg is missing.")
    var requireFFmpeg = false
    @Flag(help: "Print every frame time.")
    var verbose = false
    @Flag(help: "List the sections and exit.")
    var list = false
    @Flag(help: "Check the harness's own arithmetic, SVG writer and sampler, then exit (no GL needed).")
    var selfCheck = false
    @Flag(help: "Print the EGL platform and GL vendor, renderer and version the tests would get (key=value lines), then exit.")
    var glInfo = false

    func run() async throws {
        if selfCheck {
            guard SelfCheck.run() else { throw ExitCode(1) }
            return
        }
        if glInfo {
            // The same default chain as the tests' RenderContext(), so CI sees what they see.
            let context = try await RenderContext()
            let info = context.info
            print("platform=\(info.platform)\ndevice=\(info.device ?? "")\nvendor=\(info.vendor)\nrenderer=\(info.renderer)")
            print("version=\(info.version)\nsoftware=\(info.isSoftwareRenderer ? "yes" : "no")")
            print("dmabuf_import=\(context.importsDmaBufs ? "yes" : "no")")
            await context.shutdown()
            return
        }
        if list {
            for section in SectionRegistry.all {
                print("\(section.name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(section.summary)"
                      + (section.runsInQuickMode ? "" : " (not in --quick unless named)"))
            }
            return
        }
        if let writeGlyphs {
            let fonts = try Self.packageRoot().appendingPathComponent("assets/fonts")
            let folder = URL(fileURLWithPath: writeGlyphs).standardizedFileURL
            let files = try MapLibreGlyphExport.write(try FontLibrary(directory: fonts), to: folder)
            print("wrote \(files) glyph ranges of \(fonts.path) to \(folder.path)")
            return
        }
        let sections = try chosenSections()
        let frameSizes = try FrameSize.parseList(sizes ?? (quick ? "800x480" : "800x480,1280x720,1920x1080"))
        let root = try Self.packageRoot()
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let out = URL(fileURLWithPath: outDir, relativeTo: cwd).standardizedFileURL
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)

        let runStart = CPUTimes.now()
        let startedAt = ISO8601DateFormatter().string(from: Date())
        let sampler = ProcessSampler(intervalMilliseconds: 100)
        sampler.start()

        let contextStart = DispatchTime.now().uptimeNanoseconds
        let render = try await RenderContext()
        let firstContextMilliseconds = Double(DispatchTime.now().uptimeNanoseconds - contextStart) / 1e6
        let machine = MachineDescription.describe(render.info, root: root)
        let (peer, peerSkipReason) = MapLibrePeer.probe(
            python: python, glyphs: glyphs ?? ProcessInfo.processInfo.environment["CARWINDOW_GLYPHS"],
            fonts: root.appendingPathComponent("assets/fonts"), root: root, out: out)
        let extraStyles = try agreementStyles.map { path -> URL in
            let url = URL(fileURLWithPath: path, relativeTo: cwd).standardizedFileURL
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw ValidationError("--agreement-style \(path): no readable style file there")
            }
            return url
        }
        let context = BenchContext(render: render, root: root, out: out, sizes: frameSizes, quick: quick,
                                   agreementStyles: extraStyles, peer: peer,
                                   peerSkipReason: peerSkipReason, ffmpeg: findExecutable("ffmpeg"),
                                   requireFFmpeg: requireFFmpeg, verbose: verbose, firstContextMilliseconds: firstContextMilliseconds,
                                   encoderThreads: try threads())
        print("carwindow-bench \(quick ? "quick" : "full") run: sections \(sections.map(\.name).joined(separator: ", ")); sizes "
              + frameSizes.map(\.description).joined(separator: ", "))
        machine.lines.forEach { print("  " + $0) }
        if let peerSkipReason { print("  " + peerSkipReason) }
        if context.ffmpeg == nil { print("  ffmpeg not found: streams are not decoded and Y-PSNR is not measured") }
        if machine.softwareRenderer { print("  note: software GL renderer; figures are CPU-bound and move with machine load") }
        print()

        var results: [SectionResult] = []
        for section in sections {
            print("== \(section.name): \(section.summary)")
            var result: SectionResult
            do {
                let (measured, usage, wall) = try await ProcessUsage.measure { try await section.run(context) }
                result = measured
                result.process = usage
                result.wallSeconds = wall
            } catch {
                result = SectionResult(name: section.name)
                result.checks.append(Check(name: "\(section.name): ran to the end", status: .fail, detail: "\(error)"))
            }
            result.checks.append(Self.finiteFigures(&result))
            for document in result.chartDocuments {
                let file = "\(document.name).svg"
                try document.svg.write(to: out.appendingPathComponent(file), atomically: true, encoding: .utf8)
                result.charts.append(file)
            }
            for table in result.tables { print(table.plainText) }
            result.notes.forEach { print("note: \($0)") }
            if let process = result.process {
                print(String(format: "process: %.1f s wall, CPU %.0f%% (children %.0f%%), peak RSS %.0f MiB",
                             result.wallSeconds, process.cpuPercent, process.childrenCPUPercent, process.peakRSSMiB)
                      + (process.peakRSSIsPerSection ? "" : " (process-wide)"))
            }
            print()
            results.append(result)
        }
        await render.shutdown()

        let samples = sampler.stop()
        let memory = samples.isEmpty ? nil : MemorySummary(
            samples: samples.count, intervalMilliseconds: 100,
            rssMinMiB: Double(samples.map(\.rssBytes).min() ?? 0) / 1_048_576,
            rssMaxMiB: Double(samples.map(\.rssBytes).max() ?? 0) / 1_048_576,
            rssAtEndMiB: Double(samples.last?.rssBytes ?? 0) / 1_048_576)
        let checks = results.flatMap(\.checks)
        let failed = checks.filter { $0.status == .fail }
        let wall = CPUTimes.now().wall - runStart.wall
        let all = BenchResults(startedAt: startedAt, mode: quick ? "quick" : "full", arguments: Array(CommandLine.arguments.dropFirst()),
                               machine: machine, sections: results, memory: memory, wallSeconds: wall, passed: failed.isEmpty)
        try Report.write(all, tables: results.flatMap(\.tables), to: out)

        print("checks:")
        for check in checks { print("  \(check.status.rawValue.uppercased()) \(check.name): \(check.detail)") }
        if let memory {
            print(String(format: "memory: RSS %.0f..%.0f MiB over %d samples", memory.rssMinMiB, memory.rssMaxMiB, memory.samples))
        }
        print(String(format: "wall time %.1f s; results: ", wall) + out.appendingPathComponent("results.json").path)
        if !failed.isEmpty {
            print("carwindow-bench: \(failed.count) sanity check(s) failed: " + failed.map(\.name).joined(separator: "; "))
            throw ExitCode(1)
        }
    }

    private func threads() throws -> EncoderThreads {
        if encoderThreads == "auto" { return .automatic }
        guard let count = Int(encoderThreads), EncoderThreads.allowed.contains(count) else {
            throw ValidationError("--encoder-threads must be auto or 1...16; got '\(encoderThreads)'")
        }
        return .fixed(count)
    }

    private func chosenSections() throws -> [any BenchmarkSection] {
        guard let only else { return SectionRegistry.all.filter { !quick || $0.runsInQuickMode } }
        let names = only.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let known = SectionRegistry.all.map(\.name)
        if let unknown = names.first(where: { !known.contains($0) }) {
            throw ValidationError("unknown section '\(unknown)'; sections: \(known.joined(separator: ", "))")
        }
        return SectionRegistry.all.filter { names.contains($0.name) }
    }

    /// Replaces non-finite figures with null and fails the check naming them.
    private static func finiteFigures(_ result: inout SectionResult) -> Check {
        var bad: [String] = []
        for caseIndex in result.cases.indices {
            for figureIndex in result.cases[caseIndex].figures.indices {
                let figure = result.cases[caseIndex].figures[figureIndex]
                if let value = figure.value, !value.isFinite {
                    bad.append("\(result.cases[caseIndex].label) \(figure.name)")
                    result.cases[caseIndex].figures[figureIndex].value = nil
                }
            }
            for seriesIndex in result.cases[caseIndex].series.indices
            where result.cases[caseIndex].series[seriesIndex].values.contains(where: { !$0.isFinite }) {
                bad.append("\(result.cases[caseIndex].label) series \(result.cases[caseIndex].series[seriesIndex].name)")
                result.cases[caseIndex].series[seriesIndex].values.removeAll { !$0.isFinite }
            }
        }
        return .expect(bad.isEmpty, "\(result.name): no NaN or infinite figures",
                       bad.isEmpty ? "all finite" : "not finite: " + bad.joined(separator: ", "))
    }

    /// The folder holding assets/helsinki.pmtiles: $CARWINDOW_ASSETS's parent, else the working
    /// directory or one above it, else the executable's folder or one above it (a bundle).
    static func packageRoot() throws -> URL {
        let environment = ProcessInfo.processInfo.environment
        var candidates: [URL] = []
        if let assets = environment["CARWINDOW_ASSETS"], !assets.isEmpty {
            candidates.append(URL(fileURLWithPath: assets).standardizedFileURL.deletingLastPathComponent())
        }
        var directory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        for _ in 0..<6 { candidates.append(directory); directory.deleteLastPathComponent() }
        var executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 { candidates.append(executable); executable.deleteLastPathComponent() }
        if let root = candidates.first(where: {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("assets/helsinki.pmtiles").path)
        }) { return root }
        throw BenchError("cannot find assets/helsinki.pmtiles: run from the package (or bundle) folder or set CARWINDOW_ASSETS to the assets folder")
    }
}
