import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowSystemSupport

/// Why a GeoJSON document could not be read as a route.
package enum GeoJSONRouteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// The document is larger than the stated limit.
    case tooLarge(bytes: Int, limit: Int)
    /// The bytes are not JSON; `reason` says where and why.
    case notJSON(reason: String)
    /// The document has no LineString or MultiLineString; `found` names what it has instead.
    case noLine(found: String)
    /// A member does not have the shape GeoJSON gives it (RFC 7946); `path` locates it.
    case malformed(path: String, reason: String)
    /// The line has fewer than two distinct points.
    case tooFewPoints(count: Int)
    /// The line has more points than the stated limit.
    case tooManyPoints(count: Int, limit: Int)
    /// Point `index` (counting from 0 across all lines) is not a finite longitude in -180...180
    /// and latitude in -90...90.
    case coordinateOutOfRange(index: Int, longitude: Double, latitude: Double)

    /// What went wrong and what to do about it, for logs and error messages.
    package var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "Cannot read the route file \(path): \(reason); check the path and its permissions."
        case .tooLarge(let bytes, let limit):
            "The route document is \(bytes) bytes, more than the limit of \(limit); simplify the route."
        case .notJSON(let reason):
            "The route document is not JSON: \(reason)."
        case .noLine(let found):
            "The route document holds no LineString or MultiLineString (found \(found)); export the route as a GeoJSON line."
        case .malformed(let path, let reason):
            "The route document's \(path) is not valid GeoJSON: \(reason)."
        case .tooFewPoints(let count):
            "The route has \(count) distinct point\(count == 1 ? "" : "s"); a route needs at least two."
        case .tooManyPoints(let count, let limit):
            "The route has \(count) points, more than the limit of \(limit); simplify it first."
        case .coordinateOutOfRange(let index, let longitude, let latitude):
            "Route point \(index) [\(longitude), \(latitude)] is not a longitude in -180...180 and latitude in -90...90; GeoJSON puts longitude first."
        }
    }
}

extension DrivingRoute {
    /// 40 km/h, the speed most city streets allow: the speed limit of routes whose files give none.
    package static let defaultSpeedLimit = 40 / 3.6
    /// Routes read from GeoJSON may have at most this many points unless told otherwise.
    package static let defaultMaximumGeoJSONPoints = 100_000
    /// GeoJSON documents larger than this are refused before parsing (64 MiB).
    package static let maximumGeoJSONBytes = 64 << 20

    /// Reads a route from a GeoJSON file (see ``init(geoJSON:speedLimit:maximumPoints:)``).
    package init(geoJSONContentsOf url: URL, speedLimit: Double = DrivingRoute.defaultSpeedLimit,
                maximumPoints: Int = DrivingRoute.defaultMaximumGeoJSONPoints) throws(GeoJSONRouteError) {
        let data: Data
        do {
            data = Data(try InputFile.read(url.path, limit: Self.maximumGeoJSONBytes))
        } catch {
            if let (size, limit) = error.tooLarge { throw .tooLarge(bytes: size, limit: limit) }
            throw .unreadable(path: url.path, reason: error.reason)
        }
        try self.init(geoJSON: data, speedLimit: speedLimit, maximumPoints: maximumPoints)
    }

