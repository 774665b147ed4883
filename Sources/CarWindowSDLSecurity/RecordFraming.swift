/// Where TLS and DTLS records begin and end in a blob.
///
/// OpenSSL 3.0's memory BIO is a byte stream, while DTLS takes whatever one read
/// returns (up to its read buffer, about 16.5 KiB) as one datagram and silently
/// drops a record cut short at its end, and then everything after it. Cutting
/// blobs into whole records here, and feeding DTLS one record at a time, gives
/// each DTLS read exactly one record and turns truncation into an error.
enum RecordFraming {
    private static let handshakeContentType: UInt8 = 0x16

    /// The record layer of a blob that starts a handshake: `false` for TLS
    /// (`16 03 0X`), `true` for DTLS (`16 FE FF` or `16 FE FD`), nil for anything else.
    static func sniffDatagram(_ bytes: [UInt8]) -> Bool? {
        guard bytes.count >= 3, bytes[0] == handshakeContentType else { return nil }
        switch (bytes[1], bytes[2]) {
        case (0x03, 0x00...0x04): return false
        case (0xFE, 0xFF), (0xFE, 0xFD): return true
        default: return nil
        }
    }

    /// The blob cut into records, or nil when a header is cut short or a record runs past the end.
    static func records(in bytes: [UInt8], isDatagram: Bool) -> [ArraySlice<UInt8>]? {
        // TLS: type, version, length. DTLS adds a 2-byte epoch and 6-byte sequence number before the length.
        let headerLength = isDatagram ? 13 : 5
        var records: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        while start < bytes.endIndex {
            guard bytes.endIndex - start >= headerLength else { return nil }
            let length = Int(bytes[start + headerLength - 2]) << 8 | Int(bytes[start + headerLength - 1])
            let end = start + headerLength + length
            guard end <= bytes.endIndex else { return nil }
            records.append(bytes[start..<end])
            start = end
        }
        return records
    }
}
