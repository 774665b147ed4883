import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import CarWindowSinks
import CarWindowSystemSupport

/// Timings of one run of ``EncodePipeline``.
package struct PipelineReport: Sendable {
    /// Frames encoded.
    package var frames = 0
    /// Bytes of all access units together.
    package var bytes = 0
    /// Access units that hold an IDR picture.
    package var keyframes = 0
    /// Wall time of the whole run.
    package var wallTime = Duration.zero
    /// Per frame: time on the render thread to draw it, convert it and start its readback.
    package var renderTimes: [Duration] = []
    /// Per frame: time in the encoder.
    package var encodeTimes: [Duration] = []
    /// Per frame: from setting its camera to its access unit being ready.
    package var latencies: [Duration] = []
    /// Bytes of each access unit, in order.
    package var accessUnitBytes: [Int] = []

    /// Frames per second over the whole run.
    package var framesPerSecond: Double { wallTime > .zero ? Double(frames) / wallTime.inSeconds : 0 }
}

/// Render -> NV12 -> encode, pipelined: while the encoder thread encodes frame N, the render
/// thread draws frame N+1 and the readback of N+1 overlaps the collection of N.
///
/// ```
/// render thread:  draw N | convert N, read N -> PBO[N%2] | draw N+1 | ... | collect N from PBO
/// encode thread:                                   encode N-1     |       encode N
/// ```
package struct EncodePipeline: Sendable {
    /// Draws each frame and converts it to NV12.
    package let renderer: MapRenderer
    /// Encodes the frames; its settings give the frame rate and sample range.
    package let encoder: EncoderStage

    /// Makes a pipeline from a renderer and an encoder stage set up for the renderer's size.
    package init(renderer: MapRenderer, encoder: EncoderStage) {
        self.renderer = renderer
        self.encoder = encoder
    }

    /// Encodes one frame per camera at the encoder's frame rate (presentation times advance by
    /// 1/fps); `forceIDR` frames are asked to be IDR pictures. `output` gets each access unit in
    /// order. Tiles are loaded before the first frame so timings are steady-state ones.
    package func run(cameras: [Camera], overlays: MapOverlays? = nil, forceIDR: Set<Int> = [],
                    output: @Sendable (AccessUnit) throws -> Void) async throws -> PipelineReport {
        var report = PipelineReport()
        guard let first = cameras.first else { return report }
        if let overlays { await renderer.setOverlays(overlays) }
        // Every tenth camera, and the last, is enough to load the tiles along a path.
        for index in Array(stride(from: 0, to: cameras.count, by: 10)) + [cameras.count - 1] {
            await renderer.setCamera(cameras[index])
            _ = await renderer.renderWhenLoaded()
        }
        await renderer.setCamera(first)
        if renderer.context.info.platform == .gbm, let planes = await encoder.exportedSurface() {
            return try await runWithoutCopies(cameras: cameras, planes: planes, forceIDR: forceIDR, output: output)
        }
        let fps = encoder.settings.framesPerSecond
        let width = await renderer.width, height = await renderer.height
        let fullRange = encoder.settings.fullRange
        var spare: [NV12Frame] = [NV12Frame(width: width, height: height, fullRange: fullRange),
                                  NV12Frame(width: width, height: height, fullRange: fullRange)]
        var startTimes = [UInt64](repeating: 0, count: cameras.count)
        var inflight: Task<(AccessUnit, NV12Frame, Duration), Error>?
        let runStart = DispatchTime.now().uptimeNanoseconds

        func finish(_ task: Task<(AccessUnit, NV12Frame, Duration), Error>) async throws {
            let (unit, frame, encodeTime) = try await task.value
            let now = DispatchTime.now().uptimeNanoseconds
            report.latencies.append(.nanoseconds(now - startTimes[unit.frameNumber]))
            report.encodeTimes.append(encodeTime)
            report.accessUnitBytes.append(unit.data.count)
            report.bytes += unit.data.count
            report.frames += 1
            if unit.isKeyframe { report.keyframes += 1 }
            spare.append(frame)
            try output(unit)
        }

        for index in 0...cameras.count {
            if index < cameras.count {
                startTimes[index] = DispatchTime.now().uptimeNanoseconds
                await renderer.setCamera(cameras[index])
                await renderer.renderFrame()
                try await renderer.convertToNV12(fullRange: fullRange, slot: index & 1)
                report.renderTimes.append(.nanoseconds(DispatchTime.now().uptimeNanoseconds - startTimes[index]))
            }
            guard index > 0 else { continue }
            let previous = index - 1
            guard let frame = await renderer.collectNV12(slot: previous & 1, into: spare.removeLast()) else {
                throw EncoderError.frameMismatch("the NV12 readback of frame \(previous) was not available")
            }
            if let inflight { try await finish(inflight) }
            let encoder = self.encoder
            let idr = forceIDR.contains(previous)
            inflight = Task {
                let start = DispatchTime.now().uptimeNanoseconds
                var (unit, returned) = try await encoder.encode(frame, presentationTime: .seconds(Double(previous) / fps), forceIDR: idr)
                unit.frameNumber = previous
                return (unit, returned, .nanoseconds(DispatchTime.now().uptimeNanoseconds - start))
            }
        }
        if let inflight { try await finish(inflight) }
        report.wallTime = .nanoseconds(DispatchTime.now().uptimeNanoseconds - runStart)
        return report
    }

    /// Zero copy (GL on GBM, VA-API): each frame is converted straight into the encoder's input
    /// surface and encoded from there. One surface, so frames go one after another.
    private func runWithoutCopies(cameras: [Camera], planes: DMABufPlanes, forceIDR: Set<Int>,
                                  output: @Sendable (AccessUnit) throws -> Void) async throws -> PipelineReport {
        var report = PipelineReport()
        let fps = encoder.settings.framesPerSecond, fullRange = encoder.settings.fullRange
        let runStart = DispatchTime.now().uptimeNanoseconds
        for (index, camera) in cameras.enumerated() {
            let start = DispatchTime.now().uptimeNanoseconds
            await renderer.setCamera(camera)
            await renderer.renderFrame()
            try await renderer.convertToNV12(into: planes, fullRange: fullRange)
            let drawn = DispatchTime.now().uptimeNanoseconds
            var unit = try await encoder.encodeExportedSurface(presentationTime: .seconds(Double(index) / fps),
                                                               forceIDR: forceIDR.contains(index) || index == 0)
            unit.frameNumber = index
            let done = DispatchTime.now().uptimeNanoseconds
            report.renderTimes.append(.nanoseconds(drawn - start))
            report.encodeTimes.append(.nanoseconds(done - drawn))
            report.latencies.append(.nanoseconds(done - start))
            report.accessUnitBytes.append(unit.data.count)
            report.bytes += unit.data.count
            report.frames += 1
            if unit.isKeyframe { report.keyframes += 1 }
            try output(unit)
        }
        report.wallTime = .nanoseconds(DispatchTime.now().uptimeNanoseconds - runStart)
        return report
    }
}
