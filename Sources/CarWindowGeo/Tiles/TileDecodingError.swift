/// Why the bytes of a vector tile could not be decoded. Offsets count bytes from the start of the
/// uncompressed tile, so they can be looked up in a hex dump of the inflated data.
public enum TileDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A field or value runs past the end of the message that contains it.
    case truncated(offset: Int)
    /// A varint is longer than ten bytes or carries more than 64 bits.
    case varintTooLong(offset: Int)
    /// A varint does not fit the 32-bit field it belongs to.
    case valueOutOfRange(offset: Int)
    /// A field tag names a wire type that does not exist (6, 7) or a deprecated group (3, 4).
    case invalidWireType(UInt8, offset: Int)
    /// A known field arrived with a wire type its schema does not allow.
    case unexpectedWireType(UInt8, offset: Int)
    /// A field tag has field number 0.
    case invalidFieldNumber(offset: Int)
    /// A string field is not valid UTF-8.
    case invalidUTF8(offset: Int)
    /// A layer has no name, which the specification requires.
    case missingLayerName(layerIndex: Int)
    /// A layer declares an extent of 0 or one too large for 32-bit coordinates.
    case invalidExtent(layer: String, extent: UInt64)
    /// A value message holds no value of a known type.
    case emptyValue(layer: String, valueIndex: Int)
    /// A feature's tags are not key/value pairs.
    case oddTagCount(layer: String, feature: Int)
    /// A feature's tag refers to a key or value the layer does not have.
    case tagIndexOutOfRange(layer: String, feature: Int, index: UInt32)
    /// A geometry command integer has an id other than MoveTo (1), LineTo (2) or ClosePath (7).
    case unknownCommand(layer: String, feature: Int, command: UInt32)
    /// A geometry command announces more coordinate pairs than the geometry has left.
    case commandCountExceedsData(layer: String, feature: Int, count: UInt32, remaining: Int)
    /// A geometry command is not allowed where it appears (for example LineTo before MoveTo).
    case invalidGeometry(layer: String, feature: Int, reason: String)
    /// Accumulated coordinate deltas leave the 32-bit range.
    case coordinateOverflow(layer: String, feature: Int)
    /// Gzip-compressed tile data could not be inflated (or would inflate past the size limit).
    case decompressionFailed(GzipError)
    /// The tile has more bytes than any tile may have.
    case tooLarge(bytes: Int, limit: Int)
    /// The tile's layers have more keys and values than any tile may have.
    case tooManyTableEntries(layer: String, limit: Int)

    /// What went wrong and what to do about it, for logs and error messages.
    public var description: String {
        let advice = "the tile is damaged or not a Mapbox Vector Tile; regenerate or re-download it"
        switch self {
        case .truncated(let offset):
            return "Vector tile truncated at byte \(offset): a field runs past the end of its message; \(advice)."
        case .varintTooLong(let offset):
            return "Vector tile has an over-long varint at byte \(offset); \(advice)."
        case .valueOutOfRange(let offset):
            return "Vector tile value at byte \(offset) does not fit 32 bits; \(advice)."
        case .invalidWireType(let type, let offset):
            return "Vector tile has invalid protobuf wire type \(type) at byte \(offset); \(advice)."
        case .unexpectedWireType(let type, let offset):
            return "Vector tile field at byte \(offset) has wire type \(type), which its schema forbids; \(advice)."
        case .invalidFieldNumber(let offset):
            return "Vector tile has field number 0 at byte \(offset); \(advice)."
        case .invalidUTF8(let offset):
            return "Vector tile string at byte \(offset) is not valid UTF-8; \(advice)."
        case .missingLayerName(let index):
            return "Vector tile layer #\(index) has no name, which the specification requires; \(advice)."
        case .invalidExtent(let layer, let extent):
            return "Vector tile layer '\(layer)' has unusable extent \(extent); \(advice)."
        case .emptyValue(let layer, let index):
            return "Vector tile layer '\(layer)' value #\(index) holds no known value type; \(advice)."
        case .oddTagCount(let layer, let feature):
            return "Feature #\(feature) of layer '\(layer)' has an odd number of tag indices; \(advice)."
        case .tagIndexOutOfRange(let layer, let feature, let index):
            return "Feature #\(feature) of layer '\(layer)' refers to missing key or value \(index); \(advice)."
        case .unknownCommand(let layer, let feature, let command):
            return "Feature #\(feature) of layer '\(layer)' has unknown geometry command \(command & 7); \(advice)."
        case .commandCountExceedsData(let layer, let feature, let count, let remaining):
            return "Feature #\(feature) of layer '\(layer)' announces \(count) coordinate pairs but only \(remaining) integers remain; \(advice)."
        case .invalidGeometry(let layer, let feature, let reason):
            return "Feature #\(feature) of layer '\(layer)' has invalid geometry: \(reason); \(advice)."
        case .coordinateOverflow(let layer, let feature):
            return "Feature #\(feature) of layer '\(layer)' has coordinates beyond 32 bits; \(advice)."
        case .decompressionFailed(let error):
            return "Vector tile could not be inflated: \(error)"
        case .tooLarge(let bytes, let limit):
            return "Vector tile is \(bytes) bytes, more than the \(limit) a tile may have; split the data into more zoom levels or tiles (tippecanoe and planetiler keep tiles near 500 KiB)."
        case .tooManyTableEntries(let layer, let limit):
            return "Vector tile layer '\(layer)' brings the tile past \(limit) keys and values, more than a tile may have; \(advice)."
        }
    }
}
