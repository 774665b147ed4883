import Foundation
import Logging
import CarWindowGeo
import CarWindowSystemSupport

/// A MapLibre style (specification version 8), reduced to what a navigation map draws.
///
/// Loading is forgiving where MapLibre would still draw something (unknown layer types and
/// properties become ``warnings``) and strict where the author clearly meant something else
/// (wrong JSON types throw ``StyleError`` with the JSON path).
public struct Style: Sendable {
    /// Styles are kilobytes; anything larger is almost certainly the wrong file.
    public static let maximumSize = 32 << 20

    /// The style specification version; always 8 for a loaded style.
    public var version: Int
    /// The style's `name`, if it has one.
    public var name: String?
    /// The sources by id, as layers' `source` names them.
    public var sources: [String: StyleSource]
    /// Layers in drawing order, bottom first; unsupported kinds are already left out.
    public var layers: [StyleLayer]
    /// The glyph URL template (`glyphs`), if any.
    public var glyphs: String?
    /// The sprites icons and patterns come from (`sprite`): one with the id `default` for the
    /// string form, each with its own id for the array form. Images of a sprite other than
    /// `default` are named `id:image`, as MapLibre names them.
    public var sprites: [SpriteReference]
    /// Where the style was read from, when it came from a file: relative sprite paths resolve
    /// against it.
    public var baseURL: URL?
    /// The default camera centre, if the style sets one.
    public var center: GeoCoordinate?
    /// The default camera zoom, if the style sets one.
    public var zoom: Double?
    /// What was ignored while loading, in document order.
    public var warnings: [StyleWarning]

    /// A style with no sources and no layers, which draws nothing. What a session that shows
    /// the engine's own picture carries in place of a map.
    public static let empty = Style()

    private init() {
        version = 8
        sources = [:]
        layers = []
        sprites = []
        warnings = []
    }

    /// Parses a style from JSON bytes; `logger` receives each warning as it is found (by
    /// default the `carwindow.style` logger).
    public init(data: Data, logger: Logger? = nil) throws(StyleError) {
        guard data.count <= Self.maximumSize else { throw .tooLarge(bytes: data.count, limit: Self.maximumSize) }
        let json = try JSONValue(parsing: data)
        var loader = StyleLoader(reader: PropertyReader(logger: logger ?? Logger(label: "carwindow.style")))
        self = try loader.load(json)
    }

    /// Reads and parses a style file.
    public init(contentsOf url: URL, logger: Logger? = nil) throws(StyleError) {
        let data: Data
        do {
            data = Data(try InputFile.read(url.path, limit: Self.maximumSize))
        } catch {
            if let (size, limit) = error.tooLarge { throw .tooLarge(bytes: size, limit: limit) }
            throw .unreadable(path: url.path, reason: error.reason)
        }
        try self.init(data: data, logger: logger)
        baseURL = url
    }

    init(version: Int, name: String?, sources: [String: StyleSource], layers: [StyleLayer], glyphs: String?,
         sprites: [SpriteReference], center: GeoCoordinate?, zoom: Double?, warnings: [StyleWarning]) {
        self.version = version
        self.name = name
        self.sources = sources
        self.layers = layers
        self.glyphs = glyphs
        self.sprites = sprites
        self.center = center
        self.zoom = zoom
        self.warnings = warnings
    }

    /// The layer with identifier `id`.
    public func layer(withID id: String) -> StyleLayer? {
        layers.first { $0.id == id }
    }
}

/// One sprite of a style: an image sheet (`url.png`, `url@2x.png`) and its index (`url.json`).
public struct SpriteReference: Sendable, Equatable {
    /// The sprite's id: `default` for a style whose `sprite` is a single URL.
    public var id: String
    /// The sprite's URL or path without the `.json` / `.png` suffix, as the style gives it.
    public var url: String

    /// Makes a reference to the sprite at `url` (without suffix) called `id`.
    public init(id: String, url: String) {
        self.id = id
        self.url = url
    }

