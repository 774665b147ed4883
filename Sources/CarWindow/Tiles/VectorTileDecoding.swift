import Foundation

extension VectorTile {
    /// Decodes a Mapbox Vector Tile (specification 2.1), inflating it first when it is gzip
    /// compressed (at most ``Gzip/defaultLimit`` bytes).
    ///
    /// Unknown fields are skipped, as protocol buffers allow; anything that breaks the wire format
    /// or the specification's rules for tags and geometry throws, so that a damaged tile is reported
    /// instead of being drawn wrongly.
    public init(decoding data: Data) throws(TileDecodingError) {
        let raw: Data
        if Gzip.isCompressed(data) {
            do { raw = try Gzip.decompress(data) } catch { throw .decompressionFailed(error) }
        } else {
            raw = data
        }
        var reader = ProtobufReader([UInt8](raw))
        var layers: [VectorTileLayer] = []
        while !reader.isAtEnd {
            let tagOffset = reader.offset
            let (field, wireType) = try reader.readTag()
            if field == 3 {
                guard wireType == .lengthDelimited else {
                    throw .unexpectedWireType(wireType.rawValue, offset: tagOffset)
                }
                layers.append(try Self.decodeLayer(try reader.readMessage(), index: layers.count))
            } else {
                try reader.skip(wireType)
            }
        }
        self.init(layers: layers)
    }

    private static func decodeLayer(_ message: ProtobufReader, index: Int) throws(TileDecodingError) -> VectorTileLayer {
        var reader = message
        var name: String?
        var version: UInt64 = 1
        var extent: UInt64 = 4096
        var keys: [String] = []
        var values: [FeatureValue] = []
        // Features may precede the keys and values they refer to, so they are decoded afterwards.
        var featureMessages: [ProtobufReader] = []
        while !reader.isAtEnd {
            let tagOffset = reader.offset
            let (field, wireType) = try reader.readTag()
            func expect(_ expected: ProtobufWireType) throws(TileDecodingError) {
                if wireType != expected { throw .unexpectedWireType(wireType.rawValue, offset: tagOffset) }
            }
            switch field {
            case 1: try expect(.lengthDelimited); name = try reader.readString()
            case 2: try expect(.lengthDelimited); featureMessages.append(try reader.readMessage())
            case 3: try expect(.lengthDelimited); keys.append(try reader.readString())
            case 4:
                try expect(.lengthDelimited)
                values.append(try decodeValue(try reader.readMessage(), layer: name ?? "#\(index)",
                                              index: values.count))
            case 5: try expect(.varint); extent = try reader.readVarint()
            case 15: try expect(.varint); version = try reader.readVarint()
            default: try reader.skip(wireType)
            }
        }
        guard let name else { throw .missingLayerName(layerIndex: index) }
        guard extent > 0, extent <= UInt64(Int32.max) else { throw .invalidExtent(layer: name, extent: extent) }
        var features: [VectorTileFeature] = []
        features.reserveCapacity(featureMessages.count)
        for (featureIndex, featureMessage) in featureMessages.enumerated() {
            features.append(try decodeFeature(featureMessage, layer: name, index: featureIndex,
                                              keys: keys, values: values))
        }
        return VectorTileLayer(name: name, version: Int(clamping: version), extent: Int(extent), features: features)
    }

    private static func decodeValue(_ message: ProtobufReader, layer: String,
                                    index: Int) throws(TileDecodingError) -> FeatureValue {
        var reader = message
        var value: FeatureValue?
        while !reader.isAtEnd {
            let tagOffset = reader.offset
            let (field, wireType) = try reader.readTag()
            func expect(_ expected: ProtobufWireType) throws(TileDecodingError) {
                if wireType != expected { throw .unexpectedWireType(wireType.rawValue, offset: tagOffset) }
            }
            // When a value carries several fields the last one wins, as protobuf's oneof rules say.
            switch field {
            case 1: try expect(.lengthDelimited); value = .string(try reader.readString())
            case 2: try expect(.fixed32); value = .float(Float(bitPattern: try reader.readFixed32()))
            case 3: try expect(.fixed64); value = .double(Double(bitPattern: try reader.readFixed64()))
            case 4: try expect(.varint); value = .int(Int64(bitPattern: try reader.readVarint()))
            case 5: try expect(.varint); value = .uint(try reader.readVarint())
            case 6: try expect(.varint); value = .sint(ProtobufReader.zigzag(try reader.readVarint()))
            case 7: try expect(.varint); value = .bool(try reader.readVarint() != 0)
            default: try reader.skip(wireType)
            }
        }
        guard let value else { throw .emptyValue(layer: layer, valueIndex: index) }
        return value
    }

