import Foundation
import Logging
import CarWindowGeo

/// A PMTiles archive on a server, read with byte-range requests through an ``HTTPFetcher``
/// (and its disk cache). The archive's `ETag` from the opening read is kept: a range that
/// comes back with another one means the archive was replaced, which is an error rather than a
/// map stitched from two versions.
public final class HTTPByteRanges: ByteRangeReader {
    public let size: UInt64
    public var location: String { url.absoluteString }
    private let url: URL
    private let fetcher: HTTPFetcher
    private let etag: String?
    /// The archive's first bytes, read to learn its size: the header and root directory that
    /// opening the archive reads next.
    private let opening: Data

    /// The bytes asked for first: as many as PMTiles opening reads.
    static let openingLength = 16_384

    /// Asks the server for the archive's first bytes to learn its size and version.
    ///
    /// - Throws: `TileSourceError.network` when the server cannot be reached,
    ///   does not serve byte ranges, or has no archive there.
    public init(url: URL, fetcher: HTTPFetcher) throws(TileSourceError) {
        self.url = url
        self.fetcher = fetcher
        let first = try fetcher.get(url, range: 0..<UInt64(Self.openingLength), limit: Self.openingLength)
        guard first.status == 206, let total = first.totalSize, total > 0 else {
            throw .network(url: url.absoluteString, reason: first.status == 404 ? "there is nothing at this address (404)"
                                                                                 : "the server gave no archive size")
        }
        size = total
        etag = first.etag
        opening = first.body
    }

    public func read(offset: UInt64, length: Int) throws(TileSourceError) -> Data {
        guard length > 0 else { return Data() }
        if offset + UInt64(length) <= UInt64(opening.count) {
            return opening.subdata(in: Int(offset)..<(Int(offset) + length))
        }
        let answer = try fetcher.get(url, range: offset..<(offset + UInt64(length)), limit: length)
        guard answer.status == 206 else {
            throw .network(url: url.absoluteString, reason: "bytes \(offset)+\(length) are not there (HTTP \(answer.status))")
        }
        if let etag, let now = answer.etag, now != etag {
            throw .network(url: url.absoluteString,
                           reason: "the archive changed on the server (ETag \(etag) became \(now)); open it again")
        }
        return answer.body
    }
}

extension PMTilesSource {
    /// A PMTiles archive on a server (`https://host/planet.pmtiles`), read in byte ranges as
    /// tiles are needed, through `fetcher`'s disk cache.
    public static func remote(_ url: URL, fetcher: HTTPFetcher) throws(TileSourceError) -> PMTilesSource {
        try PMTilesSource(reader: HTTPByteRanges(url: url, fetcher: fetcher),
                          fallbackName: url.deletingPathExtension().lastPathComponent)
    }
}

/// Vector tiles from a server's URL templates (`https://host/tiles/{z}/{x}/{y}.pbf`), as a
/// style's `tiles` or a TileJSON gives them, through an ``HTTPFetcher`` and its disk cache.
/// A 404 is a tile the server lacks; gzip-compressed bodies are inflated.
public final class URLTemplateTileSource: TileSource {
    public let name: String
    public let minZoom: Int
    public let maxZoom: Int
    public let bounds: GeoBounds?
    public let attribution: String?
    /// The templates; tiles are spread over several (`a.`, `b.` hosts) by position.
    public let templates: [String]
    /// Whether y counts from the south (`"scheme": "tms"`).
    public let isTMS: Bool
    private let fetcher: HTTPFetcher