    /// The name an image of this sprite has in `icon-image` and the pattern properties.
    public func imageName(_ name: String) -> String {
        id == "default" ? name : "\(id):\(name)"
    }
}

/// The kind of data a source provides.
public enum SourceType: String, Sendable, CaseIterable {
    case vector
    case raster
    case rasterDEM = "raster-dem"
    case geojson
    case image
    case video
}

/// A data source a style's layers draw from.
public struct StyleSource: Sendable {
    /// The kind of data the source provides (`type`).
    public var type: SourceType
    /// A TileJSON or `pmtiles://` URL, if the source names one.
    public var url: String?
    /// Tile URL templates such as `https://host/{z}/{x}/{y}.pbf`.
    public var tiles: [String]
    /// The lowest zoom level the source has tiles for (`minzoom`); 0 by default.
    public var minZoom: Double
    /// The highest zoom level the source has tiles for (`maxzoom`); 22 by default.
    public var maxZoom: Double
    /// The credit the source asks to be shown (`attribution`), if any.
    public var attribution: String?
    /// A GeoJSON source's `data` when it is a URL or a path (relative to the style file).
    public var dataURL: String?
    /// A GeoJSON source's `data` when the style holds it inline.
    package var inlineData: JSONValue?

    /// Where a GeoJSON source's features come from.
    package enum GeoJSONSourceData: Sendable {
        case url(String)
        case inline(JSONValue)
    }

    package init(type: SourceType, url: String?, tiles: [String], minZoom: Double, maxZoom: Double,
                 attribution: String?, data: GeoJSONSourceData?) {
        self.init(type: type, url: url, tiles: tiles, minZoom: minZoom, maxZoom: maxZoom, attribution: attribution)
        switch data {
        case .url(let url)?: dataURL = url
        case .inline(let json)?: inlineData = json
        case nil: break
        }
    }

    /// Makes a source; the zoom range defaults to MapLibre's 0...22.
    public init(type: SourceType, url: String? = nil, tiles: [String] = [], minZoom: Double = 0,
                maxZoom: Double = 22, attribution: String? = nil) {
        self.type = type
        self.url = url
        self.tiles = tiles
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.attribution = attribution
    }
}

/// Walks the style document, building the model and collecting warnings.
struct StyleLoader {
    var reader: PropertyReader

    mutating func load(_ json: JSONValue) throws(StyleError) -> Style {
        guard case .object(let root) = json else {
            throw .wrongType(path: "", expected: "a JSON object", found: json.typeName)
        }
        guard let versionJSON = root["version"] else { throw .missingProperty(path: "version") }
        guard case .number(let version) = versionJSON else {
            throw .wrongType(path: "version", expected: "the number 8", found: versionJSON.typeName)
        }
        guard version == 8 else { throw .unsupportedVersion(found: StyleValue.format(version)) }

        let name = try optionalString(root["name"], path: "name")
        let glyphs = try optionalString(root["glyphs"], path: "glyphs")
        let sprites = try loadSprites(root["sprite"])
        let zoom = try optionalNumber(root["zoom"], path: "zoom")
        var center: GeoCoordinate?
        if let centerJSON = root["center"] {
            guard case .array(let parts) = centerJSON, parts.count == 2,
                  case .number(let longitude) = parts[0], case .number(let latitude) = parts[1] else {
                throw .wrongType(path: "center", expected: "a [longitude, latitude] pair of numbers", found: centerJSON.typeName)
            }
            center = GeoCoordinate(latitude: latitude, longitude: longitude)
        }

        guard let sourcesJSON = root["sources"] else { throw .missingProperty(path: "sources") }
        guard case .object(let sourceObject) = sourcesJSON else {
            throw .wrongType(path: "sources", expected: "an object of sources by id", found: sourcesJSON.typeName)
        }
        var sources: [String: StyleSource] = [:]
        for member in sourceObject {
            if let source = try loadSource(member.value, path: JSONPath.member("sources", member.key)) {
                sources[member.key] = source
            }
        }

        guard let layersJSON = root["layers"] else { throw .missingProperty(path: "layers") }
        guard case .array(let layerList) = layersJSON else {
            throw .wrongType(path: "layers", expected: "an array of layers", found: layersJSON.typeName)
        }
        var layers: [StyleLayer] = []
        var seenIDs = Set<String>()
        for (index, layerJSON) in layerList.enumerated() {
            let path = JSONPath.index("layers", index)
            guard let layer = try loadLayer(layerJSON, path: path, sources: sources) else { continue }
            guard seenIDs.insert(layer.id).inserted else {
                reader.warn(StyleWarning(path: path, message: "a second layer with id \"\(layer.id)\" is skipped; layer ids must be unique"))
                continue
            }
            layers.append(layer)
        }
        return Style(version: 8, name: name, sources: sources, layers: layers, glyphs: glyphs, sprites: sprites,
                     center: center, zoom: zoom, warnings: reader.warnings)
    }

