import CarWindow
import CarWindowSDLProtocol
import CarWindowSDLSecurity
import CarWindowSDLTesting
import Foundation

/// What protecting video costs per access unit: the frames of one unit written in the clear
/// against the same unit sealed by the app's TLS 1.3 and DTLS 1.2 sessions (and opened by the
/// head unit's, which a car does on its side), at the sizes of 600 kbit/s and 20 Mbit/s at 15 fps.
///
/// `CARWINDOW_BENCH_SECURITY_CASE=tls,5000` (a transport and a unit size in bytes) runs that one
/// case alone, so that scripts/seal-allocations.sh can count its allocations under heaptrack.
struct SecuritySection: BenchmarkSection {
    let name = "security"
    let summary = "the cost of protected video per access unit: TLS 1.3 and DTLS 1.2 against frames in the clear"

    /// Access units of 600 kbit/s and 20 Mbit/s at 15 fps, and an IDR-sized one.
    static let unitSizes = [(label: "600 kbit/s", bytes: 5_000), (label: "600 kbit/s IDR", bytes: 40_000),
                            (label: "20 Mbit/s", bytes: 166_667)]
    static let frameInterval = 1000.0 / 15

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        let units = context.count(quick: 200, full: 2_000)
        var table = TextTable(title: "One access unit into SDL frames (MTU 131,072), mean of \(units) units",
                              header: ["unit", "clear µs", "TLS 1.3 µs", "DTLS 1.2 µs", "TLS share of 66.7 ms",
                                       "head unit opens TLS µs", "bytes added TLS/DTLS"])
        let library = try OpenSSLSecurityLibrary(certificatePEM: ThrowAwayIdentity.certificatePEM,
                                                 privateKeyPEM: ThrowAwayIdentity.privateKeyPEM)
        let payloadLimit = 131_072 - SDLFrameHeader.size
        let only = Self.onlyCase()
        for size in Self.unitSizes where only.map({ $0.bytes == size.bytes }) ?? true {
            var entry = CaseResult(label: size.label)
            let payload = (0..<size.bytes).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
            let message = SDLMessage(version: 5, serviceType: .video, sessionID: 1, messageID: 1, payload: payload)
            let clock = ContinuousClock()
            var clearBytes = 0
            let clear = clock.measure {
                for _ in 0..<units { clearBytes = message.encoded(maximumFramePayload: payloadLimit).count }
            }
            var row = [size.label, Self.microseconds(clear, units)]
            var added: [String] = []
            for transport in [OpenSSLHeadUnitSession.Transport.tls, .dtls] where only.map({ $0.transport == transport }) ?? true {
                let (stage, headUnit) = try Self.established(library, transport)
                var sealed: [[UInt8]] = []
                sealed.reserveCapacity(units)
                let sealing = try clock.measure {
                    for _ in 0..<units { sealed.append(try stage.seal(message, maximumFramePayload: payloadLimit)) }
                }
                var parser = SDLFrameParser(maximumFramePayload: payloadLimit)
                var opened = 0
                let opening = try clock.measure {
                    for bytes in sealed {
                        parser.append(bytes)
                        while let frame = try parser.nextFrame() {
                            if frame.needsDecryption { opened += try frame.decrypted(with: headUnit).payload.count }
                        }
                    }
                }
                guard opened == size.bytes * units else {
                    throw BenchError("the head unit opened \(opened) bytes of \(size.bytes * units) sealed")
                }
                let label = transport == .tls ? "tls" : "dtls"
                let sealMicroseconds = Self.value(sealing, units)
                entry.add("\(label)_seal_us", sealMicroseconds, "µs", better: .lower)
                entry.add("\(label)_open_us", Self.value(opening, units), "µs", better: .lower)
                entry.add("\(label)_bytes_added", Double(sealed[0].count - clearBytes), "bytes", better: .lower)
                entry.add("\(label)_share_of_frame_interval", (sealMicroseconds - Self.value(clear, units)) / 1000 / Self.frameInterval * 100,
                          "%", better: .lower)
                row.append(Self.microseconds(sealing, units))
                if transport == .tls {
                    row.append(String(format: "%.2f%%", (sealMicroseconds - Self.value(clear, units)) / 1000 / Self.frameInterval * 100))
                    row.append(Self.microseconds(opening, units))
                }
                added.append("\(sealed[0].count - clearBytes)")
            }
            entry.add("clear_us", Self.value(clear, units), "µs", better: .lower)
            if only == nil { table.rows.append([row[0], row[1], row[2], row[5], row[3], row[4], added.joined(separator: "/")]) }
            result.cases.append(entry)
        }
        result.tables.append(table)
        result.notes.append("Sealing cuts a unit into frames of one TLS record each (as SDL Core sends them; DTLS records of the 1,400-byte link MTU, under 16,000 bytes a frame) and encrypts them with AES-GCM; the share is the time beyond the clear frames, against the 66.7 ms between pictures at 15 fps. Allocations per unit: scripts/seal-allocations.sh (heaptrack, one case at a time).")
        return result
    }

    /// The one case `CARWINDOW_BENCH_SECURITY_CASE` names, or nil for all.
    static func onlyCase() -> (transport: OpenSSLHeadUnitSession.Transport, bytes: Int)? {
        guard let text = ProcessInfo.processInfo.environment["CARWINDOW_BENCH_SECURITY_CASE"] else { return nil }
        let parts = text.split(separator: ",")
        guard parts.count == 2, let bytes = Int(parts[1]), unitSizes.contains(where: { $0.bytes == bytes }) else { return nil }
        switch parts[0] {
        case "tls": return (.tls, bytes)
        case "dtls": return (.dtls, bytes)
        default: return nil
        }
    }

    /// An app stage and a head unit session after a real handshake, video protected.
    static func established(_ library: OpenSSLSecurityLibrary,
                            _ transport: OpenSSLHeadUnitSession.Transport) throws -> (SDLAppSecurityStage, OpenSSLHeadUnitSession) {
        var stage = SDLAppSecurityStage(library: library, appID: "bench")
        try stage.prepare()
        let headUnit = try OpenSSLHeadUnitSession(transport: transport)
        var records = try headUnit.start()
        for sequence in 1...8 where !records.isEmpty {
            let actions = stage.receive(.handshake(records, kind: .request, sequenceNumber: UInt32(sequence)))
            records = []
            for case .send(let query) in actions where query.subject == .handshakeData {
                records += try headUnit.handshake(query.binary)
            }
        }
        guard stage.isEstablished, headUnit.isHandshakeComplete else { throw BenchError("the \(transport) handshake did not finish") }
        stage.granted(.video)
        return (stage, headUnit)
    }

    static func value(_ duration: Duration, _ count: Int) -> Double {
        (Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12) / Double(count)
    }

    static func microseconds(_ duration: Duration, _ count: Int) -> String { String(format: "%.1f", value(duration, count)) }
}
