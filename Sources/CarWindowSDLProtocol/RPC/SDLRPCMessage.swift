import Foundation

/// Whether an RPC asks, answers or tells.
package enum SDLRPCType: UInt8, Sendable, Equatable {
    /// A request; the peer answers with the same correlation id.
    case request = 0
    /// The answer to a request.
    case response = 1
    /// A one-way message; its correlation id is 0xFFFFFFFF.
    case notification = 2
}

/// An RPC function id (28 bits). A struct so that functions this library does not handle still
/// decode and can be logged by number.
public struct SDLFunctionID: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The id on the wire.
    public var rawValue: UInt32

    /// A function from its id.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// 1: RegisterAppInterface.
    public static let registerAppInterface = SDLFunctionID(rawValue: 1)
    /// 2: UnregisterAppInterface.
    public static let unregisterAppInterface = SDLFunctionID(rawValue: 2)
    /// 18: SubscribeButton.
    public static let subscribeButton = SDLFunctionID(rawValue: 18)
    /// 19: UnsubscribeButton.
    public static let unsubscribeButton = SDLFunctionID(rawValue: 19)
    /// 20: SubscribeVehicleData.
    public static let subscribeVehicleData = SDLFunctionID(rawValue: 20)
    /// 31: GenericResponse (the head unit's answer to a request it does not know).
    public static let genericResponse = SDLFunctionID(rawValue: 31)
    /// 48: GetSystemCapability.
    public static let getSystemCapability = SDLFunctionID(rawValue: 48)
    /// 49: SendHapticData.
    public static let sendHapticData = SDLFunctionID(rawValue: 49)
    /// 32768: OnHMIStatus.
    public static let onHMIStatus = SDLFunctionID(rawValue: 32768)
    /// 32769: OnAppInterfaceUnregistered.
    public static let onAppInterfaceUnregistered = SDLFunctionID(rawValue: 32769)
    /// 32770: OnButtonEvent.
    public static let onButtonEvent = SDLFunctionID(rawValue: 32770)
    /// 32771: OnButtonPress.
    public static let onButtonPress = SDLFunctionID(rawValue: 32771)
    /// 32772: OnVehicleData.
    public static let onVehicleData = SDLFunctionID(rawValue: 32772)
    /// 32775: OnDriverDistraction.
    public static let onDriverDistraction = SDLFunctionID(rawValue: 32775)
    /// 32776: OnPermissionsChange.
    public static let onPermissionsChange = SDLFunctionID(rawValue: 32776)
    /// 32778: OnLanguageChange.
    public static let onLanguageChange = SDLFunctionID(rawValue: 32778)
    /// 32780: OnTouchEvent.
    public static let onTouchEvent = SDLFunctionID(rawValue: 32780)
    /// 32787: OnSystemCapabilityUpdated.
    public static let onSystemCapabilityUpdated = SDLFunctionID(rawValue: 32787)
    /// 32791: OnAppCapabilityUpdated.
    public static let onAppCapabilityUpdated = SDLFunctionID(rawValue: 32791)

    /// The function's name where known, else its number.
    public var description: String {
        switch rawValue {
        case 1: "RegisterAppInterface"
        case 2: "UnregisterAppInterface"
        case 18: "SubscribeButton"
        case 19: "UnsubscribeButton"
        case 20: "SubscribeVehicleData"
        case 31: "GenericResponse"
        case 48: "GetSystemCapability"
        case 49: "SendHapticData"
        case 32768: "OnHMIStatus"
        case 32769: "OnAppInterfaceUnregistered"
        case 32770: "OnButtonEvent"
        case 32771: "OnButtonPress"
        case 32772: "OnVehicleData"
        case 32775: "OnDriverDistraction"
        case 32776: "OnPermissionsChange"
        case 32778: "OnLanguageChange"
        case 32780: "OnTouchEvent"
        case 32787: "OnSystemCapabilityUpdated"
        case 32791: "OnAppCapabilityUpdated"
        default: "function \(rawValue)"
        }
    }
}

