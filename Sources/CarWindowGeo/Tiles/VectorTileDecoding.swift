import Foundation

extension VectorTile {
    /// Decodes a Mapbox Vector Tile (specification 2.1), inflating it first when it is gzip
    /// compressed.
    ///
    /// Unknown fields are skipped, as protocol buffers allow; anything that breaks the wire format
    /// or the specification's rules for tags and geometry throws, so that a damaged tile is reported
    /// instead of being drawn wrongly.
    ///
    /// A tile is held to fixed limits, so that a crafted one costs no more memory and time than a
    /// dense real one: more than 16 MiB of data (stored or inflated) or more than 262,144 keys and
    /// values throws; past 65,536 features, 262,144 lines or rings, or 1,048,576 vertices, the
    /// excess is left out or lines and rings are thinned evenly, and ``reductions`` says what was cut.
    public init(decoding data: Data) throws(TileDecodingError) {
        try self.init(decoding: data, limits: .standard)
    }

    /// Decodes only the layers named in `layers` (the road graph needs `transportation` alone);
    /// the others are skipped before their tables or features are read.
    package init(decoding data: Data, layers: Set<String>) throws(TileDecodingError) {
        try self.init(decoding: data, limits: .standard, layers: layers)
    }

    /// Decodes under `limits`, every layer or those named in `layers`; see ``init(decoding:)``.
    init(decoding data: Data, limits: VectorTileLimits, layers wanted: Set<String>? = nil) throws(TileDecodingError) {
        guard data.count <= limits.maximumBytes else { throw .tooLarge(bytes: data.count, limit: limits.maximumBytes) }
        let raw: Data
        if Gzip.isCompressed(data) {
            do { raw = try Gzip.decompress(data, limit: limits.maximumBytes) } catch { throw .decompressionFailed(error) }
        } else {
            raw = data
        }
        var reader = ProtobufReader([UInt8](raw))
        // First the tables and the size of every feature's geometry, so that the vertex budget is
        // shared out before any vertex is decoded; then the features.
        var plan = VertexPlan(limits: limits)
        var tables: [LayerTables] = []
        while !reader.isAtEnd {
            let tagOffset = reader.offset
            let (field, wireType) = try reader.readTag()
            if field == 3 {
                guard wireType == .lengthDelimited else {
                    throw .unexpectedWireType(wireType.rawValue, offset: tagOffset)
                }
                let message = try reader.readMessage()
                if let wanted, try !wanted.contains(Self.layerName(in: message) ?? "") { continue }
                guard tables.count < limits.maximumLayers else {
                    plan.dropLayer()
                    continue
                }
                tables.append(try LayerTables(reading: message, index: tables.count, plan: &plan))
            } else {
                try reader.skip(wireType)
            }
        }
        plan.shareOutVertices()
        var layers: [VectorTileLayer] = []
        layers.reserveCapacity(tables.count)
        for table in tables {
            layers.append(try table.decodeFeatures(plan: &plan))
        }
        self.init(layers: layers)
        reductions = plan.reductions
    }

    /// The name of the layer `message` holds (field 1), read without decoding the rest.
    private static func layerName(in message: ProtobufReader) throws(TileDecodingError) -> String? {
        var reader = message
        while !reader.isAtEnd {
            let (field, wireType) = try reader.readTag()
            if field == 1, wireType == .lengthDelimited { return try reader.readString() }
            try reader.skip(wireType)
        }
        return nil
    }

    /// A layer's name, extent, keys and values, and its features still encoded.
    private struct LayerTables {
        var name: String
        var version: UInt64
        var extent: UInt64
        var keys: [String] = []
        var values: [FeatureValue] = []
        /// The features the limits keep, with their index in the layer, their first part in the
        /// plan and the number of integers in their geometry.
        var features: [(message: ProtobufReader, index: Int, firstPart: Int, integers: Int)] = []