    /// `sprite`: a URL string, or an array of `{"id", "url"}` objects with unique ids.
    private mutating func loadSprites(_ json: JSONValue?) throws(StyleError) -> [SpriteReference] {
        switch json {
        case nil, .null?:
            return []
        case .string(let url)?:
            return url.isEmpty ? [] : [SpriteReference(id: "default", url: url)]
        case .array(let entries)?:
            var sprites: [SpriteReference] = []
            for (index, entry) in entries.enumerated() {
                let path = JSONPath.index("sprite", index)
                guard case .object(let object) = entry else {
                    throw .wrongType(path: path, expected: "an object with \"id\" and \"url\"", found: entry.typeName)
                }
                guard let id = try optionalString(object["id"], path: JSONPath.member(path, "id")) else {
                    throw .missingProperty(path: JSONPath.member(path, "id"))
                }
                guard let url = try optionalString(object["url"], path: JSONPath.member(path, "url")) else {
                    throw .missingProperty(path: JSONPath.member(path, "url"))
                }
                guard !sprites.contains(where: { $0.id == id }) else {
                    reader.warn(StyleWarning(path: path, message: "a second sprite with id \"\(id)\" is skipped; sprite ids must be unique"))
                    continue
                }
                sprites.append(SpriteReference(id: id, url: url))
            }
            return sprites
        case let other?:
            throw .wrongType(path: "sprite", expected: "a URL string or an array of {\"id\", \"url\"} objects",
                             found: other.typeName)
        }
    }

    mutating func loadSource(_ json: JSONValue, path: String) throws(StyleError) -> StyleSource? {
        guard case .object(let object) = json else {
            throw .wrongType(path: path, expected: "a source object", found: json.typeName)
        }
        let typePath = JSONPath.member(path, "type")
        guard let typeName = try optionalString(object["type"], path: typePath) else {
            throw .missingProperty(path: typePath)
        }
        guard let type = SourceType(rawValue: typeName) else {
            reader.warn(StyleWarning(path: typePath, message: "unknown source type \"\(typeName)\"; the source and its layers are skipped"))
            return nil
        }
        var tiles: [String] = []
        if let tilesJSON = object["tiles"] {
            let tilesPath = JSONPath.member(path, "tiles")
            guard case .array(let list) = tilesJSON else {
                throw .wrongType(path: tilesPath, expected: "an array of URL strings", found: tilesJSON.typeName)
            }
            for (index, entry) in list.enumerated() {
                guard case .string(let template) = entry else {
                    throw .wrongType(path: JSONPath.index(tilesPath, index), expected: "a URL string", found: entry.typeName)
                }
                tiles.append(template)
            }
        }
        return StyleSource(type: type, url: try optionalString(object["url"], path: JSONPath.member(path, "url")),
                           tiles: tiles,
                           minZoom: try optionalNumber(object["minzoom"], path: JSONPath.member(path, "minzoom")) ?? 0,
                           maxZoom: try optionalNumber(object["maxzoom"], path: JSONPath.member(path, "maxzoom")) ?? 22,
                           attribution: try optionalString(object["attribution"], path: JSONPath.member(path, "attribution")),
                           data: type == .geojson ? try geojsonData(object["data"], path: JSONPath.member(path, "data")) : nil)
    }

