import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowSystemSupport

/// A GeoJSON geometry in geographic coordinates.
public enum GeoJSONGeometry: Sendable, Equatable {
    case point(GeoCoordinate)
    case multiPoint([GeoCoordinate])
    case lineString([GeoCoordinate])
    case multiLineString([[GeoCoordinate]])
    /// Outer ring first, then holes.
    case polygon([[GeoCoordinate]])
    case multiPolygon([[[GeoCoordinate]]])
}

/// One feature of a GeoJSON source: a geometry and the properties style expressions read.
public struct GeoJSONFeature: Sendable {
    /// What `["id"]` gives; GeoJSON string ids are not kept.
    public var id: UInt64?
    public var geometry: GeoJSONGeometry
    /// What `["get", ...]` reads.
    public var properties: [String: FeatureValue]

    /// Makes a feature; an engine's search result, traffic segment or alternative route.
    public init(id: UInt64? = nil, geometry: GeoJSONGeometry, properties: [String: FeatureValue] = [:]) {
        self.id = id
        self.geometry = geometry
        self.properties = properties
    }
}

/// Why GeoJSON could not be read.
public enum GeoJSONError: Error, Equatable, CustomStringConvertible {
    /// The bytes are not JSON, or not GeoJSON at `path` (a JSON path).
    case invalid(path: String, reason: String)
    /// More than the limits allow.
    case tooLarge(reason: String)
    /// The file could not be read.
    case unreadable(path: String, reason: String)

    public var description: String {
        switch self {
        case .invalid(let path, let reason):
            "the GeoJSON is not usable at \(path.isEmpty ? "its root" : path): \(reason). Give a FeatureCollection, a Feature or a geometry."
        case .tooLarge(let reason):
            "the GeoJSON is too large: \(reason). Split it, or simplify the geometry before handing it over."
        case .unreadable(let path, let reason):
            "cannot read the GeoJSON file \(path): \(reason)"
        }
    }
}

/// GeoJSON ready to be drawn: features projected to Web Mercator and cut into tiles on demand,
/// at whatever zoom the map needs, so an engine's points, lines and areas are drawn by ordinary
/// style layers whose `source` is a `geojson` source.
///
/// Made on any thread (parsing and projecting is the costly part); immutable afterwards.
public struct GeoJSONData: Sendable {
    /// Bytes of GeoJSON text accepted.
    public static let maximumBytes = 64 << 20
    /// Features accepted.
    public static let maximumFeatures = 200_000
    /// Coordinates accepted over all features.
    public static let maximumCoordinates = 4_000_000

    struct ProjectedFeature: Sendable {
        var id: UInt64?
        var type: GeometryType
        var properties: [String: FeatureValue]
        /// Parts in world coordinates (0...1 across the Web Mercator square): points of a
        /// multipoint as one part each, lines, or rings (outer first).
        var parts: [[SIMD2<Double>]]
        /// minX, minY, maxX, maxY in world coordinates.
        var bounds: SIMD4<Double>
    }

    let features: [ProjectedFeature]

    /// The features given.
    public var featureCount: Int { features.count }

    /// No features.
    public static let empty = GeoJSONData(projected: [])

    init(projected: [ProjectedFeature]) {
        features = projected
    }

    /// Takes the engine's typed features; coordinates that are not finite are left out.
    public init(features: [GeoJSONFeature]) {
        self.init(projected: features.compactMap(Self.project))
    }