    private static func decodeFeature(_ message: ProtobufReader, layer: String, index: Int,
                                      keys: [String], values: [FeatureValue]) throws(TileDecodingError) -> VectorTileFeature {
        var reader = message
        var id: UInt64?
        var type = GeometryType.unknown
        var tags: [UInt32] = []
        var commands: [UInt32] = []
        while !reader.isAtEnd {
            let tagOffset = reader.offset
            let (field, wireType) = try reader.readTag()
            switch field {
            case 1:
                guard wireType == .varint else { throw .unexpectedWireType(wireType.rawValue, offset: tagOffset) }
                id = try reader.readVarint()
            case 2:
                try reader.readRepeatedUInt32(wireType, into: &tags)
            case 3:
                guard wireType == .varint else { throw .unexpectedWireType(wireType.rawValue, offset: tagOffset) }
                // Types this decoder does not know are kept as unknown, which renderers skip.
                type = GeometryType(rawValue: UInt8(clamping: try reader.readVarint())) ?? .unknown
            case 4:
                try reader.readRepeatedUInt32(wireType, into: &commands)
            default:
                try reader.skip(wireType)
            }
        }
        guard tags.count % 2 == 0 else { throw .oddTagCount(layer: layer, feature: index) }
        var properties: [String: FeatureValue] = [:]
        properties.reserveCapacity(tags.count / 2)
        for pair in stride(from: 0, to: tags.count, by: 2) {
            let keyIndex = tags[pair], valueIndex = tags[pair + 1]
            guard Int(keyIndex) < keys.count else {
                throw .tagIndexOutOfRange(layer: layer, feature: index, index: keyIndex)
            }
            guard Int(valueIndex) < values.count else {
                throw .tagIndexOutOfRange(layer: layer, feature: index, index: valueIndex)
            }
            properties[keys[Int(keyIndex)]] = values[Int(valueIndex)]
        }
        let geometry = try decodeGeometry(commands, type: type, layer: layer, feature: index)
        return VectorTileFeature(id: id, type: type, properties: properties, geometry: geometry)
    }

    /// Runs the geometry command stream. Points collect into one part; lines and polygon rings
    /// start a part at each MoveTo. Rings are closed by ClosePath without repeating their first point.
    private static func decodeGeometry(_ commands: [UInt32], type: GeometryType, layer: String,
                                       feature: Int) throws(TileDecodingError) -> [[TilePoint]] {
        var parts: [[TilePoint]] = []
        var current: [TilePoint] = []
        var hasCurrent = false
        var x: Int64 = 0, y: Int64 = 0
        var index = 0

        func invalid(_ reason: String) -> TileDecodingError {
            .invalidGeometry(layer: layer, feature: feature, reason: reason)
        }

        while index < commands.count {
            let command = commands[index]
            index += 1
            let id = command & 7, count = command >> 3
            switch id {
            case 1, 2:
                let remaining = commands.count - index
                guard UInt64(count) * 2 <= UInt64(remaining) else {
                    throw .commandCountExceedsData(layer: layer, feature: feature, count: count, remaining: remaining)
                }
                if id == 1 {
                    if type == .point {
                        hasCurrent = true
                    } else {
                        guard count == 1 else { throw invalid("MoveTo with count \(count) in a line or polygon") }
                        if hasCurrent { parts.append(current) }
                        current = []
                        hasCurrent = true
                    }
                } else {
                    if type == .point { throw invalid("LineTo in a point feature") }
                    guard hasCurrent else { throw invalid("LineTo before any MoveTo") }
                }
                current.reserveCapacity(current.count + Int(count))
                for _ in 0..<count {
                    x += Int64(ProtobufReader.zigzag(commands[index]))
                    y += Int64(ProtobufReader.zigzag(commands[index + 1]))
                    index += 2
                    guard let px = Int32(exactly: x), let py = Int32(exactly: y) else {
                        throw .coordinateOverflow(layer: layer, feature: feature)
                    }
                    current.append(TilePoint(x: px, y: py))
                }
            case 7:
                guard count == 1 else { throw invalid("ClosePath with count \(count)") }
                if type == .point || type == .lineString { throw invalid("ClosePath outside a polygon") }
                guard hasCurrent else { throw invalid("ClosePath before any MoveTo") }
                parts.append(current)
                current = []
                hasCurrent = false
            default:
                throw .unknownCommand(layer: layer, feature: feature, command: command)
            }
        }
        if hasCurrent { parts.append(current) }
        return parts
    }
}

extension VectorTileFeature {
    /// The rings of a polygon feature grouped into polygons, each an exterior ring followed by its
    /// holes, as specification 2.1 (section 4.3.4.4) defines them.
    ///
    /// In tile coordinates (y down) an exterior ring has a positive shoelace sum and starts a new
    /// polygon; a negative ring is a hole of the polygon before it. Rings of zero area carry nothing
    /// to draw and a hole before any exterior has no polygon to belong to, so both are dropped.
    /// Features that are not polygons give an empty array.
    public var polygons: [[[TilePoint]]] {
        guard type == .polygon else { return [] }
        var result: [[[TilePoint]]] = []
        for ring in geometry {
            let area = Self.signedAreaTimesTwo(ring)
            if area > 0 {
                result.append([ring])
            } else if area < 0, !result.isEmpty {
                result[result.count - 1].append(ring)
            }
        }
        return result
    }

    /// Twice the signed area of an implicitly closed ring, exact in 64-bit integers for real tile
    /// coordinates; only extreme coordinates that overflow fall back to Double, where just the sign matters.
    static func signedAreaTimesTwo(_ ring: [TilePoint]) -> Double {
        guard ring.count >= 3 else { return 0 }
        var sum: Int64 = 0
        var previous = ring[ring.count - 1]
        for point in ring {
            let (cross, crossOverflow) = (Int64(previous.x) * Int64(point.y))
                .subtractingReportingOverflow(Int64(point.x) * Int64(previous.y))
            let (next, sumOverflow) = sum.addingReportingOverflow(cross)
            if crossOverflow || sumOverflow { return approximateSignedAreaTimesTwo(ring) }
            sum = next
            previous = point
        }
        return Double(sum)
    }

    private static func approximateSignedAreaTimesTwo(_ ring: [TilePoint]) -> Double {
        var sum = 0.0
        var previous = ring[ring.count - 1]
        for point in ring {
            sum += Double(previous.x) * Double(point.y) - Double(point.x) * Double(previous.y)
            previous = point
        }
        return sum
    }
}
