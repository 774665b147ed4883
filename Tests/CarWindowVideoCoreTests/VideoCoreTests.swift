import Foundation
import Glibc
import Testing
@testable import CarWindowVideoCore
@testable import CarWindowTestSupport

/// Frames as the converters and encoders expect them: coded sizes in whole macroblocks, planes
/// laid out as NV12 with tight rows, black in the range the frame says.
@Suite struct NV12FrameTests {
    @Test(arguments: [(800, 480, 800, 480), (854, 480, 864, 480), (320, 190, 320, 192), (2, 2, 16, 16)])
    func codedSizesAreWholeMacroblocks(width: Int, height: Int, codedWidth: Int, codedHeight: Int) {
        let frame = NV12Frame(width: width, height: height)
        #expect(frame.width == width && frame.height == height)
        #expect(frame.codedWidth == codedWidth && frame.codedHeight == codedHeight)
        #expect(frame.luma.count == codedWidth * codedHeight)
        #expect(frame.chroma.count == codedWidth * codedHeight / 2)
    }

    @Test func blackIsSixteenInLimitedRangeAndZeroInFullRange() {
        let limited = NV12Frame(width: 64, height: 32)
        let full = NV12Frame(width: 64, height: 32, fullRange: true)
        #expect(Set(limited.luma) == [16] && Set(full.luma) == [0])
        #expect(Set(limited.chroma) == [128] && Set(full.chroma) == [128], "no colour in either range")
        #expect(!limited.fullRange && full.fullRange)
    }

    @Test func alignmentRoundsUpToSixteen() {
        #expect([0, 1, 15, 16, 17, 479, 480, 1080].map(NV12Frame.align16) == [0, 16, 16, 16, 32, 480, 480, 1088])
    }
}

@Suite struct VideoValueTests {
    @Test func sizesPrintAsWidthByHeightAndCompareBySides() {
        #expect(VideoSize(width: 800, height: 480).description == "800x480")
        #expect(VideoSize(width: 800, height: 480) == VideoSize(width: 800, height: 480))
        #expect(VideoSize(width: 800, height: 480) != VideoSize(width: 480, height: 800))
    }

    @Test func durationsConvertToSecondsAndMilliseconds() {
        #expect(Duration.seconds(2).inSeconds == 2)
        #expect(Duration.milliseconds(1500).inSeconds == 1.5)
        #expect(Duration.microseconds(250).inMilliseconds == 0.25)
        #expect(abs(Duration.seconds(1.0 / 15).inSeconds - 1.0 / 15) < 1e-15)
        #expect(Duration.seconds(-3).inSeconds == -3)
    }

    @Test func drmFourCCsAreDrmFourccHsCodes() {
        // drm_fourcc.h: DRM_FORMAT_R8 = fourcc_code('R', '8', ' ', ' ') = 0x20203852.
        #expect(DRMFormat.r8 == 0x2020_3852)
        #expect(DRMFormat.gr88 == 0x3838_5247)
    }

    @Test func exportedPlanesCloseEachDescriptorOnce() throws {
        var pipeEnds: [Int32] = [0, 0]
        try #require(pipe(&pipeEnds) == 0)
        let luma = DMABufPlane(drmFourCC: DRMFormat.r8, width: 64, height: 32, fileDescriptor: pipeEnds[0],
                               offset: 0, pitch: 64, modifier: DRMFormat.invalidModifier)
        var chroma = luma
        chroma.drmFourCC = DRMFormat.gr88
        chroma.width = 32
        chroma.height = 16
        chroma.offset = 64 * 32
        let planes = DMABufPlanes(luma: luma, chroma: chroma, fileDescriptors: [pipeEnds[0]])
        planes.closeFileDescriptors()
        #expect(fcntl(pipeEnds[0], F_GETFD) == -1 && errno == EBADF, "the shared descriptor is closed")
        #expect(fcntl(pipeEnds[1], F_GETFD) != -1, "a descriptor the planes do not list is left alone")
        close(pipeEnds[1])
    }
}

/// The executor every GL call runs on: one OS thread per render thread, jobs in order, and
/// work that arrives after `stop()` still runs instead of waiting forever.
@Suite struct RenderThreadTests {
    actor OnThread {
        nonisolated let thread: RenderThread
        nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
        var order: [Int] = []
        init(_ thread: RenderThread) { self.thread = thread }
        func record(_ value: Int) -> Bool {
            order.append(value)
            return thread.isCurrent
        }
    }

    @Test func anActorOnARenderThreadRunsThereInOrder() async {
        let thread = RenderThread(name: "carwindow.vctest")
        let actor = OnThread(thread)
        var allOnThread = true
        for value in 0..<100 { allOnThread = await actor.record(value) && allOnThread }
        #expect(allOnThread)
        #expect(await actor.order == Array(0..<100))
        #expect(!thread.isCurrent, "the test itself is not on the render thread")
        thread.stop()
    }

    @Test func workAfterStopRunsOnAFreshThreadThatEndsAgain() async {
        let thread = RenderThread(name: "carwindow.vctes2")
        let actor = OnThread(thread)
        _ = await actor.record(1)
        thread.stop()
        // A renderer's isolated deinit after its context shut down arrives like this.
        #expect(await actor.record(2), "the late job ran on the executor's thread")
        #expect(await actor.order == [1, 2])
        #expect(await eventually { RenderThread.running(named: "carwindow.vctes2") == 0 }, "the fresh thread ended")
    }
}