/// One RPC as carried on the RPC service from protocol version 2 on: a 12-byte binary header,
/// the JSON parameters and optional bulk data.
package struct SDLRPCMessage: Sendable, Equatable {
    /// The correlation id notifications carry.
    package static let notificationCorrelationID: UInt32 = 0xFFFF_FFFF
    /// Size of the binary header.
    package static let headerSize = 12

    /// Request, response or notification.
    package var type: SDLRPCType
    /// Which function.
    package var functionID: SDLFunctionID
    /// Pairs a response with its request.
    package var correlationID: UInt32
    /// The JSON parameters object, as bytes.
    package var json: [UInt8]
    /// Bytes after the JSON (images, files); empty for the RPCs used here.
    package var bulkData: [UInt8]

    /// An RPC from its fields.
    package init(type: SDLRPCType, functionID: SDLFunctionID, correlationID: UInt32, json: [UInt8], bulkData: [UInt8] = []) {
        self.type = type
        self.functionID = functionID
        self.correlationID = correlationID
        self.json = json
        self.bulkData = bulkData
    }

    /// The payload bytes: header, JSON, bulk data.
    package func encoded() -> [UInt8] {
        let first = UInt32(type.rawValue) << 28 | (functionID.rawValue & 0x0FFF_FFFF)
        let size = UInt32(truncatingIfNeeded: json.count)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerSize + json.count + bulkData.count)
        for word in [first, correlationID, size] {
            bytes += [UInt8(truncatingIfNeeded: word >> 24), UInt8(truncatingIfNeeded: word >> 16),
                      UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
        }
        return bytes + json + bulkData
    }

    /// Decodes an RPC service payload.
    package init(decoding payload: [UInt8]) throws(SDLRPCError) {
        guard payload.count >= Self.headerSize else { throw .truncated(size: payload.count) }
        func word(_ at: Int) -> UInt32 {
            UInt32(payload[at]) << 24 | UInt32(payload[at + 1]) << 16 | UInt32(payload[at + 2]) << 8 | UInt32(payload[at + 3])
        }
        let first = word(0)
        guard let type = SDLRPCType(rawValue: UInt8(first >> 28)) else { throw .unknownType(UInt8(first >> 28)) }
        let jsonSize = Int(word(8))
        guard jsonSize <= payload.count - Self.headerSize else {
            throw .jsonSizeBeyondPayload(jsonSize: jsonSize, available: payload.count - Self.headerSize)
        }
        self.type = type
        self.functionID = SDLFunctionID(rawValue: first & 0x0FFF_FFFF)
        self.correlationID = word(4)
        self.json = Array(payload[Self.headerSize..<(Self.headerSize + jsonSize)])
        self.bulkData = Array(payload[(Self.headerSize + jsonSize)...])
    }

    /// A notification (no correlation: ``notificationCorrelationID``) whose JSON is `parameters`
    /// encoded.
    package static func notification<Parameters: Encodable>(_ function: SDLFunctionID,
                                                            parameters: Parameters) throws(SDLRPCError) -> SDLRPCMessage {
        try SDLRPCMessage(type: .notification, functionID: function, correlationID: notificationCorrelationID, parameters: parameters)
    }

    /// An RPC whose JSON is `parameters` encoded.
    package init<Parameters: Encodable>(type: SDLRPCType, functionID: SDLFunctionID, correlationID: UInt32,
                                       parameters: Parameters) throws(SDLRPCError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            self.init(type: type, functionID: functionID, correlationID: correlationID,
                      json: Array(try encoder.encode(parameters)))
        } catch {
            throw .cannotEncode(functionID, String(describing: error))
        }
    }

    /// The JSON parameters decoded as `Parameters`.
    package func decodeParameters<Parameters: Decodable>(_ type: Parameters.Type) throws(SDLRPCError) -> Parameters {
        do {
            return try JSONDecoder().decode(Parameters.self, from: Data(json))
        } catch let error as DecodingError {
            throw .badParameters(functionID, Self.describe(error))
        } catch {
            throw .badParameters(functionID, "the parameters are not JSON")
        }
    }

    /// One line for a decoding failure: which field, and what was wrong with its value. The
    /// decoder's own description dumps its whole context (dozens of lines a message for a head
    /// unit that sends nonsense); the values come from the wire and are cut short.
    package static func describe(_ error: DecodingError) -> String {
        func field(_ path: [any CodingKey]) -> String {
            let named = path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return named.isEmpty ? "the parameters" : "field " + String(named.drop { $0 == "." }.prefix(120))
        }
        func reason(_ context: DecodingError.Context) -> String { String(context.debugDescription.prefix(160)) }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(field(context.codingPath)) is not \(type): \(reason(context))"
        case .valueNotFound(let type, let context):
            return "\(field(context.codingPath)) is null where \(type) is needed"
        case .keyNotFound(let key, let context):
            return "\(field(context.codingPath + [key])) is missing"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the parameters are not JSON (\(reason(context)))"
                                              : "\(field(context.codingPath)) has an unusable value: \(reason(context))"
        @unknown default:
            return "the parameters could not be read"
        }
    }
}

/// Why an RPC payload could not be read or written.
public enum SDLRPCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Fewer than the 12 header bytes.
    case truncated(size: Int)
    /// The type nibble is not request, response or notification.
    case unknownType(UInt8)
    /// The JSON size field points past the payload.
    case jsonSizeBeyondPayload(jsonSize: Int, available: Int)
    /// The JSON is not the parameters the function needs.
    case badParameters(SDLFunctionID, String)
    /// Parameters could not be encoded.
    case cannotEncode(SDLFunctionID, String)

    /// What was wrong.
    public var description: String {
        switch self {
        case .truncated(let size): "RPC payload of \(size) bytes is shorter than its 12-byte header"
        case .unknownType(let type): "RPC type \(type) is not request (0), response (1) or notification (2)"
        case .jsonSizeBeyondPayload(let size, let available): "RPC JSON size \(size) exceeds the \(available) bytes after the header"
        case .badParameters(let function, let detail): "\(function) parameters are not what the RPC spec says: \(detail)"
        case .cannotEncode(let function, let detail): "\(function) parameters could not be encoded: \(detail)"
        }
    }
}
