import CarWindowVideoCore
import CarWindowH264
/// Turns H.264 access units into RTP packets as RFC 6184 describes (packetization-mode 1).
///
/// A NAL unit that fits the MTU travels alone (single NAL unit packet); a larger one is cut into
/// FU-A fragments. Start codes are not sent: RTP packets delimit NAL units themselves. Every
/// packet of one access unit carries the same timestamp and only the last carries the marker
/// bit, so receivers know a picture is complete without waiting for the next one (some head-unit
/// libraries mark every fragment of the last NAL unit; RFC 6184 wants only the last packet).
///
/// The sequence number and SSRC start at random values (RFC 3550 section 5.1) unless given,
/// so tests can fix them.
public struct RTPPacketizer: Sendable {
    /// The dynamic payload type the SDP and head units use for H.264 unless told otherwise.
    public static let defaultPayloadType: UInt8 = 96
    /// RFC 6184's RTP clock: 90 kHz for video.
    public static let clockRate = 90_000
    /// Leaves room for IP, UDP and tunnel headers inside a 1500-byte Ethernet frame.
    public static let defaultMTU = 1400
    /// The fixed RTP header without CSRCs or extensions.
    public static let headerSize = 12
    /// FU indicator and FU header in front of each fragment.
    static let fragmentationHeaderSize = 2
    /// RFC 4571 frames carry a 16-bit length, so no packet may be larger.
    public static let maximumMTU = 65_535
    /// Header, FU-A bytes and at least one byte of payload per fragment.
    public static let minimumMTU = headerSize + fragmentationHeaderSize + 1

    /// The RTP payload type (0...127), announced in the SDP's `a=rtpmap`.
    public let payloadType: UInt8
    /// The synchronisation source: names this stream to the receiver.
    public let ssrc: UInt32
    /// The largest RTP packet this packetizer produces, header included.
    public let mtu: Int
    /// The sequence number the next packet will carry; wraps from 65535 to 0.
    public private(set) var nextSequenceNumber: UInt16

    /// Payload type 96, MTU 1400, random SSRC and initial sequence number: what head units and
    /// the SDP of ``RTPUDPSink`` expect.
    public init() {
        var generator = SystemRandomNumberGenerator()
        payloadType = Self.defaultPayloadType
        mtu = Self.defaultMTU
        ssrc = UInt32.random(in: .min ... .max, using: &generator)
        nextSequenceNumber = UInt16.random(in: .min ... .max, using: &generator)
    }

    /// A packetizer with random SSRC and initial sequence number and the given MTU.
    public init(payloadType: UInt8 = RTPPacketizer.defaultPayloadType, mtu: Int) throws(SinkError) {
        var generator = SystemRandomNumberGenerator()
        try self.init(payloadType: payloadType, mtu: mtu, using: &generator)
    }

    /// A packetizer whose SSRC and first sequence number come from `generator`, so a seeded
    /// generator gives the same packets on every run.
    public init<Generator: RandomNumberGenerator>(payloadType: UInt8 = RTPPacketizer.defaultPayloadType,
                                                  mtu: Int = RTPPacketizer.defaultMTU,
                                                  using generator: inout Generator) throws(SinkError) {
        try self.init(payloadType: payloadType, mtu: mtu, ssrc: UInt32.random(in: .min ... .max, using: &generator),
                      initialSequenceNumber: UInt16.random(in: .min ... .max, using: &generator))
    }

    /// A packetizer with every field given.
    public init(payloadType: UInt8, mtu: Int, ssrc: UInt32, initialSequenceNumber: UInt16) throws(SinkError) {
        guard payloadType <= 127 else {
            throw .invalidConfiguration("RTP payload type \(payloadType) must be in 0...127 (96...127 are the dynamic ones)")
        }
        guard (Self.minimumMTU ... Self.maximumMTU).contains(mtu) else {
            throw .invalidConfiguration("MTU \(mtu) must be in \(Self.minimumMTU)...\(Self.maximumMTU) bytes")
        }
        self.payloadType = payloadType
        self.mtu = mtu
        self.ssrc = ssrc
        self.nextSequenceNumber = initialSequenceNumber
    }