    /// A GeoJSON source's `data`: a URL string or the GeoJSON itself. A source without data is
    /// empty until an engine sets its features.
    private func geojsonData(_ json: JSONValue?, path: String) throws(StyleError) -> StyleSource.GeoJSONSourceData? {
        switch json {
        case nil, .null?: return nil
        case .string(let url)?: return .url(url)
        case .object(let object)?: return .inline(.object(object))
        case let other?:
            throw .wrongType(path: path, expected: "a GeoJSON object or a URL string", found: other.typeName)
        }
    }

    mutating func loadLayer(_ json: JSONValue, path: String,
                                    sources: [String: StyleSource]) throws(StyleError) -> StyleLayer? {
        guard case .object(let object) = json else {
            throw .wrongType(path: path, expected: "a layer object", found: json.typeName)
        }
        let idPath = JSONPath.member(path, "id")
        guard let id = try optionalString(object["id"], path: idPath) else { throw .missingProperty(path: idPath) }
        let typePath = JSONPath.member(path, "type")
        guard let typeName = try optionalString(object["type"], path: typePath) else {
            throw .missingProperty(path: typePath)
        }
        guard let type = LayerType(rawValue: typeName) else {
            reader.warn(StyleWarning(path: typePath, message: "layer \"\(id)\" has type \"\(typeName)\", which is not supported; the layer is skipped"))
            return nil
        }

        var layer = StyleLayer(id: id, type: type)
        reader.layerID = id
        defer { reader.layerID = nil }
        let sourcePath = JSONPath.member(path, "source")
        if type != .background {
            guard let source = try optionalString(object["source"], path: sourcePath) else {
                throw .missingProperty(path: sourcePath)
            }
            guard sources[source] != nil else {
                reader.warn(StyleWarning(path: sourcePath, message: "layer \"\(id)\" uses the source \"\(source)\", which the style does not define (or which was skipped); the layer is skipped"))
                return nil
            }
            layer.source = source
            layer.sourceLayer = try optionalString(object["source-layer"], path: JSONPath.member(path, "source-layer"))
        }
        layer.minZoom = try zoomLimit(object["minzoom"], path: JSONPath.member(path, "minzoom")) ?? 0
        layer.maxZoom = try zoomLimit(object["maxzoom"], path: JSONPath.member(path, "maxzoom")) ?? 24

        if let filterJSON = object["filter"], filterJSON != .null {
            let filterPath = JSONPath.member(path, "filter")
            do throws(StyleError) {
                let filter = try Expression.filter(filterJSON, path: filterPath)
                for warning in filter.warnings { reader.warn(warning) }
                layer.filter = filter
            } catch {
                switch error {
                case .unknownOperator(let site, let name):
                    reader.warn(StyleWarning(path: site, message: "unknown filter operator \"\(name)\"; layer \"\(id)\" draws without a filter"))
                case .unsupportedFeature(let site, let feature):
                    reader.warn(StyleWarning(path: site, message: "\(feature) is not supported; layer \"\(id)\" draws without a filter"))
                default:
                    throw error
                }
            }
        }

        if let layoutJSON = object["layout"] {
            let layoutPath = JSONPath.member(path, "layout")
            guard case .object(let layout) = layoutJSON else {
                throw .wrongType(path: layoutPath, expected: "an object of layout properties", found: layoutJSON.typeName)
            }
            for member in layout {
                let propertyPath = JSONPath.member(layoutPath, member.key)
                if member.key == "visibility" {
                    layer.visibility = try constantEnum(member.value, path: propertyPath)
                } else if !(try reader.setLayout(&layer.layout, key: member.key, json: member.value, path: propertyPath)) {
                    reader.warn(StyleWarning(path: propertyPath, message: "layout property \"\(member.key)\" is not supported for \(typeName) layers and is ignored"))
                }
            }
        }
        if let paintJSON = object["paint"] {
            let paintPath = JSONPath.member(path, "paint")
            guard case .object(let paint) = paintJSON else {
                throw .wrongType(path: paintPath, expected: "an object of paint properties", found: paintJSON.typeName)
            }
            for member in paint {
                let propertyPath = JSONPath.member(paintPath, member.key)
                if Self.patternProperties.contains(member.key), member.value != .null {
                    // A pattern replaces the layer's colour, so drawing the colour instead would
                    // paint what the style never asked for (a water pattern came out black).
                    reader.warn(StyleWarning(path: propertyPath, message: "layer \"\(id)\" is painted with an image pattern (\(member.key)), which is not drawn yet; the layer is skipped, as MapLibre skips a pattern whose image is missing"))
                    return nil
                }
                if ["fill-pattern", "background-pattern", "line-pattern"].contains(member.key), member.value == .null { continue }
                if !(try reader.setPaint(&layer.paint, key: member.key, json: member.value, path: propertyPath)) {
                    reader.warn(StyleWarning(path: propertyPath, message: "paint property \"\(member.key)\" is not supported for \(typeName) layers and is ignored"))
                }
            }
        }
        if layer.paint.line?.lineGradient != nil, layer.source != StyleLayer.routeSourceID {
            reader.warn(StyleWarning(path: JSONPath.member(JSONPath.member(path, "paint"), "line-gradient"), message: "layer \"\(id)\" has a line-gradient, which is drawn on the engine's route (source \"\(StyleLayer.routeSourceID)\") only; this layer keeps its line-color"))
        }
        // One image per layer: a pattern that changes from feature to feature is not drawn, and
        // neither is the layer, rather than in a colour the style did not ask for.
        let pattern = layer.paint.fill?.fillPattern ?? layer.paint.background?.backgroundPattern ?? layer.paint.line?.linePattern
        if let pattern, pattern.dependsOnFeature {
            reader.warn(StyleWarning(path: JSONPath.member(JSONPath.member(path, "paint"), "\(typeName)-pattern"), message: "layer \"\(id)\" takes its pattern image from each feature, which is not drawn yet; the layer is skipped"))
            return nil
        }
        return layer
    }

