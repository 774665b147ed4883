/// A decoded Mapbox Vector Tile (specification 2.1): named layers of features.
public struct VectorTile: Sendable {
    /// The tile's layers in the order the tile encodes them.
    public var layers: [VectorTileLayer]
    /// What decoding left out or thinned to keep the tile within its limits; empty for real tiles.
    public var reductions = TileReductions()

    /// Makes a tile of `layers`, with nothing reported as cut.
    public init(layers: [VectorTileLayer]) {
        self.layers = layers
    }

    /// The layer called `name`, if the tile has one.
    public func layer(named name: String) -> VectorTileLayer? {
        layers.first { $0.name == name }
    }

    /// About how many bytes the decoded tile holds: its points, part arrays and features with
    /// their property tables. Caches bound their memory with it.
    var byteEstimate: Int {
        var bytes = 0
        for layer in layers {
            bytes += 64 + layer.features.count * MemoryLayout<VectorTileFeature>.stride
            for feature in layer.features {
                // A dictionary entry of a string key and a value, with the table's slack.
                bytes += 32 + feature.properties.count * 64 + feature.geometry.count * 40
                for part in feature.geometry { bytes += part.count * MemoryLayout<TilePoint>.stride }
            }
        }
        return bytes
    }
}

/// One layer of a vector tile. Coordinates of its features are in `0..<extent` tile units
/// (they may stray outside that range into the tile's buffer).
public struct VectorTileLayer: Sendable {
    /// The layer's name, which styles refer to as `source-layer`.
    public var name: String
    /// The vector tile specification version the layer declares (1 or 2).
    public var version: Int
    /// Tile units across the tile, in both directions; usually 4096.
    public var extent: Int
    /// The layer's features in encoded order.
    public var features: [VectorTileFeature]

    /// Makes a layer; version and extent default to specification 2's usual 2 and 4096.
    public init(name: String, version: Int = 2, extent: Int = 4096, features: [VectorTileFeature]) {
        self.name = name
        self.version = version
        self.extent = extent
        self.features = features
    }
}

/// The geometry type of a feature, with the values the specification gives them.
public enum GeometryType: UInt8, Sendable {
    case unknown = 0
    case point = 1
    case lineString = 2
    case polygon = 3
}

/// A property value of a feature: every value type a vector tile can carry.
public enum FeatureValue: Sendable, Hashable {
    case string(String)
    case float(Float)
    case double(Double)
    case int(Int64)
    case uint(UInt64)
    case sint(Int64)
    case bool(Bool)

    /// The value as a number, for numeric types.
    public var number: Double? {
        switch self {
        case .float(let v): Double(v)
        case .double(let v): v
        case .int(let v), .sint(let v): Double(v)
        case .uint(let v): Double(v)
        case .string, .bool: nil
        }
    }
}

/// A point in tile units; y grows southwards.
public struct TilePoint: Hashable, Sendable {
    /// Tile units east of the tile's west edge.
    public var x: Int32
    /// Tile units south of the tile's north edge.
    public var y: Int32

    /// Makes the point (`x`, `y`) in tile units.
    public init(x: Int32, y: Int32) {
        self.x = x
        self.y = y
    }
}

/// One feature of a layer.
///
/// `geometry` holds the parts as the tile encodes them: for points, one part listing every point;
/// for lines, one part per line string; for polygons, one part per ring, each ring closed
/// implicitly (the first point is not repeated). ``polygons`` groups rings into polygons.
public struct VectorTileFeature: Sendable {
    /// The feature's id, when the tile gives one.
    public var id: UInt64?
    /// Point, line string or polygon: how to read `geometry`.
    public var type: GeometryType
    /// The feature's attributes by key, as filters and data-driven properties read them.
    public var properties: [String: FeatureValue]
    /// The parts in tile units, as described above.
    public var geometry: [[TilePoint]]

    /// Makes a feature from its type, attributes and parts.
    public init(id: UInt64? = nil, type: GeometryType, properties: [String: FeatureValue],
                geometry: [[TilePoint]]) {
        self.id = id
        self.type = type
        self.properties = properties
        self.geometry = geometry
    }
}
