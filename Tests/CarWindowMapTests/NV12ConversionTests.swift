import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// The GPU conversion against BT.601 computed on the CPU from the RGBA readback of the same frame.
@Suite(.serialized) struct NV12ConversionTests {
    static func expectedLuma(_ r: UInt8, _ g: UInt8, _ b: UInt8, fullRange: Bool) -> Double {
        let y = 0.299 * Double(r) + 0.587 * Double(g) + 0.114 * Double(b)
        return fullRange ? y : 16 + y * 219 / 255
    }

    @Test(arguments: [(800, 480, false), (854, 480, false), (640, 360, true)])
    func planesMatchBT601(width: Int, height: Int, fullRange: Bool) async throws {
        let (context, renderer) = try await makeRenderer(width: width, height: height,
                                                         camera: Camera(center: helsinki, zoom: 16, bearing: 20, pitch: 40))
        _ = await renderer.renderWhenLoaded()
        let rgba = await renderer.readPixels()
        let frame = try await renderer.readNV12(fullRange: fullRange)
        await context.shutdown()
        #expect(frame.codedWidth == NV12Frame.align16(width) && frame.codedHeight == NV12Frame.align16(height))
        #expect(frame.luma.count == frame.codedWidth * frame.codedHeight)
        #expect(frame.chroma.count == frame.luma.count / 2)

        // Luma: every visible pixel within one level (8-bit rounding on the GPU).
        var worstLuma = 0.0
        for y in 0..<height {
            for x in 0..<width {
                let p = rgba.pixel(x: x, y: y)
                let expected = Self.expectedLuma(p.x, p.y, p.z, fullRange: fullRange)
                worstLuma = max(worstLuma, abs(Double(frame.luma[y * frame.codedWidth + x]) - expected))
            }
        }
        #expect(worstLuma <= 1.01, "largest luma error \(worstLuma)")

        // Chroma of a few blocks: Cb/Cr of the 2x2 mean.
        var worstChroma = 0.0
        for (bx, by) in [(0, 0), (width / 4, height / 4), (width / 2 - 1, height / 2 - 1)] {
            var mean = SIMD3<Double>.zero
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let p = rgba.pixel(x: bx * 2 + dx, y: by * 2 + dy)
                mean += SIMD3(Double(p.x), Double(p.y), Double(p.z)) / 4
            }
            let scale = fullRange ? 1.0 : 224.0 / 255
            let cb = 128 + scale * (-0.168736 * mean.x - 0.331264 * mean.y + 0.5 * mean.z)
            let cr = 128 + scale * (0.5 * mean.x - 0.418688 * mean.y - 0.081312 * mean.z)
            let i = by * frame.codedWidth + bx * 2
            worstChroma = max(worstChroma, abs(Double(frame.chroma[i]) - cb), abs(Double(frame.chroma[i + 1]) - cr))
        }
        #expect(worstChroma <= 1.01, "largest chroma error \(worstChroma)")

        // Padding repeats the last visible column and row, so the encoder's cropped area is calm.
        if frame.codedWidth > width {
            let row = 10 * frame.codedWidth
            #expect(frame.luma[row + frame.codedWidth - 1] == frame.luma[row + width - 1])
        }
    }

    @Test func pipelinedReadbackReturnsTheFrameItStarted() async throws {
        let (context, renderer) = try await makeRenderer(width: 320, height: 240)
        _ = await renderer.renderWhenLoaded()
        try await renderer.convertToNV12(slot: 0)
        let first = try await renderer.readNV12()        // same picture through slot 0 again
        await renderer.setCamera(Camera(center: helsinki, zoom: 14))
        _ = await renderer.renderWhenLoaded()
        try await renderer.convertToNV12(slot: 1)
        let second = await renderer.collectNV12(slot: 1, into: NV12Frame(width: 320, height: 240))
        #expect(await renderer.collectNV12(slot: 1, into: NV12Frame(width: 320, height: 240)) == nil,
                "a slot is collected once")
        await context.shutdown()
        let collected = try #require(second)
        #expect(collected.luma != first.luma, "the second slot holds the second view")
    }

    /// Sum of the differences between horizontal and vertical neighbours in the visible luma:
    /// the picture's fine detail.
    static func detail(_ frame: NV12Frame) -> Double {
        var sum = 0.0
        for y in 0..<(frame.height - 1) {
            for x in 0..<(frame.width - 1) {
                let here = Double(frame.luma[y * frame.codedWidth + x])
                sum += abs(here - Double(frame.luma[y * frame.codedWidth + x + 1]))
                sum += abs(here - Double(frame.luma[(y + 1) * frame.codedWidth + x]))
            }
        }
        return sum
    }

    /// A stream whose bitrate cannot carry its size keeps its size and loses detail: half the
    /// resolution is the same picture (mean luma within 2 levels) with far less fine detail, and
    /// three quarters lies between.
    @Test func aReducedResolutionKeepsThePictureAndLosesItsDetail() async throws {
        let (context, renderer) = try await makeRenderer(width: 640, height: 384,
                                                         camera: Camera(center: helsinki, zoom: 16, bearing: 20, pitch: 40))
        _ = await renderer.renderWhenLoaded()
        var frames: [NV12Frame] = []
        for scale in [1.0, 0.75, 0.5] {
            try await renderer.convertToNV12(fullRange: false, slot: 0, resolutionScale: scale)
            frames.append(try #require(await renderer.collectNV12(slot: 0, into: NV12Frame(width: 640, height: 384))))
        }
        // Full detail again after a reduced picture: the reduction leaves the map's own picture alone.
        try await renderer.convertToNV12(fullRange: false, slot: 1, resolutionScale: 1)
        let again = try #require(await renderer.collectNV12(slot: 1, into: NV12Frame(width: 640, height: 384)))
        await context.shutdown()
        #expect(again.luma == frames[0].luma)
        func mean(_ frame: NV12Frame) -> Double {
            var sum = 0.0
            for y in 0..<frame.height { for x in 0..<frame.width { sum += Double(frame.luma[y * frame.codedWidth + x]) } }
            return sum / Double(frame.width * frame.height)
        }
        let details = frames.map(Self.detail)
        for frame in frames.dropFirst() {
            #expect(abs(mean(frame) - mean(frames[0])) <= 2, "mean luma \(mean(frame)) against \(mean(frames[0]))")
        }
        #expect(details[1] < 0.85 * details[0], "detail \(details)")
        #expect(details[2] < 0.7 * details[0], "detail \(details)")
        #expect(details[2] < details[1], "detail \(details)")
    }
}
