import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// Render time per frame along the Helsinki path, ours against MapLibre Native's, per size.
struct RenderSection: BenchmarkSection {
    let name = "render"
    let summary = "render ms per frame (p50, p99) along a pitched path, against MapLibre Native"

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        let frames = context.count(quick: 30, full: 60)
        var table = TextTable(title: "Render time per frame (glFinish, no readback), \(frames) frames",
                              header: ["size", "CarWindow ms mean (p50, p99)", "MapLibre Native ms mean (p50, p99)",
                                       "MapLibre PNG share <= ms", "ratio ours/theirs"])
        var chart = LineChart(title: "Render time per frame: share of frames at or below",
                              xLabel: "milliseconds per frame", yLabel: "share of frames")
        if let reason = context.peerSkipReason { result.notes.append(reason) }

        for (index, size) in context.sizes.enumerated() {
            let path = CameraPath.helsinki(frames: frames)
            let renderer = try await context.makeRenderer(size: size, camera: path[0])
            await renderer.setOverlays(MapOverlays(showsControls: false))
            // Load every tile of the path and draw it once, so the timed pass is steady state.
            for camera in path { await renderer.setCamera(camera); _ = await renderer.renderWhenLoaded() }
            await renderer.finish()
            var times: [Double] = []
            for camera in path {
                await renderer.setCamera(camera)
                let start = DispatchTime.now().uptimeNanoseconds
                await renderer.renderFrame()
                await renderer.finish()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            if context.verbose { print("\(size) frame ms:", times.map { String(format: "%.1f", $0) }.joined(separator: " ")) }
            let ours = Summary(times)
            var entry = CaseResult(label: size.description)
            entry.add("frames", Double(times.count), "frames")
            entry.add("carwindow_ms_mean", ours.mean, "ms", better: .lower)
            entry.add("carwindow_ms_p50", ours.p50, "ms", better: .lower)
            entry.add("carwindow_ms_p99", ours.p99, "ms", better: .lower)
            entry.series.append(Series(name: "carwindow_ms", unit: "ms", values: times))
            let color = LineChart.palette[index % LineChart.palette.count]
            chart.lines.append(.init(name: "CarWindow \(size)", points: cdfPoints(times), color: color))
            result.checks.append(.expect(times.count == frames && times.allSatisfy { $0.isFinite && $0 > 0 },
                                         "render \(size): \(frames) frames timed",
                                         "\(times.count) frames, all finite and positive: \(times.allSatisfy { $0.isFinite && $0 > 0 })"))

            var row = [size.description, "\(formatted(ours.mean)) (\(formatted(ours.p50)), \(formatted(ours.p99)))", "skipped", "-", "-"]
            if let peer = context.peer {
                let timings = try peer.timePath(path, size: size, style: context.style("day"))
                let theirs = Summary(timings.map(\.total)), png = Summary(timings.compactMap(\.png))
                entry.add("maplibre_ms_mean", theirs.mean, "ms", better: .lower)
                entry.add("maplibre_ms_p50", theirs.p50, "ms", better: .lower)
                entry.add("maplibre_ms_p99", theirs.p99, "ms", better: .lower)
                // Without Pillow next to mapli the peer cannot estimate its PNG share: no figure.
                if png.count > 0 { entry.add("maplibre_png_ms_upper_bound", png.mean, "ms") }
                entry.add("ratio_mean", ours.mean / theirs.mean, "ratio", better: .lower)
                entry.series.append(Series(name: "maplibre_ms", unit: "ms", values: timings.map(\.total)))
                chart.lines.append(.init(name: "MapLibre \(size)", points: cdfPoints(timings.map(\.total)), color: color, dash: "6 4"))
                row[2] = "\(formatted(theirs.mean)) (\(formatted(theirs.p50)), \(formatted(theirs.p99)))"
                row[3] = png.count > 0 ? formatted(png.mean) : "-"
                row[4] = formatted(ours.mean / theirs.mean)
            }
            table.rows.append(row)
            result.cases.append(entry)
        }
        result.tables.append(table)
        result.chartDocuments.append((name: "render-frame-time-cdf", svg: chart.svg()))
        return result
    }
}
