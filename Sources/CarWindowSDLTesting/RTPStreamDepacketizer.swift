/// Turns RFC 4571-framed RTP (RFC 6184 H.264) back into Annex-B: what a head unit does with the
/// "RTP" video protocol. Handles single NAL units, STAP-A and FU-A; malformed packets are
/// counted and skipped, a broken FU-A is discarded whole.
struct RTPStreamDepacketizer: Sendable {
    /// The largest NAL unit reassembled from FU-A fragments; an app that never sends the end
    /// fragment cannot grow the head unit's memory beyond it.
    static let maximumFragmentedUnitSize = 8 << 20

    private var buffer: [UInt8] = []
    private var fragment: [UInt8]?
    /// Packets that could not be interpreted.
    private(set) var malformedPackets = 0

    /// Adds stream bytes; returns the Annex-B bytes of the NAL units they complete.
    mutating func append(_ bytes: [UInt8]) -> [UInt8] {
        buffer += bytes
        var output: [UInt8] = []
        var offset = 0
        while buffer.count - offset >= 2 {
            let length = Int(buffer[offset]) << 8 | Int(buffer[offset + 1])
            guard buffer.count - offset - 2 >= length else { break }
            packet(Array(buffer[(offset + 2)..<(offset + 2 + length)]), into: &output)
            offset += 2 + length
        }
        buffer.removeFirst(offset)
        return output
    }

    private mutating func packet(_ packet: [UInt8], into output: inout [UInt8]) {
        guard packet.count > 12, packet[0] >> 6 == 2 else {
            malformedPackets += 1
            return
        }
        let csrcCount = Int(packet[0] & 0x0F)
        var start = 12 + 4 * csrcCount
        if packet[0] & 0x10 != 0 {
            guard packet.count >= start + 4 else {
                malformedPackets += 1
                return
            }
            start += 4 + 4 * (Int(packet[start + 2]) << 8 | Int(packet[start + 3]))
        }
        guard packet.count > start else {
            malformedPackets += 1
            return
        }
        let payload = packet[start...]
        let header = payload[payload.startIndex]
        switch header & 0x1F {
        case 1...23:
            output += [0, 0, 0, 1] + payload
        case 24:
            var index = payload.startIndex + 1
            while payload.endIndex - index >= 2 {
                let size = Int(payload[index]) << 8 | Int(payload[index + 1])
                index += 2
                guard payload.endIndex - index >= size else {
                    malformedPackets += 1
                    return
                }
                output += [0, 0, 0, 1] + payload[index..<(index + size)]
                index += size
            }
        case 28:
            guard payload.count >= 2 else {
                malformedPackets += 1
                return
            }
            let fuHeader = payload[payload.startIndex + 1]
            let body = payload[(payload.startIndex + 2)...]
            if fuHeader & 0x80 != 0 {
                fragment = [(header & 0xE0) | (fuHeader & 0x1F)] + body
            } else if fragment != nil {
                fragment? += body
            } else {
                malformedPackets += 1
                return
            }
            if let partial = fragment, partial.count > Self.maximumFragmentedUnitSize {
                fragment = nil
                malformedPackets += 1
                return
            }
            if fuHeader & 0x40 != 0, let whole = fragment {
                output += [0, 0, 0, 1] + whole
                fragment = nil
            }
        default:
            malformedPackets += 1
        }
    }
}