    /// Tiles of `templates` (each with `{z}`, `{x}` and `{y}`), between `minZoom` and `maxZoom`.
    ///
    /// - Throws: `TileSourceError.network` when a template is not an HTTP(S)
    ///   URL with the three placeholders, or the zoom range is impossible.
    public init(templates: [String], minZoom: Int = 0, maxZoom: Int = 22, bounds: GeoBounds? = nil,
                attribution: String? = nil, name: String? = nil, isTMS: Bool = false,
                fetcher: HTTPFetcher) throws(TileSourceError) {
        // A template that went through URL parsing has its braces escaped.
        let templates = templates.map {
            $0.replacingOccurrences(of: "%7B", with: "{", options: .caseInsensitive)
                .replacingOccurrences(of: "%7D", with: "}", options: .caseInsensitive)
        }
        guard let first = templates.first else { throw .network(url: "", reason: "no tile URL templates") }
        for template in templates {
            let lower = template.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"),
                  template.contains("{z}"), template.contains("{x}"), template.contains("{y}") else {
                throw .network(url: template, reason: "a tile URL template is an http(s) URL with {z}, {x} and {y}")
            }
        }
        guard minZoom >= 0, minZoom <= maxZoom, maxZoom <= 30 else {
            throw .network(url: first, reason: "the zoom range \(minZoom)...\(maxZoom) is impossible")
        }
        self.templates = templates
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.bounds = bounds
        self.attribution = attribution
        self.isTMS = isTMS
        self.fetcher = fetcher
        self.name = name ?? URL(string: first.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: ""))?.host ?? first
    }

    /// The URL of `tile`.
    public func url(for tile: TileID) -> URL? {
        let template = templates[(tile.x + tile.y) % templates.count]
        let y = isTMS ? (1 << tile.z) - 1 - tile.y : tile.y
        return URL(string: template.replacingOccurrences(of: "{z}", with: String(tile.z))
            .replacingOccurrences(of: "{x}", with: String(tile.x)).replacingOccurrences(of: "{y}", with: String(y)))
    }

    public func data(for tile: TileID) throws(TileSourceError) -> Data? {
        guard tile.isValid, tile.z >= minZoom, tile.z <= maxZoom, let url = url(for: tile) else { return nil }
        let answer = try fetcher.get(url, limit: VectorTileLimits.standard.maximumBytes)
        guard answer.status != 404, !answer.body.isEmpty else { return nil }
        guard Gzip.isCompressed(answer.body) else { return answer.body }
        do throws(GzipError) {
            return try Gzip.decompress(answer.body, limit: VectorTileLimits.standard.maximumBytes)
        } catch {
            throw .corruptTile(tile, error.description)
        }
    }
}

/// A TileJSON document (https://github.com/mapbox/tilejson-spec): where a style's `url` says
/// its tiles are.
struct TileJSON {
    static let maximumBytes = 1 << 20

    var tiles: [String]
    var minZoom: Int
    var maxZoom: Int
    var bounds: GeoBounds?
    var attribution: String?
    var name: String?
    var isTMS: Bool

    init(data: Data, url: String) throws(TileSourceError) {
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw .network(url: url, reason: "the TileJSON is not a JSON object")
        }
        guard let tiles = object["tiles"] as? [String], !tiles.isEmpty else {
            throw .network(url: url, reason: "the TileJSON lists no \"tiles\" URLs")
        }
        // Relative templates are resolved against the document, as MapLibre resolves them.
        let base = URL(string: url)
        self.tiles = tiles.map { template in
            template.contains("://") ? template
                : base.flatMap { URL(string: template, relativeTo: $0)?.absoluteString } ?? template
        }
        func zoom(_ key: String, _ fallback: Int) -> Int {
            guard let value = (object[key] as? NSNumber)?.doubleValue, value.isFinite else { return fallback }
            return Int(min(max(value, 0), 30))
        }
        minZoom = zoom("minzoom", 0)
        maxZoom = max(zoom("maxzoom", 22), minZoom)
        if let box = object["bounds"] as? [NSNumber], box.count == 4 {
            let values = box.map(\.doubleValue)
            if values.allSatisfy(\.isFinite) {
                bounds = GeoBounds(southWest: GeoCoordinate(latitude: values[1], longitude: values[0]),
                                   northEast: GeoCoordinate(latitude: values[3], longitude: values[2]))
            }
        }
        attribution = object["attribution"] as? String
        name = object["name"] as? String
        isTMS = (object["scheme"] as? String)?.lowercased() == "tms"
    }
}