    /// Parses GeoJSON text: a FeatureCollection, a Feature or a bare geometry.
    public init(data: Data) throws(GeoJSONError) {
        guard data.count <= Self.maximumBytes else {
            throw .tooLarge(reason: "\(data.count) bytes, more than the \(Self.maximumBytes) accepted")
        }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: data)
        } catch {
            throw .invalid(path: "", reason: "it is not JSON (\(error))")
        }
        try self.init(json: json)
    }

    /// Reads a GeoJSON file.
    public init(contentsOf url: URL) throws(GeoJSONError) {
        let data: Data
        do {
            data = Data(try InputFile.read(url.path, limit: Self.maximumBytes))
        } catch {
            if let (size, limit) = error.tooLarge {
                throw .tooLarge(reason: "\(url.path) has \(size) bytes, more than the \(limit) accepted")
            }
            throw .unreadable(path: url.path, reason: error.reason)
        }
        try self.init(data: data)
    }

    package init(json: JSONValue) throws(GeoJSONError) {
        var reader = GeoJSONReader()
        try reader.read(json, path: "")
        self.init(features: reader.features)
    }

    /// One polygon's rings wound as vector tiles wind them (y down: the exterior's shoelace sum
    /// positive, holes negative), whatever GeoJSON gave: RFC 7946 asks for the opposite, and
    /// much GeoJSON follows neither. Rings without area are dropped, and a polygon whose
    /// exterior has none with them.
    static func oriented(_ rings: [[SIMD2<Double>]]) -> [[SIMD2<Double>]] {
        var result: [[SIMD2<Double>]] = []
        for (index, ring) in rings.enumerated() {
            var area = 0.0
            for i in ring.indices {
                let a = ring[i], b = ring[(i + 1) % ring.count]
                area += a.x * b.y - b.x * a.y
            }
            guard area != 0, area.isFinite else {
                if index == 0 { return [] }
                continue
            }
            let wantsPositive = index == 0
            result.append((area > 0) == wantsPositive ? ring : ring.reversed())
        }
        return result
    }

    static func project(_ feature: GeoJSONFeature) -> ProjectedFeature? {
        func world(_ points: [GeoCoordinate]) -> [SIMD2<Double>] {
            points.compactMap { point in
                guard point.latitude.isFinite, point.longitude.isFinite else { return nil }
                return WebMercator.project(point)
            }
        }
        let type: GeometryType
        var parts: [[SIMD2<Double>]]
        switch feature.geometry {
        case .point(let point): type = .point; parts = [world([point])]
        case .multiPoint(let points): type = .point; parts = world(points).map { [$0] }
        case .lineString(let line): type = .lineString; parts = [world(line)]
        case .multiLineString(let lines): type = .lineString; parts = lines.map(world)
        case .polygon(let rings): type = .polygon; parts = oriented(rings.map(world))
        case .multiPolygon(let polygons): type = .polygon; parts = polygons.flatMap { oriented($0.map(world)) }
        }
        let minimum = type == .point ? 1 : type == .lineString ? 2 : 4
        parts.removeAll { $0.count < minimum }
        guard !parts.isEmpty else { return nil }
        var low = SIMD2<Double>(repeating: .infinity), high = SIMD2<Double>(repeating: -.infinity)
        for part in parts {
            for point in part {
                low = pointwiseMin(low, point)
                high = pointwiseMax(high, point)
            }
        }
        return ProjectedFeature(id: feature.id, type: type, properties: feature.properties, parts: parts,
                                bounds: SIMD4(low.x, low.y, high.x, high.y))
    }
}

/// Walks GeoJSON, collecting features and counting against the limits.
private struct GeoJSONReader {
    var features: [GeoJSONFeature] = []
    private var coordinates = 0

    mutating func read(_ json: JSONValue, path: String) throws(GeoJSONError) {
        guard case .object(let object) = json else {
            throw .invalid(path: path, reason: "\(json.typeName) where an object was expected")
        }
        guard case .string(let type)? = object["type"] else {
            throw .invalid(path: JSONPath.member(path, "type"), reason: "every GeoJSON object needs a \"type\" string")
        }
        switch type {
        case "FeatureCollection":
            guard case .array(let list)? = object["features"] else {
                throw .invalid(path: JSONPath.member(path, "features"), reason: "a FeatureCollection needs a \"features\" array")
            }
            for (index, feature) in list.enumerated() {
                try read(feature, path: JSONPath.index(JSONPath.member(path, "features"), index))
            }
        case "Feature":
            var properties: [String: FeatureValue] = [:]
            if case .object(let members)? = object["properties"] {
                for member in members {
                    if let value = Self.value(member.value) { properties[member.key] = value }
                }
            }
            var id: UInt64?
            if case .number(let number)? = object["id"], number >= 0, number < 1.8e19, number == number.rounded() {
                id = UInt64(number)
            }
            guard let geometryJSON = object["geometry"], geometryJSON != .null else { return } // allowed, drawn as nothing
            try geometries(geometryJSON, path: JSONPath.member(path, "geometry"), id: id, properties: properties)
        default:
            try geometries(json, path: path, id: nil, properties: [:])
        }
    }

