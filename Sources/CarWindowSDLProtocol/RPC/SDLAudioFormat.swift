import Foundation

/// The PCM a head unit takes on its audio service (the RegisterAppInterface response's
/// `pcmStreamCapabilities`): mono, little-endian, signed 16-bit or unsigned 8-bit samples.
public struct SDLPCMFormat: Sendable, Hashable, CustomStringConvertible {
    /// Samples per second: 8000, 16000, 22050 or 44100.
    public var samplesPerSecond: Int
    /// 8 or 16.
    public var bitsPerSample: Int

    /// A format; rates and depths outside what SDL names are clamped to the nearest it does.
    public init(samplesPerSecond: Int, bitsPerSample: Int) {
        self.samplesPerSecond = Self.rates.min { abs($0 - samplesPerSecond) < abs($1 - samplesPerSecond) } ?? 16_000
        self.bitsPerSample = bitsPerSample <= 8 ? 8 : 16
    }

    /// 16 kHz, 16-bit: SDL Core's default and what head units that say nothing take.
    public static let standard = SDLPCMFormat(samplesPerSecond: 16_000, bitsPerSample: 16)

    /// The rates `SamplingRate` names.
    static let rates = [8_000, 16_000, 22_050, 44_100]

    /// Bytes per second of audio.
    public var bytesPerSecond: Int { samplesPerSecond * bitsPerSample / 8 }

    /// `16000 Hz 16-bit mono`.
    public var description: String { "\(samplesPerSecond) Hz \(bitsPerSample)-bit mono" }

    /// From the RPC's strings (`16KHZ`, `16_BIT`); nil when either is unknown or the type is
    /// not PCM.
    init?(samplingRate: String?, bitsPerSample: String?, audioType: String?) {
        guard audioType == nil || audioType == "PCM" else { return nil }
        let rate: Int
        switch samplingRate {
        case "8KHZ": rate = 8_000
        case "16KHZ": rate = 16_000
        case "22KHZ": rate = 22_050
        case "44KHZ": rate = 44_100
        default: return nil
        }
        let bits: Int
        switch bitsPerSample {
        case "8_BIT": bits = 8
        case "16_BIT": bits = 16
        default: return nil
        }
        self.init(samplesPerSecond: rate, bitsPerSample: bits)
    }

    /// `samples` (mono, `rate` per second, -1...1) in this format: resampled linearly and
    /// quantised, 16-bit little-endian signed or 8-bit unsigned.
    public func encode(_ samples: [Float], rate: Int) -> [UInt8] {
        guard !samples.isEmpty, rate > 0 else { return [] }
        let step = Double(rate) / Double(samplesPerSecond)
        let count = Int((Double(samples.count) / step).rounded(.down))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * bitsPerSample / 8)
        for index in 0..<count {
            let position = Double(index) * step
            let left = min(Int(position), samples.count - 1), right = min(left + 1, samples.count - 1)
            let t = Float(position - Double(left))
            var value = samples[left] * (1 - t) + samples[right] * t
            value = value.isFinite ? min(max(value, -1), 1) : 0
            if bitsPerSample == 8 {
                bytes.append(UInt8(clamping: Int((value * 127).rounded()) + 128))
            } else {
                let sample = UInt16(bitPattern: Int16(clamping: Int((value * 32767).rounded())))
                bytes.append(UInt8(truncatingIfNeeded: sample))
                bytes.append(UInt8(truncatingIfNeeded: sample >> 8))
            }
        }
        return bytes
    }
}

/// A voice prompt for the head unit's speakers: mono samples in -1...1 at any rate; the
/// player converts them to the head unit's format.
public struct AudioPrompt: Sendable, Equatable {
    /// Mono samples, -1...1.
    public var samples: [Float]
    /// Samples per second.
    public var samplesPerSecond: Int

    /// A prompt from its samples.
    public init(samples: [Float], samplesPerSecond: Int) {
        self.samples = samples
        self.samplesPerSecond = samplesPerSecond
    }

    /// How long it plays.
    public var duration: Duration {
        samplesPerSecond > 0 ? .seconds(Double(samples.count) / Double(samplesPerSecond)) : .zero
    }

    /// A two-note chime (a rising fifth, soft attack and decay): an attention sound before a
    /// turn where no speech is available.
    public static func chime(samplesPerSecond: Int = 16_000, noteSeconds: Double = 0.22, level: Float = 0.5) -> AudioPrompt {
        let rate = max(samplesPerSecond, 8_000)
        var samples: [Float] = []
        for frequency in [660.0, 990.0] {
            let count = Int(noteSeconds * Double(rate))
            for index in 0..<count {
                let t = Double(index) / Double(rate)
                let attack = min(t / 0.01, 1), decay = exp(-t * 6)
                samples.append(level * Float(sin(2 * .pi * frequency * t) * attack * decay))
            }
        }
        return AudioPrompt(samples: samples, samplesPerSecond: rate)
    }

    /// A prompt from a WAV file's bytes (RIFF, PCM 8- or 16-bit, any rate; channels are mixed
    /// to mono), as espeak-ng or sox write them; nil when the bytes are no such file.
    public init?(wav bytes: [UInt8]) {
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else { return nil }
        var offset = 12
        var format: (channels: Int, rate: Int, bits: Int)?
        while offset + 8 <= bytes.count {
            let size = u32(offset + 4)
            let body = offset + 8
            guard size >= 0, body + size <= bytes.count || bytes[offset..<offset + 4].elementsEqual("data".utf8) else { return nil }
            if bytes[offset..<offset + 4].elementsEqual("fmt ".utf8), size >= 16 {
                guard u16(body) == 1 else { return nil }
                format = (u16(body + 2), u32(body + 4), u16(body + 14))
            } else if bytes[offset..<offset + 4].elementsEqual("data".utf8) {
                guard let format, format.channels > 0, format.rate > 0, format.bits == 8 || format.bits == 16 else { return nil }
                // espeak-ng writes an unknown length when it writes to a pipe: read to the end.
                let end = min(body + size, bytes.count)
                let frameBytes = format.channels * format.bits / 8
                var samples: [Float] = []
                samples.reserveCapacity((end - body) / frameBytes)
                var position = body
                while position + frameBytes <= end {
                    var sum: Float = 0
                    for channel in 0..<format.channels {
                        let at = position + channel * format.bits / 8
                        sum += format.bits == 8 ? (Float(bytes[at]) - 128) / 128 : Float(Int16(bitPattern: UInt16(u16(at)))) / 32768
                    }
                    samples.append(sum / Float(format.channels))
                    position += frameBytes
                }
                self.init(samples: samples, samplesPerSecond: format.rate)
                return
            }
            offset = body + size + (size & 1)
        }
        return nil
    }
}