        init(reading message: ProtobufReader, index: Int, plan: inout VertexPlan) throws(TileDecodingError) {
            var reader = message
            var name: String?
            var version: UInt64 = 1
            var extent: UInt64 = 4096
            var keys: [String] = []
            var values: [FeatureValue] = []
            // Features may precede the keys and values they refer to, so they are decoded afterwards.
            var features: [(message: ProtobufReader, index: Int, firstPart: Int, integers: Int)] = []
            var featureCount = 0
            while !reader.isAtEnd {
                let tagOffset = reader.offset
                let (field, wireType) = try reader.readTag()
                func expect(_ expected: ProtobufWireType) throws(TileDecodingError) {
                    if wireType != expected { throw .unexpectedWireType(wireType.rawValue, offset: tagOffset) }
                }
                switch field {
                case 1: try expect(.lengthDelimited); name = try reader.readString()
                case 2:
                    try expect(.lengthDelimited)
                    let feature = try reader.readMessage()
                    if let measured = try plan.measure(feature) {
                        features.append((feature, featureCount, measured.firstPart, measured.integers))
                    }
                    featureCount += 1
                case 3:
                    try expect(.lengthDelimited)
                    try plan.countTableEntry(layer: name ?? "#\(index)")
                    keys.append(try reader.readString())
                case 4:
                    try expect(.lengthDelimited)
                    try plan.countTableEntry(layer: name ?? "#\(index)")
                    values.append(try VectorTile.decodeValue(try reader.readMessage(), layer: name ?? "#\(index)",
                                                             index: values.count))
                case 5: try expect(.varint); extent = try reader.readVarint()
                case 15: try expect(.varint); version = try reader.readVarint()
                default: try reader.skip(wireType)
                }
            }
            guard let name else { throw .missingLayerName(layerIndex: index) }
            guard extent > 0, extent <= UInt64(Int32.max) else { throw .invalidExtent(layer: name, extent: extent) }
            self.name = name
            self.version = version
            self.extent = extent
            self.keys = keys
            self.values = values
            self.features = features
        }

        func decodeFeatures(plan: inout VertexPlan) throws(TileDecodingError) -> VectorTileLayer {
            var decoded: [VectorTileFeature] = []
            decoded.reserveCapacity(features.count)
            for feature in features {
                decoded.append(try VectorTile.decodeFeature(
                    feature.message, layer: name, index: feature.index, keys: keys, values: values,
                    geometry: GeometryPlacement(firstPart: feature.firstPart, integers: feature.integers), plan: &plan))
            }
            return VectorTileLayer(name: name, version: Int(clamping: version), extent: Int(extent), features: decoded)
        }
    }