    /// Reads a route from GeoJSON text: a LineString; a MultiLineString, its lines joined in order;
    /// a Feature with either geometry; or the first such line of a FeatureCollection or
    /// GeometryCollection. Every segment gets `speedLimit` (metres per second) and the class
    /// ``RoadClass/unknown``; repeated consecutive points are dropped.
    package init(geoJSON data: Data, speedLimit: Double = DrivingRoute.defaultSpeedLimit,
                maximumPoints: Int = DrivingRoute.defaultMaximumGeoJSONPoints) throws(GeoJSONRouteError) {
        guard data.count <= Self.maximumGeoJSONBytes else {
            throw .tooLarge(bytes: data.count, limit: Self.maximumGeoJSONBytes)
        }
        let document: JSONValue
        do {
            document = try JSONValue(parsing: data)
        } catch {
            if case .invalidJSON(let line, let column, let reason) = error {
                throw .notJSON(reason: "line \(line), column \(column): \(reason)")
            }
            throw .notJSON(reason: error.description)
        }
        let lines = try Self.lineCoordinates(in: document, path: "document")
        let total = lines.reduce(0) { $0 + $1.positions.count }
        guard total <= maximumPoints else { throw .tooManyPoints(count: total, limit: maximumPoints) }
        var points: [GeoCoordinate] = []
        points.reserveCapacity(total)
        var index = 0
        for line in lines {
            for (offset, position) in line.positions.enumerated() {
                let path = "\(line.path)[\(offset)]"
                guard case .array(let numbers) = position else {
                    throw .malformed(path: path, reason: "a position must be an array [longitude, latitude], found \(position.typeName)")
                }
                guard numbers.count >= 2, case .number(let longitude) = numbers[0], case .number(let latitude) = numbers[1] else {
                    throw .malformed(path: path, reason: "a position must start with two numbers, longitude then latitude")
                }
                let point = GeoCoordinate(latitude: latitude, longitude: longitude)
                guard GeoMath.isValid(point) else {
                    throw .coordinateOutOfRange(index: index, longitude: longitude, latitude: latitude)
                }
                if points.last != point { points.append(point) }
                index += 1
            }
        }
        guard points.count >= 2 else { throw .tooFewPoints(count: points.count) }
        self.init(points: points, speedLimit: speedLimit)
    }

    /// The `coordinates` arrays of the route's line or lines, with their paths for error messages.
    private static func lineCoordinates(in value: JSONValue, path: String) throws(GeoJSONRouteError) -> [(path: String, positions: [JSONValue])] {
        guard case .object = value else {
            throw .malformed(path: path, reason: "a GeoJSON object was expected, found \(value.typeName)")
        }
        guard case .string(let type)? = value["type"] else {
            throw .malformed(path: "\(path).type", reason: "every GeoJSON object needs a string \"type\"")
        }
        func coordinates() throws(GeoJSONRouteError) -> [JSONValue] {
            guard case .array(let array)? = value["coordinates"] else {
                throw .malformed(path: "\(path).coordinates", reason: "a \(type) needs a \"coordinates\" array")
            }
            return array
        }
        switch type {
        case "LineString":
            return [("\(path).coordinates", try coordinates())]
        case "MultiLineString":
            var lines: [(path: String, positions: [JSONValue])] = []
            for (index, line) in try coordinates().enumerated() {
                guard case .array(let positions) = line else {
                    throw .malformed(path: "\(path).coordinates[\(index)]", reason: "each line of a MultiLineString must be an array of positions")
                }
                lines.append(("\(path).coordinates[\(index)]", positions))
            }
            return lines
        case "Feature":
            guard let geometry = value["geometry"], geometry != .null else { throw .noLine(found: "a Feature without geometry") }
            return try lineCoordinates(in: geometry, path: "\(path).geometry")
        case "FeatureCollection", "GeometryCollection":
            let key = type == "FeatureCollection" ? "features" : "geometries"
            guard case .array(let members)? = value[key] else {
                throw .malformed(path: "\(path).\(key)", reason: "a \(type) needs a \"\(key)\" array")
            }
            var found: [String] = []
            for (index, member) in members.enumerated() {
                let memberPath = "\(path).\(key)[\(index)]"
                do {
                    return try lineCoordinates(in: member, path: memberPath)
                } catch {
                    guard case .noLine(let what) = error else { throw error }
                    if found.count < 3 { found.append(what) }
                }
            }
            throw .noLine(found: members.isEmpty ? "an empty \(type)" : "a \(type) of \(found.joined(separator: ", "))\(members.count > 3 ? ", ..." : "")")
        default:
            throw .noLine(found: "a \(type)")
        }
    }
}
