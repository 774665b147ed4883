import Foundation
import CarWindowGeo
import CarWindowStyle

/// The tile sources a style's vector sources name, opened: each from its own `url` or `tiles`,
/// local or on a server, ready for `MapRenderer(tiles: basemap, sources: others)`.
///
/// A source's `url` may be `pmtiles://` followed by an http(s) URL or a path, `mbtiles://` and
/// a path, an http(s) TileJSON URL, a `.json` TileJSON file, or a path of a `.pmtiles` or
/// `.mbtiles` file or tile folder; `tiles` may list http(s) URL templates. Paths are relative
/// to the style file. Opening reads headers and TileJSON, so it blocks: call it off the render
/// thread and outside Swift's cooperative pool where that matters (a task of its own).
public struct StyleTileSources: Sendable {
    /// The source of the first vector layer: every unbound vector source would draw from it,
    /// and it sets the zoom levels tiles are loaded at.
    public var basemap: any TileSource
    /// The style's id of ``basemap``.
    public var basemapID: String
    /// The style's other vector sources by id, for `MapRenderer(sources:)`.
    public var others: [String: any TileSource]

    /// Opens every vector source of `style`; `given` are sources the caller opened itself (an
    /// archive on the device for a source whose URL needs a key), used as they are.
    ///
    /// - Throws: ``StyleSourcesError`` listing every source that could not be opened, and why.
    public static func open(for style: Style, fetcher: HTTPFetcher,
                            given: [String: any TileSource] = [:]) throws(StyleSourcesError) -> StyleTileSources {
        let vectorIDs = style.sources.filter { $0.value.type == .vector }.keys.sorted()
        guard !vectorIDs.isEmpty else { throw .noVectorSource }
        var opened: [String: any TileSource] = [:]
        var failures: [String: TileSourceError] = [:]
        for id in vectorIDs {
            if let source = given[id] {
                opened[id] = source
                continue
            }
            do throws(TileSourceError) {
                opened[id] = try openSource(style.sources[id]!, id: id, baseURL: style.baseURL, fetcher: fetcher)
            } catch {
                failures[id] = error
            }
        }
        guard failures.isEmpty else { throw .unopenable(failures) }
        let firstDrawn = style.layers.lazy.compactMap(\.source).first { vectorIDs.contains($0) } ?? vectorIDs[0]
        var others = opened
        let basemap = others.removeValue(forKey: firstDrawn)!
        return StyleTileSources(basemap: basemap, basemapID: firstDrawn, others: others)
    }

    /// One vector source, from its `url` or else its `tiles`.
    static func openSource(_ source: StyleSource, id: String, baseURL: URL?,
                           fetcher: HTTPFetcher) throws(TileSourceError) -> any TileSource {
        if let url = source.url {
            let lower = url.lowercased()
            for scheme in ["pmtiles://", "mbtiles://"] where lower.hasPrefix(scheme) {
                let rest = String(url.dropFirst(scheme.count))
                if rest.lowercased().hasPrefix("http://") || rest.lowercased().hasPrefix("https://") {
                    guard scheme == "pmtiles://", let remote = URL(string: rest) else {
                        throw .network(url: url, reason: "MBTiles cannot be read over HTTP; download the file")
                    }
                    return try PMTilesSource.remote(remote, fetcher: fetcher)
                }
                return try openTileSource(at: file(rest, relativeTo: baseURL))
            }
            if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
                guard let address = URL(string: url) else { throw .network(url: url, reason: "not a URL") }
                let answer = try fetcher.get(address, limit: TileJSON.maximumBytes)
                guard answer.status != 404 else { throw .network(url: url, reason: "there is no TileJSON at this address (404)") }
                return try templateSource(TileJSON(data: answer.body, url: url), source: source, fetcher: fetcher)
            }
            let local = file(url, relativeTo: baseURL)
            if local.pathExtension.lowercased() == "json" {
                let data: Data
                do {
                    data = try Data(contentsOf: local)
                } catch {
                    throw .unreadable(path: local.path, reason: error.localizedDescription)
                }
                guard data.count <= TileJSON.maximumBytes else {
                    throw .unreadable(path: local.path, reason: "a TileJSON of more than \(TileJSON.maximumBytes) bytes")
                }
                return try templateSource(TileJSON(data: data, url: local.absoluteString), source: source, fetcher: fetcher)
            }
            return try openTileSource(at: local)
        }
        guard !source.tiles.isEmpty else {
            throw .network(url: id, reason: "the source names neither a \"url\" nor \"tiles\"")
        }
        return try URLTemplateTileSource(templates: source.tiles, minZoom: Int(source.minZoom), maxZoom: Int(source.maxZoom),
                                         attribution: source.attribution, name: id, fetcher: fetcher)
    }

    /// A TileJSON's templates; the style's own zoom range wins where it sets one.
    private static func templateSource(_ tileJSON: TileJSON, source: StyleSource,
                                       fetcher: HTTPFetcher) throws(TileSourceError) -> URLTemplateTileSource {
        try URLTemplateTileSource(
            templates: tileJSON.tiles, minZoom: source.minZoom != 0 ? Int(source.minZoom) : tileJSON.minZoom,
            maxZoom: source.maxZoom != 22 ? Int(source.maxZoom) : tileJSON.maxZoom, bounds: tileJSON.bounds,
            attribution: tileJSON.attribution, name: tileJSON.name, isTMS: tileJSON.isTMS, fetcher: fetcher)
    }

    /// A path or `file://` URL, relative to the style's folder.
    private static func file(_ reference: String, relativeTo baseURL: URL?) -> URL {
        if reference.lowercased().hasPrefix("file://"), let url = URL(string: reference) { return url }
        if reference.hasPrefix("/") { return URL(fileURLWithPath: reference) }
        let folder = baseURL?.deletingLastPathComponent() ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        return folder.appendingPathComponent(reference).standardizedFileURL
    }
}

/// Why a style's sources could not be opened.
public enum StyleSourcesError: Error, Sendable, CustomStringConvertible {
    /// The style has no vector source: nothing to draw a map from.
    case noVectorSource
    /// These sources failed, by id.
    case unopenable([String: TileSourceError])

    public var description: String {
        switch self {
        case .noVectorSource:
            "the style has no vector source; add one, or give the tiles to draw (the CLI's --tiles, the C API's tiles_path)"
        case .unopenable(let failures):
            "the style's " + failures.sorted { $0.key < $1.key }.map { "source \"\($0.key)\": \($0.value)" }.joined(separator: "; ")
                + " (give the tiles yourself: the CLI's --tiles, or --source ID=PATH for one source; the C API's tiles_path)"
        }
    }
}
