import Foundation

/// A message of SDL's security layer: a TLS handshake step or an error, carried in a single frame
/// on the control service with the E bit clear (SDL-0317).
///
/// On the wire: the query type (1 byte), the query id (3 bytes), a sequential number (4 bytes) the
/// answer echoes, the size of the JSON part (4 bytes), the JSON, then binary data to the end.
package struct SDLSecurityQuery: Sendable, Equatable {
    /// Whether the query asks, answers or tells.
    package struct Kind: RawRepresentable, Sendable, Hashable {
        package var rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// 0x00: asks the peer to act (handshake data to consume).
        package static let request = Kind(rawValue: 0x00)
        /// 0x10: the answer to a request, with the same sequential number.
        package static let response = Kind(rawValue: 0x10)
        /// 0x20: tells without expecting an answer (errors).
        package static let notification = Kind(rawValue: 0x20)
    }

    /// What the query is about.
    package struct Subject: RawRepresentable, Sendable, Hashable {
        package var rawValue: UInt32
        package init(rawValue: UInt32) { self.rawValue = rawValue & 0xFF_FFFF }
        /// 0x000001: TLS handshake records in the binary part.
        package static let handshakeData = Subject(rawValue: 0x000001)
        /// 0x000002: an error, its code in the JSON and again as the one binary byte.
        package static let internalError = Subject(rawValue: 0x000002)
    }

    /// The header's size on the wire.
    package static let headerSize = 12
    /// The most JSON a query may carry; error notifications need far less.
    package static let maximumJSONSize = 64 * 1024

    package var kind: Kind
    package var subject: Subject
    /// Echoed by the answer, so each side can pair them.
    package var sequenceNumber: UInt32
    /// The JSON part, raw (empty for handshake data).
    package var json: [UInt8]
    /// The binary part: handshake records, or an error's code byte.
    package var binary: [UInt8]

    package init(kind: Kind, subject: Subject, sequenceNumber: UInt32, json: [UInt8] = [], binary: [UInt8] = []) {
        self.kind = kind
        self.subject = subject
        self.sequenceNumber = sequenceNumber
        self.json = json
        self.binary = binary
    }

    /// A handshake step: records for the peer's TLS engine.
    package static func handshake(_ records: [UInt8], kind: Kind, sequenceNumber: UInt32) -> SDLSecurityQuery {
        SDLSecurityQuery(kind: kind, subject: .handshakeData, sequenceNumber: sequenceNumber, binary: records)
    }

    /// An error notification as SDL Core sends and reads it: `{"id": code, "text": ...}` and the
    /// code again as the binary part.
    package static func error(_ code: SDLSecurityErrorCode, text: String, sequenceNumber: UInt32) -> SDLSecurityQuery {
        let body: [String: any Sendable] = ["id": Int(code.rawValue), "text": text]
        let json = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])).map { [UInt8]($0) } ?? []
        return SDLSecurityQuery(kind: .notification, subject: .internalError, sequenceNumber: sequenceNumber,
                                json: json, binary: [code.rawValue])
    }

    /// The error an internal-error notification carries: the binary byte when present, else the
    /// JSON's `id`; nil for other queries.
    package var errorCode: SDLSecurityErrorCode? {
        guard subject == .internalError else { return nil }
        if let byte = binary.first { return SDLSecurityErrorCode(rawValue: byte) ?? .internalError }
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
              let number = object["id"] as? NSNumber else { return .internalError }
        return UInt8(exactly: number.intValue).flatMap(SDLSecurityErrorCode.init(rawValue:)) ?? .internalError
    }

    /// The error's text from the JSON, if any.
    package var errorText: String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else { return nil }
        return object["text"] as? String
    }

    /// The query's bytes.
    package func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerSize + json.count + binary.count)
        bytes.append(kind.rawValue)
        bytes += [UInt8(truncatingIfNeeded: subject.rawValue >> 16), UInt8(truncatingIfNeeded: subject.rawValue >> 8),
                  UInt8(truncatingIfNeeded: subject.rawValue)]
        Self.appendBigEndian(sequenceNumber, to: &bytes)
        Self.appendBigEndian(UInt32(clamping: json.count), to: &bytes)
        return bytes + json + binary
    }

    /// Reads a query from a control frame's payload.
    ///
    /// - Throws: ``SDLSecurityErrorCode/invalidQuerySize`` when the payload is shorter than the
    ///   header or its JSON size runs past the end or past ``maximumJSONSize``;
    ///   ``SDLSecurityErrorCode/invalidQueryID`` for an unknown type or id. Both are what the
    ///   peer is told in return.
    package init(decoding payload: [UInt8]) throws(SDLSecurityQueryError) {
        guard payload.count >= Self.headerSize else {
            throw SDLSecurityQueryError(code: .invalidQuerySize,
                                        reason: "a security query of \(payload.count) bytes is shorter than its 12-byte header")
        }
        kind = Kind(rawValue: payload[0])
        guard [Kind.request, .response, .notification].contains(kind) else {
            throw SDLSecurityQueryError(code: .invalidQueryID,
                                        reason: "security query type 0x\(String(payload[0], radix: 16)) is not request, response or notification")
        }
        subject = Subject(rawValue: UInt32(payload[1]) << 16 | UInt32(payload[2]) << 8 | UInt32(payload[3]))
        guard subject == .handshakeData || subject == .internalError else {
            throw SDLSecurityQueryError(code: .invalidQueryID,
                                        reason: "security query id 0x\(String(subject.rawValue, radix: 16)) is neither handshake data nor an error")
        }
        sequenceNumber = Self.bigEndian(payload, at: 4)
        let jsonSize = Int(Self.bigEndian(payload, at: 8))
        guard jsonSize <= Self.maximumJSONSize, jsonSize <= payload.count - Self.headerSize else {
            throw SDLSecurityQueryError(code: .invalidQuerySize,
                                        reason: "a security query announces \(jsonSize) bytes of JSON but carries \(payload.count - Self.headerSize) bytes after its header")
        }
        json = Array(payload[Self.headerSize ..< Self.headerSize + jsonSize])
        binary = Array(payload[(Self.headerSize + jsonSize)...])
    }

    private static func appendBigEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
                  UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    private static func bigEndian(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}

/// A security query that could not be read, with the code to answer it with.
package struct SDLSecurityQueryError: Error, Sendable, Equatable, CustomStringConvertible {
    package var code: SDLSecurityErrorCode
    package var reason: String
    package var description: String { reason }
}