    /// Paint properties that fill a layer with a sprite image instead of its colour and are not
    /// drawn yet (fill, background and line patterns are).
    static let patternProperties: Set<String> = ["fill-extrusion-pattern"]

    private func zoomLimit(_ json: JSONValue?, path: String) throws(StyleError) -> Double? {
        guard let value = try optionalNumber(json, path: path) else { return nil }
        guard (0...24).contains(value) else {
            throw .invalidValue(path: path, reason: "zoom levels must lie in 0...24, not \(StyleValue.format(value))")
        }
        return value
    }

    private func constantEnum<T: StyleEnumeration>(_ json: JSONValue, path: String) throws(StyleError) -> T {
        guard case .string(let text) = json else {
            throw .wrongType(path: path, expected: T.valueKind.name, found: json.typeName)
        }
        guard let value = T(rawValue: text) else {
            throw .invalidValue(path: path, reason: "\"\(text)\" is not allowed here; use \(T.valueKind.name)")
        }
        return value
    }

    private func optionalString(_ json: JSONValue?, path: String) throws(StyleError) -> String? {
        switch json {
        case nil: return nil
        case .string(let text)?: return text
        case let other?: throw .wrongType(path: path, expected: "a string", found: other.typeName)
        }
    }

    private func optionalNumber(_ json: JSONValue?, path: String) throws(StyleError) -> Double? {
        switch json {
        case nil: return nil
        case .number(let number)?: return number
        case let other?: throw .wrongType(path: path, expected: "a number", found: other.typeName)
        }
    }
}
