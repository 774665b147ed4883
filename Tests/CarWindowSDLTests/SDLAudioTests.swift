import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowProjection
@testable import CarWindowSDLProtocol
@testable import CarWindowSDL
@testable import CarWindowSDLTesting
@testable import CarWindowTestSupport

/// Guidance prompts on the head unit's audio service.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SDLAudioTests {
    @Test func aPromptPlaysInTheHeadUnitsFormatAndDecodes() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: SDLHeadUnitStateTests.small)
        #expect(await eventually { await rig.link.connection.isAudioAllowed })
        let chime = AudioPrompt.chime()
        let outcome = await rig.link.prompts.play(chime)
        #expect(outcome == .played)
        let expected = SDLPCMFormat.standard.encode(chime.samples, rate: chime.samplesPerSecond)
        // Written before `play` returned; the head unit reads it in its own time.
        let received = try #require(await rig.simulator.wait(timeout: hangGuard) { $0.audio.count >= expected.count })
        #expect(received.audioStarts == 1 && received.audio == expected, "\(received.audio.count) of \(expected.count) bytes")

        // How far ahead of its playing time each piece arrived: bounded by the player's lead.
        if let first = received.audioMessages.first {
            var bytes = 0, lead = 0.0
            for message in received.audioMessages {
                lead = max(lead, Double(bytes) / Double(SDLPCMFormat.standard.bytesPerSecond) - (message.time - first.time))
                bytes += message.bytes
            }
            print("audio: \(received.audioMessages.count) messages, at most \(Int(lead * 1000)) ms ahead of playing time")
        }
        if FFmpegTool.isAvailable {
            // An independent decoder reads what the head unit received as 16 kHz 16-bit PCM.
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("cw-\(UUID().uuidString).pcm")
            try Data(received.audio).write(to: url)
            defer { try? FileManager.default.removeItem(at: url) }
            let probe = try FFmpegTool.run("ffprobe", ["-v", "error", "-f", "s16le", "-ar", "16000", "-ac", "1",
                                                       "-show_entries", "format=duration", "-of", "csv=p=0", url.path])
            let seconds = Double(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(probe.status == 0 && seconds.map { abs($0 - 0.44) < 0.01 } == true, "\(probe.stderr) \(String(describing: seconds))")
        }
        await rig.close()
        #expect(await rig.simulator.snapshot().audioEnds == 1, "the audio service is ended on stop")
    }

    @Test func anEightBitHeadUnitGetsEightBitPCMAtItsRate() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: SDLHeadUnitStateTests.small) {
            $0.pcmSamplingRate = "8KHZ"
            $0.pcmBitsPerSample = "8_BIT"
        }
        #expect(await eventually { await rig.link.connection.isAudioAllowed })
        #expect(await rig.link.connection.headUnitPCMFormat == SDLPCMFormat(samplesPerSecond: 8_000, bitsPerSample: 8))
        #expect(await rig.link.prompts.play(.chime()) == .played)
        // 0.44 s at 8000 one-byte samples a second, centred on 128.
        let audio = try #require(await rig.simulator.wait(timeout: hangGuard) { $0.audio.count >= 3_520 }).audio
        #expect(audio.count == 3_520)
        #expect(audio.prefix(10).allSatisfy { abs(Int($0) - 128) < 40 })
        await rig.close()
    }

    @Test func noPromptPlaysWhileTheHeadUnitDoesNotPlayTheAppsAudio() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: SDLHeadUnitStateTests.small) {
            $0.initialStatuses = [SDLHMIStatus(hmiLevel: .full, audioStreamingState: "NOT_AUDIBLE", videoStreamingState: .streamable)]
        }
        #expect(await eventually { await rig.session.state == .streaming })
        let outcome = await rig.link.prompts.play(.chime())
        if case .notAudible = outcome {} else { Issue.record("outcome \(outcome)") }
        #expect(await rig.simulator.snapshot().audioStarts == 0)
        await rig.close()
    }

    @Test func aPromptIsCutWhenTheAppStopsBeingAudible() async throws {
        let rig = try await SDLProjectionLinkTests.rig(capability: SDLHeadUnitStateTests.small)
        #expect(await eventually { await rig.link.connection.isAudioAllowed })
        let long = AudioPrompt(samples: [Float](repeating: 0.1, count: 16_000 * 4), samplesPerSecond: 16_000)
        let playing = Task { await rig.link.prompts.play(long) }
        #expect(await rig.simulator.wait(timeout: hangGuard) { $0.audio.count >= 6_400 } != nil)
        try await rig.simulator.setHMIStatus(SDLHMIStatus(hmiLevel: .full, audioStreamingState: "NOT_AUDIBLE",
                                                          videoStreamingState: .streamable))
        #expect(await playing.value == .interrupted)
        // The service is ended as soon as the level changes, in its own time.
        let received = try #require(await rig.simulator.wait(timeout: hangGuard) { $0.audioEnds >= 1 })
        #expect(received.audio.count < 128_000 && received.audioEnds == 1, "\(received.audio.count) bytes, \(received.audioEnds) ends")
        await rig.close()
    }

    @Test func wavFilesAndResamplingConvert() throws {
        // A 4-sample 16-bit stereo WAV at 8 kHz, as sox writes one.
        var wav: [UInt8] = Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WAVE".utf8)
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8((v >> ($0 * 8)) & 0xFF) } }
        func le16(_ v: Int) -> [UInt8] { (0..<2).map { UInt8((v >> ($0 * 8)) & 0xFF) } }
        wav += Array("fmt ".utf8) + le32(16) + le16(1) + le16(2) + le32(8_000) + le32(32_000) + le16(4) + le16(16)
        let frames: [(Int, Int)] = [(16384, 16384), (-16384, -16384), (0, 32767), (0, -32768)]
        wav += Array("data".utf8) + le32(frames.count * 4)
        for (left, right) in frames { wav += le16(left & 0xFFFF) + le16(right & 0xFFFF) }
        let prompt = try #require(AudioPrompt(wav: wav))
        #expect(prompt.samplesPerSecond == 8_000 && prompt.samples.count == 4)
        #expect(abs(prompt.samples[0] - 0.5) < 0.001 && abs(prompt.samples[1] + 0.5) < 0.001 && abs(prompt.samples[2] - 0.5) < 0.001)
        #expect(AudioPrompt(wav: Array("RIFF....WAVE".utf8)) == nil)
        // Every cut of a good file and random changes to it read as some prompt or none, never a trap.
        var generator = SplitMix64(seed: 14)
        for length in 0...wav.count { _ = AudioPrompt(wav: Array(wav.prefix(length))) }
        for _ in 0..<2_000 {
            var changed = wav
            for _ in 0..<3 { changed[Int(generator.next() % UInt64(changed.count))] = UInt8(truncatingIfNeeded: generator.next()) }
            _ = AudioPrompt(wav: changed)
        }
        #expect(AudioPrompt(wav: [UInt8](repeating: 0, count: 3)) == nil)

        // Up-sampling doubles the count; out-of-range and non-finite samples are clamped.
        let pcm = SDLPCMFormat.standard.encode([0, 1, -2, .nan], rate: 8_000)
        #expect(pcm.count == 8 * 2)
        #expect(Int16(bitPattern: UInt16(pcm[2]) | UInt16(pcm[3]) << 8) == 16384)
        #expect(Int16(bitPattern: UInt16(pcm[4]) | UInt16(pcm[5]) << 8) == 32767)
        #expect(SDLPCMFormat(samplesPerSecond: 11_000, bitsPerSample: 12) == SDLPCMFormat(samplesPerSecond: 8_000, bitsPerSample: 16))
    }
}