    fileprivate static func decodeValue(_ message: ProtobufReader, layer: String,
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

    /// Where a feature's geometry sits in the plan: its first part and how many integers it has.
    fileprivate struct GeometryPlacement {
        var firstPart: Int
        var integers: Int
    }

    fileprivate static func decodeFeature(_ message: ProtobufReader, layer: String, index: Int, keys: [String],
                                          values: [FeatureValue], geometry placement: GeometryPlacement,
                                          plan: inout VertexPlan) throws(TileDecodingError) -> VectorTileFeature {
        var reader = message
        var id: UInt64?
        var type = GeometryType.unknown
        var tags: [UInt32] = []
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
                // The geometry is read below, once the type is known, straight from these bytes.
                guard wireType == .varint || wireType == .lengthDelimited else {
                    throw .unexpectedWireType(wireType.rawValue, offset: reader.offset)
                }
                try reader.skip(wireType)
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
        let geometry = try decodeGeometry(GeometryIntegers(message), placement: placement, type: type,
                                          layer: layer, feature: index, plan: &plan)
        return VectorTileFeature(id: id, type: type, properties: properties, geometry: geometry)
    }

    /// Runs the geometry command stream. Points collect into one part; lines and polygon rings
    /// start a part at each MoveTo. Rings are closed by ClosePath without repeating their first point.
    /// Each MoveTo starts a part of the plan, which says how many of its vertices to keep; every
    /// vertex is still checked, so thinning never hides a broken tile.
    private static func decodeGeometry(_ integers: GeometryIntegers, placement: GeometryPlacement, type: GeometryType,
                                       layer: String, feature: Int,
                                       plan: inout VertexPlan) throws(TileDecodingError) -> [[TilePoint]] {
        var integers = integers
        var consumed = 0
        var parts: [[TilePoint]] = []
        var current: [TilePoint] = []
        var hasCurrent = false
        var x: Int64 = 0, y: Int64 = 0
        var planPart = placement.firstPart - 1
        var thinning = Thinning(size: 0, keep: 0)
        // A part the plan leaves out entirely is not added, even as an empty one.
        var keepsCurrent = false

        func invalid(_ reason: String) -> TileDecodingError {
            .invalidGeometry(layer: layer, feature: feature, reason: reason)
        }

        while let command = try integers.next() {
            consumed += 1
            let id = command & 7, count = command >> 3
            switch id {
            case 1, 2:
                let remaining = placement.integers - consumed
                guard UInt64(count) * 2 <= UInt64(max(remaining, 0)) else {
                    throw .commandCountExceedsData(layer: layer, feature: feature, count: count, remaining: remaining)
                }
                if id == 1 {
                    if type != .point {
                        guard count == 1 else { throw invalid("MoveTo with count \(count) in a line or polygon") }
                        if hasCurrent && keepsCurrent { parts.append(current) }
                        current = []
                    }
                    planPart += 1
                    let planned = plan.thinning(ofPart: planPart)
                    thinning = planned ?? Thinning(size: 0, keep: 0)
                    // All points of a feature share one part, kept when any of its runs is.
                    keepsCurrent = planned != nil || (type == .point && hasCurrent && keepsCurrent)
                    hasCurrent = true
                    current.reserveCapacity(current.count + min(Int(count), thinning.keep))
                } else {
                    if type == .point { throw invalid("LineTo in a point feature") }
                    guard hasCurrent else { throw invalid("LineTo before any MoveTo") }
                }
                for _ in 0..<count {
                    guard let dx = try integers.next(), let dy = try integers.next() else {
                        throw .commandCountExceedsData(layer: layer, feature: feature, count: count, remaining: remaining)
                    }
                    consumed += 2
                    x += Int64(ProtobufReader.zigzag(dx))
                    y += Int64(ProtobufReader.zigzag(dy))
                    guard let px = Int32(exactly: x), let py = Int32(exactly: y) else {
                        throw .coordinateOverflow(layer: layer, feature: feature)
                    }
                    if thinning.keepsNext() { current.append(TilePoint(x: px, y: py)) }
                }
            case 7:
                guard count == 1 else { throw invalid("ClosePath with count \(count)") }
                if type == .point || type == .lineString { throw invalid("ClosePath outside a polygon") }
                guard hasCurrent else { throw invalid("ClosePath before any MoveTo") }
                if keepsCurrent { parts.append(current) }
                current = []
                hasCurrent = false
            default:
                throw .unknownCommand(layer: layer, feature: feature, command: command)
            }
        }
        if hasCurrent && keepsCurrent { parts.append(current) }
        return parts
    }
}

/// The integers of a feature's geometry field, read one at a time from the tile's bytes: packed
/// (the usual form, possibly split over several fields) or one varint per field.
struct GeometryIntegers {
    private var message: ProtobufReader
    private var run: ProtobufReader
    private var inRun = false

    init(_ feature: ProtobufReader) {
        message = feature
        run = feature
    }

    mutating func next() throws(TileDecodingError) -> UInt32? {
        while true {
            if inRun {
                if !run.isAtEnd { return try run.readVarint32() }
                inRun = false
            }
            guard !message.isAtEnd else { return nil }
            let (field, wireType) = try message.readTag()
            guard field == 4 else {
                try message.skip(wireType)
                continue
            }
            switch wireType {
            case .varint:
                return try message.readVarint32()
            case .lengthDelimited:
                run = try message.readMessage()
                inRun = true
            default:
                throw .unexpectedWireType(wireType.rawValue, offset: message.offset)
            }
        }
    }
}

/// Which vertices of one part are kept: `keep` of its `size`, evenly spread, first and last
/// included. Keeping every vertex is the common case; keeping none leaves the part out.
struct Thinning {
    let size: Int
    let keep: Int
    private var index = 0
    private var kept = 0
    private var nextKept = 0

    init(size: Int, keep: Int) {
        self.size = size
        self.keep = keep
    }