    private mutating func geometries(_ json: JSONValue, path: String, id: UInt64?,
                                     properties: [String: FeatureValue]) throws(GeoJSONError) {
        guard case .object(let object) = json, case .string(let type)? = object["type"] else {
            throw .invalid(path: path, reason: "a geometry must be an object with a \"type\"")
        }
        if type == "GeometryCollection" {
            guard case .array(let list)? = object["geometries"] else {
                throw .invalid(path: JSONPath.member(path, "geometries"), reason: "a GeometryCollection needs a \"geometries\" array")
            }
            for (index, geometry) in list.enumerated() {
                try geometries(geometry, path: JSONPath.index(JSONPath.member(path, "geometries"), index), id: id,
                               properties: properties)
            }
            return
        }
        guard let coordinatesJSON = object["coordinates"] else {
            throw .invalid(path: JSONPath.member(path, "coordinates"), reason: "a \(type) needs \"coordinates\"")
        }
        let at = JSONPath.member(path, "coordinates")
        let geometry: GeoJSONGeometry
        switch type {
        case "Point": geometry = .point(try position(coordinatesJSON, path: at))
        case "MultiPoint": geometry = .multiPoint(try positions(coordinatesJSON, path: at))
        case "LineString": geometry = .lineString(try positions(coordinatesJSON, path: at))
        case "MultiLineString": geometry = .multiLineString(try nested(coordinatesJSON, path: at))
        case "Polygon": geometry = .polygon(try nested(coordinatesJSON, path: at))
        case "MultiPolygon":
            guard case .array(let list) = coordinatesJSON else {
                throw .invalid(path: at, reason: "a MultiPolygon's coordinates are an array of polygons")
            }
            var polygons: [[[GeoCoordinate]]] = []
            for (index, polygon) in list.enumerated() {
                polygons.append(try nested(polygon, path: JSONPath.index(at, index)))
            }
            geometry = .multiPolygon(polygons)
        default:
            throw .invalid(path: JSONPath.member(path, "type"), reason: "\"\(type)\" is not a GeoJSON geometry type")
        }
        guard features.count < GeoJSONData.maximumFeatures else {
            throw .tooLarge(reason: "more than \(GeoJSONData.maximumFeatures) features")
        }
        features.append(GeoJSONFeature(id: id, geometry: geometry, properties: properties))
    }

    private mutating func position(_ json: JSONValue, path: String) throws(GeoJSONError) -> GeoCoordinate {
        guard case .array(let values) = json, values.count >= 2,
              case .number(let longitude) = values[0], case .number(let latitude) = values[1] else {
            throw .invalid(path: path, reason: "a position is [longitude, latitude]")
        }
        guard longitude.isFinite, latitude.isFinite, (-180...180).contains(longitude), (-90...90).contains(latitude) else {
            throw .invalid(path: path, reason: "[\(longitude), \(latitude)] is not a longitude in -180...180 and a latitude in -90...90")
        }
        coordinates += 1
        guard coordinates <= GeoJSONData.maximumCoordinates else {
            throw .tooLarge(reason: "more than \(GeoJSONData.maximumCoordinates) coordinates")
        }
        return GeoCoordinate(latitude: latitude, longitude: longitude)
    }

    private mutating func positions(_ json: JSONValue, path: String) throws(GeoJSONError) -> [GeoCoordinate] {
        guard case .array(let list) = json else { throw .invalid(path: path, reason: "expected an array of positions") }
        var result: [GeoCoordinate] = []
        result.reserveCapacity(list.count)
        for (index, entry) in list.enumerated() { result.append(try position(entry, path: JSONPath.index(path, index))) }
        return result
    }

    private mutating func nested(_ json: JSONValue, path: String) throws(GeoJSONError) -> [[GeoCoordinate]] {
        guard case .array(let list) = json else { throw .invalid(path: path, reason: "expected an array of position arrays") }
        var result: [[GeoCoordinate]] = []
        for (index, entry) in list.enumerated() { result.append(try positions(entry, path: JSONPath.index(path, index))) }
        return result
    }

    /// Properties become what vector tiles carry; nested objects and arrays are kept as their
    /// JSON text, nulls are left out.
    private static func value(_ json: JSONValue) -> FeatureValue? {
        switch json {
        case .null: nil
        case .bool(let flag): .bool(flag)
        case .number(let number): number.isFinite ? .double(number) : nil
        case .string(let text): .string(text)
        default: .string("\(json)")
        }
    }
}
