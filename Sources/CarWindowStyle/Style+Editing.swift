import Foundation
import Logging

/// Changing a loaded style at runtime, as an engine adds its own sources and layers to a style
/// it did not write: each change is checked as loading would check it, and a change that fails
/// leaves the style as it was.
extension Style {
    /// Adds the source `id`, given as the JSON object a style's `sources` holds (for instance
    /// `{"type": "geojson"}`, whose features the engine then sets).
    ///
    /// - Throws: ``StyleError`` when `id` is taken, the JSON is not a source, or its type is
    ///   not one a style may have.
    public mutating func addSource(id: String, json: Data, logger: Logger? = nil) throws(StyleError) {
        let path = JSONPath.member("sources", id)
        guard sources[id] == nil else {
            throw .invalidValue(path: path, reason: "the style has a source \"\(id)\" already; remove it first or choose another id")
        }
        guard json.count <= Self.maximumSize else { throw .tooLarge(bytes: json.count, limit: Self.maximumSize) }
        var loader = StyleLoader(reader: PropertyReader(logger: logger ?? Logger(label: "carwindow.style")))
        guard let source = try loader.loadSource(try JSONValue(parsing: json), path: path) else {
            throw .invalidValue(path: JSONPath.member(path, "type"), reason: "not a source type a style may have")
        }
        sources[id] = source
        warnings += loader.reader.warnings
    }

    /// Adds a layer, given as the JSON object a style's `layers` holds, below the layer
    /// `beforeID`, or on top of every layer when it is nil. Properties the renderer does not
    /// draw become ``warnings``, as when a style loads.
    ///
    /// - Throws: ``StyleError`` when the layer's id is taken, `beforeID` names no layer, the
    ///   layer's source is not in the style (add it first), its type is not drawn, or its JSON
    ///   is malformed.
    public mutating func addLayer(json: Data, before beforeID: String? = nil, logger: Logger? = nil) throws(StyleError) {
        guard json.count <= Self.maximumSize else { throw .tooLarge(bytes: json.count, limit: Self.maximumSize) }
        let value = try JSONValue(parsing: json)
        let path = "layer"
        if case .object(let object) = value, case .string(let source)? = object["source"], sources[source] == nil {
            throw .invalidValue(path: JSONPath.member(path, "source"),
                                reason: "the style has no source \"\(source)\"; add the source before its layers")
        }
        var loader = StyleLoader(reader: PropertyReader(logger: logger ?? Logger(label: "carwindow.style")))
        guard let layer = try loader.loadLayer(value, path: path, sources: sources) else {
            throw .invalidValue(path: JSONPath.member(path, "type"),
                                reason: loader.reader.warnings.last?.message ?? "the layer cannot be drawn")
        }
        guard self.layer(withID: layer.id) == nil else {
            throw .invalidValue(path: JSONPath.member(path, "id"),
                                reason: "the style has a layer \"\(layer.id)\" already; remove it first or choose another id")
        }
        var index = layers.endIndex
        if let beforeID {
            guard let found = layers.firstIndex(where: { $0.id == beforeID }) else {
                throw .invalidValue(path: "before", reason: "the style has no layer \"\(beforeID)\" to add the layer below")
            }
            index = found
        }
        layers.insert(layer, at: index)
        warnings += loader.reader.warnings
    }

    /// Removes the layer `id`; false when the style has no such layer.
    @discardableResult
    public mutating func removeLayer(id: String) -> Bool {
        guard let index = layers.firstIndex(where: { $0.id == id }) else { return false }
        layers.remove(at: index)
        return true
    }

    /// Removes the source `id`; false when the style has no such source.
    ///
    /// - Throws: ``StyleError/invalidValue(path:reason:)`` while layers still draw from it.
    @discardableResult
    public mutating func removeSource(id: String) throws(StyleError) -> Bool {
        guard sources[id] != nil else { return false }
        let users = layers.filter { $0.source == id }.map(\.id)
        guard users.isEmpty else {
            throw .invalidValue(path: JSONPath.member("sources", id),
                                reason: "layers " + users.map { "\"\($0)\"" }.joined(separator: ", ") + " draw from it; remove them first")
        }
        sources[id] = nil
        return true
    }
}
