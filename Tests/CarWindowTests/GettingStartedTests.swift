import Foundation
import Testing
import CarWindow
@testable import CarWindowTestSupport

/// The Getting Started article's two programs, written against `import CarWindow` alone: the
/// umbrella re-exports every module they name, and what the article promises happens.
@Suite struct GettingStartedTests {
    @Test func theSnapshotProgramDrawsAMapWithLabelsIntoAPNG() async throws {
        let tiles = try PMTilesSource(url: TestPaths.tiles)
        let style = try Style(contentsOf: TestPaths.style("day"))
        let fonts = try FontLibrary(directory: TestPaths.fonts)
        let context = try await RenderContext()
        let renderer = try await MapRenderer(
            context: context, width: 640, height: 384, style: style, tiles: tiles, fonts: fonts,
            camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 15.5, bearing: 30))
        let report = await renderer.renderWhenLoaded()
        let image = await renderer.readPixels()
        await context.shutdown()
        let folder = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let png = folder.appendingPathComponent("snapshot.png")
        try image.writePNG(to: png)
        #expect(report.tilesDrawn > 0 && report.labels > 0, "\(report.tilesDrawn) tiles, \(report.labels) labels")
        #expect(image.width == 640 && image.height == 384)
        #expect(try Data(contentsOf: png).prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
    }

    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func theStreamingProgramWritesAnMP4ThatDecodes() async throws {
        let folder = try MP4Checks.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let mp4 = folder.appendingPathComponent("drive.mp4")
        let here = GeoCoordinate(latitude: 60.1699, longitude: 24.9415)
        let shared = SharedTileCache(source: try openTileSource(at: TestPaths.tiles))
        var configuration = ProjectionSessionConfiguration(
            tiles: shared, dayStyle: try Style(contentsOf: TestPaths.style("day")), fonts: try FontLibrary(directory: TestPaths.fonts),
            camera: Camera(center: here, zoom: 16, pitch: 45)
        ) { _ throws(SinkError) in
            try MP4FileSink(url: mp4)
        }
        configuration.nightStyle = try Style(contentsOf: TestPaths.style("night"))
        configuration.name = "console"
        let context = try await RenderContext()
        let session = ProjectionSession(configuration: configuration, context: context)
        let events = session.events
        let states = Task {
            var seen: [ProjectionSessionState] = []
            for await event in events {
                if case .stateChanged(_, let state) = event { seen.append(state) }
            }
            return seen
        }
        try await session.connect(display: HeadUnitDisplay(size: VideoSize(width: 640, height: 384)))
        try await session.startStreaming()
        await session.setCamera(Camera(center: here, zoom: 17, pitch: 45), transition: .animated(duration: .seconds(0.5)))
        await session.setVehicle(VehicleMarker(coordinate: here, heading: 30))
        await session.setRoute([here, GeoCoordinate(latitude: 60.1710, longitude: 24.9440)])
        await session.setRouteProgress(20)
        await session.setAppearance(.night)
        // The animation, the refinements of the still map after it, and keep-alives.
        #expect(await eventually { await session.statistics.framesSent >= 5 })
        await session.close()
        await context.shutdown()
        let sent = await session.statistics.framesSent
        #expect(await states.value == [.ready, .streaming, .stopping, .disconnected])
        let frames = try MP4Checks.probedFrames(mp4)
        #expect(frames.count == sent, "every picture sent is in the file")
        #expect(frames.allSatisfy { $0.width == 640 && $0.height == 384 })
        #expect(try MP4Checks.decodeErrors(mp4).isEmpty)
    }
}
