import CarWindowGeo
import CarWindowStyle
import CarWindowSystemSupport
import Foundation

/// Brings the parts of a style that live on servers, besides its tiles, to files: its sprites
/// (the 1x and 2x sheets and their indexes) and the `data` of its GeoJSON sources. Styles as
/// published name their sprite on a server, and the map reads sprites and GeoJSON from files.
///
/// Everything goes through the fetcher and its disk cache, with the tiles' timeouts and a limit
/// on every body, so a sprite is fetched once and still draws while the network is gone.
public enum StyleResources {
    /// The most bytes a sprite sheet, a sprite index or a GeoJSON document may have on the wire.
    /// The map checks each again when it reads the file (a sheet's side, an index's entries, a
    /// document's features).
    public static let maximumBytes = 64 << 20

    /// `style` with every sprite and GeoJSON `data` on an `http(s)` server fetched into
    /// `folder` and its URL pointing there; what could not be fetched keeps its URL (the map
    /// then draws without it, with a warning) and comes back in `warnings`.
    ///
    /// Blocks the calling thread for the downloads: call it before the map is made, or from a
    /// thread of your own, not from Swift's cooperative pool.
    ///
    /// - Parameters:
    ///   - style: the style as loaded; sprites and `data` that are files or inline stay as they are.
    ///   - fetcher: the fetcher (and its disk cache) the style's tiles use.
    ///   - folder: where the files go, made if missing; named by each URL's hash, so styles
    ///     may share it.
    /// - Returns: the style pointing at the fetched files, and one warning for each sprite or
    ///   GeoJSON document that could not be fetched.
    public static func fetch(for style: Style, fetcher: HTTPFetcher, into folder: URL) -> (style: Style, warnings: [String]) {
        var localized = style
        var warnings: [String] = []
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            return (style, ["the folder for the style's sprites and GeoJSON, \(folder.path), cannot be made: \(error.localizedDescription)"])
        }
        for (position, reference) in style.sprites.enumerated() {
            guard let base = serverURL(reference.url) else { continue }
            do throws(StyleResourceError) {
                let local = folder.appendingPathComponent(CacheEntryName.of(reference.url, fileExtension: "sprite")).path
                try fetchSprite(base, to: local, fetcher: fetcher)
                localized.sprites[position] = SpriteReference(id: reference.id, url: local)
            } catch {
                warnings.append("\(error); icons of sprite \"\(reference.id)\" are not drawn")
            }
        }
        for (id, source) in style.sources.sorted(by: { $0.key < $1.key }) where source.type == .geojson {
            guard let address = source.dataURL, let url = serverURL(address) else { continue }
            do throws(StyleResourceError) {
                let local = folder.appendingPathComponent(CacheEntryName.of(address, fileExtension: "geojson"))
                try write(try body(of: url, fetcher: fetcher), to: local)
                localized.sources[id]?.dataURL = local.path
            } catch {
                warnings.append("GeoJSON source \"\(id)\": \(error); it draws nothing until the engine sets its features")
            }
        }
        return (localized, warnings)
    }

    /// Whether `style` names a sprite or GeoJSON `data` on an `http(s)` server, which
    /// ``fetch(for:fetcher:into:)`` would bring to files.
    package static func namesServers(_ style: Style) -> Bool {
        style.sprites.contains { serverURL($0.url) != nil }
            || style.sources.values.contains { $0.type == .geojson && $0.dataURL.flatMap(serverURL) != nil }
    }

    /// A fetcher for a style's tiles, sprites and GeoJSON with its disk cache in `cacheRoot/http`,
    /// and `cacheRoot/carwindow-style-files` for ``fetch(for:fetcher:into:)``. Without a root,
    /// the cache's default folder (``HTTPDiskCache/defaultDirectory``) and its sibling. A cache
    /// that cannot be made leaves a fetcher without one (every run downloads again), and
    /// `warning` says why.
    package static func downloads(cacheRoot: URL?) -> (fetcher: HTTPFetcher, files: URL, warning: String?) {
        let cacheFolder = cacheRoot?.appendingPathComponent("http", isDirectory: true) ?? HTTPDiskCache.defaultDirectory
        let files = cacheFolder.deletingLastPathComponent().appendingPathComponent("carwindow-style-files", isDirectory: true)
        do {
            return (HTTPFetcher(cache: try HTTPDiskCache(directory: cacheFolder)), files, nil)
        } catch {
            let temporary = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-style-files", isDirectory: true)
            return (HTTPFetcher(cache: nil), temporary, "\(error); sprites, GeoJSON and tiles from servers are not kept")
        }
    }

    /// The 1x sheet and index, and the 2x pair where the server has them; a sprite with
    /// neither resolution is an error.
    private static func fetchSprite(_ base: URL, to local: String, fetcher: HTTPFetcher) throws(StyleResourceError) {
        var found = false
        var firstError: StyleResourceError?
        for variant in ["", "@2x"] {
            do throws(StyleResourceError) {
                let index = try body(of: suffixed(base, variant + ".json"), fetcher: fetcher)
                let sheet = try body(of: suffixed(base, variant + ".png"), fetcher: fetcher)
                try write(index, to: URL(fileURLWithPath: local + variant + ".json"))
                try write(sheet, to: URL(fileURLWithPath: local + variant + ".png"))
                found = true
            } catch {
                firstError = firstError ?? error
            }
        }
        if !found, let firstError { throw firstError }
    }

    private static func body(of url: URL, fetcher: HTTPFetcher) throws(StyleResourceError) -> Data {
        let answer: HTTPAnswer
        do throws(TileSourceError) {
            answer = try fetcher.get(url, limit: maximumBytes)
        } catch {
            if case .network(_, let reason) = error { throw .unreachable(url: url.absoluteString, reason: reason) }
            throw .unreachable(url: url.absoluteString, reason: "\(error)")
        }
        guard answer.status == 200 else { throw .missing(url: url.absoluteString, status: answer.status) }
        return answer.body
    }

    private static func write(_ data: Data, to file: URL) throws(StyleResourceError) {
        do {
            try data.write(to: file, options: .atomic)
        } catch {
            throw .unwritable(path: file.path, reason: error.localizedDescription)
        }
    }

    /// `url` when it names an `http` or `https` server.
    static func serverURL(_ address: String) -> URL? {
        guard let url = URL(string: address), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", url.host != nil else { return nil }
        return url
    }

    /// `base` with `suffix` after its path and before its query, as MapLibre asks for a sprite's
    /// files (`…/sprite@2x.png?key=…`).
    static func suffixed(_ base: URL, _ suffix: String) -> URL {
        guard var parts = URLComponents(url: base, resolvingAgainstBaseURL: false) else { return base }
        parts.percentEncodedPath += suffix
        return parts.url ?? base
    }
}

/// Why a sprite or GeoJSON document on a server could not be brought to a file.
public enum StyleResourceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server could not be reached, failed, or sent more than ``StyleResources/maximumBytes``,
    /// and the disk cache has no copy.
    case unreachable(url: String, reason: String)
    /// The server answered, but not with the file (a 404).
    case missing(url: String, status: Int)
    /// The fetched file could not be written.
    case unwritable(path: String, reason: String)

    public var description: String {
        switch self {
        case .unreachable(let url, let reason):
            "cannot fetch \(url): \(reason)"
        case .missing(let url, let status):
            "\(url) answered HTTP \(status); check the style's URL"
        case .unwritable(let path, let reason):
            "\(path) cannot be written (\(reason)); check the folder's space and permissions"
        }
    }
}