    /// Whether the next vertex of the part is kept.
    mutating func keepsNext() -> Bool {
        defer { index += 1 }
        guard kept < keep, index == nextKept else { return false }
        kept += 1
        // Vertex t of those kept is vertex t(size - 1)/(keep - 1) of the part.
        nextKept = keep > 1 ? kept * (size - 1) / (keep - 1) : Int.max
        return true
    }
}

/// Shares a tile's vertex budget out among its parts before anything is decoded.
///
/// The first pass measures every feature's geometry from its command integers (MoveTo and LineTo
/// carry their vertex counts), without decoding a vertex. When the tile has more vertices than
/// ``VectorTileLimits/maximumVertices``, every part keeps at most a common number of vertices,
/// the largest that fits (water-filling): small parts stay whole and only the outsized ones are
/// thinned. Features past ``VectorTileLimits/maximumFeatures`` and parts past
/// ``VectorTileLimits/maximumParts`` are left out.
package struct VertexPlan {
    let limits: VectorTileLimits
    /// Vertices of each part the plan keeps, as the tile encodes them.
    private(set) var partSizes: [Int] = []
    /// The most vertices a part keeps.
    private(set) var perPartCap = Int.max
    private var keptFeatures = 0
    private var tableEntries = 0
    private(set) var reductions = TileReductions()

    /// Rings need three vertices to enclose anything, so no part is thinned below that.
    package static let fewestKeptVertices = 3

    init(limits: VectorTileLimits) {
        self.limits = limits
    }

    mutating func dropLayer() {
        reductions.droppedLayers += 1
    }

    /// Counts a key or value against the tile's limit.
    mutating func countTableEntry(layer: String) throws(TileDecodingError) {
        tableEntries += 1
        guard tableEntries <= limits.maximumTableEntries else {
            throw .tooManyTableEntries(layer: layer, limit: limits.maximumTableEntries)
        }
    }

    /// Measures a feature's geometry; nil when the feature is left out.
    mutating func measure(_ feature: ProtobufReader) throws(TileDecodingError) -> (firstPart: Int, integers: Int)? {
        guard keptFeatures < limits.maximumFeatures else {
            reductions.droppedFeatures += 1
            return nil
        }
        let firstPart = partSizes.count
        var integers = GeometryIntegers(feature)
        var count = 0, parametersLeft = 0, parts = 0, droppedParts = 0
        var currentIsPlanned = false
        // Broken streams are measured as far as they make sense; decoding reports them.
        while let value = try integers.next() {
            count += 1
            if parametersLeft > 0 {
                parametersLeft -= 1
                continue
            }
            let vertices = Int(value >> 3)
            switch value & 7 {
            case 1:
                parts += 1
                currentIsPlanned = partSizes.count < limits.maximumParts
                if currentIsPlanned { partSizes.append(vertices) } else { droppedParts += 1 }
                parametersLeft = 2 * vertices
            case 2:
                if currentIsPlanned { partSizes[partSizes.count - 1] += vertices }
                parametersLeft = 2 * vertices
            default:
                break
            }
        }
        if parts > 0 && droppedParts == parts {
            reductions.droppedFeatures += 1
            return nil
        }
        reductions.droppedParts += droppedParts
        keptFeatures += 1
        return (firstPart, count)
    }

    /// Sets the per-part cap once every feature is measured.
    mutating func shareOutVertices() {
        let total = partSizes.reduce(0, +)
        guard total > limits.maximumVertices, let largest = partSizes.max() else { return }
        func keptVertices(cap: Int) -> Int { partSizes.reduce(0) { $0 + min($1, cap) } }
        // The largest cap whose total fits; parts are never thinned below three vertices, which
        // fits as long as maximumParts * 3 <= maximumVertices.
        var low = Self.fewestKeptVertices, high = largest
        while low < high {
            let middle = low + (high - low + 1) / 2
            if keptVertices(cap: middle) <= limits.maximumVertices { low = middle } else { high = middle - 1 }
        }
        perPartCap = low
    }

    /// How the vertices of part `index` are thinned; nil for a part the plan leaves out.
    mutating func thinning(ofPart index: Int) -> Thinning? {
        guard index >= 0, index < partSizes.count else { return nil }
        let size = partSizes[index]
        let keep = min(size, perPartCap)
        if keep < size { reductions.thinned(from: size, to: keep) }
        return Thinning(size: size, keep: keep)
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
    package static func signedAreaTimesTwo(_ ring: [TilePoint]) -> Double {
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