    /// The RTP timestamp of a presentation time: 90 kHz ticks (rounded to the nearest),
    /// wrapping modulo 2^32 as RTP does.
    public static func timestamp(for presentationTime: Duration) -> UInt32 {
        let (seconds, attoseconds) = presentationTime.components
        // Whole seconds are whole ticks; modulo 2^32 the wrapping product is exact.
        let whole = UInt32(truncatingIfNeeded: seconds &* Int64(clockRate))
        // |attoseconds| < 10^18, so the fraction is at most clockRate ticks.
        let fraction = (Double(attoseconds) * Double(clockRate) / 1e18).rounded()
        return whole &+ UInt32(truncatingIfNeeded: Int64(fraction))
    }

    /// Replaces the contents of `packets` with the RTP packets of `unit`, in sending order.
    ///
    /// Buffers already in `packets` are emptied and refilled, so a caller that keeps one array
    /// for the whole stream allocates only when an access unit needs more or bigger packets.
    /// Bytes before the first start code are not a NAL unit and are skipped.
    public mutating func packetize(_ unit: AccessUnit, into packets: inout [[UInt8]]) throws(SinkError) {
        let timestamp = Self.timestamp(for: unit.presentationTime)
        let nalUnits = NALUnit.ranges(in: unit.data)
        guard let lastNAL = nalUnits.last else {
            throw .invalidAccessUnit(frameNumber: unit.frameNumber, reason: "no NAL unit after an Annex-B start code")
        }
        var used = 0
        func nextPacket(marker: Bool) -> Int {
            if used == packets.count { packets.append([]) }
            packets[used].removeAll(keepingCapacity: true)
            appendHeader(to: &packets[used], marker: marker, timestamp: timestamp)
            used += 1
            return used - 1
        }
        let maximumPayload = mtu - Self.headerSize
        unit.data.withUnsafeBufferPointer { data in
            for range in nalUnits {
                let isLastNAL = range == lastNAL
                if range.count <= maximumPayload {
                    let index = nextPacket(marker: isLastNAL)
                    packets[index].append(contentsOf: data[range])
                    continue
                }
                let header = data[range.lowerBound]
                let indicator = (header & 0xE0) | 28
                let type = header & 0x1F
                let fragmentSize = maximumPayload - Self.fragmentationHeaderSize
                var start = range.lowerBound + 1
                while start < range.upperBound {
                    let end = min(start + fragmentSize, range.upperBound)
                    let isFirst = start == range.lowerBound + 1, isLast = end == range.upperBound
                    let index = nextPacket(marker: isLastNAL && isLast)
                    packets[index].append(indicator)
                    packets[index].append((isFirst ? 0x80 : 0) | (isLast ? 0x40 : 0) | type)
                    packets[index].append(contentsOf: data[start..<end])
                    start = end
                }
            }
        }
        packets.removeLast(packets.count - used)
    }

    /// Appends the 12-byte RTP header (version 2, no padding, extension or CSRCs) and advances
    /// the sequence number.
    private mutating func appendHeader(to packet: inout [UInt8], marker: Bool, timestamp: UInt32) {
        packet.append(0x80)
        packet.append((marker ? 0x80 : 0) | payloadType)
        packet.append(UInt8(nextSequenceNumber >> 8))
        packet.append(UInt8(nextSequenceNumber & 0xFF))
        for shift in stride(from: 24, through: 0, by: -8) { packet.append(UInt8(truncatingIfNeeded: timestamp >> shift)) }
        for shift in stride(from: 24, through: 0, by: -8) { packet.append(UInt8(truncatingIfNeeded: ssrc >> shift)) }
        nextSequenceNumber &+= 1
    }
}

extension RTPPacketizer {
    /// Replaces `output` with every packet behind its RFC 4571 length, which is how RTP travels
    /// on a byte stream (a TCP sink, a head-unit link's RTP video service); packets are at most
    /// 65535 bytes because the packetizer caps its MTU there.
    package static func frameForStream(_ packets: [[UInt8]], into output: inout [UInt8]) {
        output.removeAll(keepingCapacity: true)
        for packet in packets {
            let length = UInt16(clamping: packet.count)
            output.append(UInt8(length >> 8))
            output.append(UInt8(length & 0xFF))
            output.append(contentsOf: packet.prefix(Int(length)))
        }
    }
}
