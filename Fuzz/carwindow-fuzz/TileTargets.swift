import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// One vector tile as a tile source hands it to the renderer: inflated when gzipped, decoded,
/// its rings grouped into polygons.
enum VectorTileTarget {
    static func run(_ bytes: [UInt8]) {
        guard let tile = try? VectorTile(decoding: Data(bytes)) else { return }
        for layer in tile.layers {
            for feature in layer.features {
                _ = feature.polygons
            }
        }
    }
}

/// A PMTiles archive (first byte even) or one uncompressed directory (first byte odd).
///
/// Archives are opened as `PMTilesSource` opens a file and asked for every tile of zooms 0-3,
/// which the seed archives hold. Directories are parsed and checked: ids increase, every entry is
/// found by its own id, and every id maps to a tile and back.
enum PMTilesTarget {
    /// Zooms 0-3: 1 + 4 + 16 + 64 tiles.
    static let queriedTiles = (0..<85).compactMap { TileID(pmtilesID: UInt64($0)) }

    static func run(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let body = Array(bytes.dropFirst())
        if mode & 1 == 0 {
            readArchive(body)
        } else {
            readDirectory(body)
        }
    }

    static func readArchive(_ bytes: [UInt8]) {
        guard let source = try? PMTilesSource(archive: Data(bytes), path: "fuzz.pmtiles", fallbackName: "fuzz") else { return }
        for tile in queriedTiles {
            guard let data = try? source.data(for: tile) else { continue }
            _ = try? VectorTile(decoding: data)
        }
    }

    static func readDirectory(_ bytes: [UInt8]) {
        guard let entries = try? PMTilesEntry.parseDirectory(bytes) else { return }
        for (index, entry) in entries.enumerated() {
            if index > 0, entry.tileID <= entries[index - 1].tileID {
                fatalError("directory entry \(index) does not increase the tile id")
            }
            if let tile = TileID(pmtilesID: entry.tileID), tile.pmtilesID != entry.tileID {
                fatalError("PMTiles id \(entry.tileID) maps to \(tile), which maps back to \(tile.pmtilesID.map(String.init) ?? "nothing")")
            }
            guard PMTilesEntry.find(entry.tileID, in: entries) == entry else {
                fatalError("directory entry \(index) (tile id \(entry.tileID)) is not found by its own id")
            }
        }
    }
}

/// One GeoJSON document as an engine or a style hands it over: parsed, projected, and cut into
/// the whole-world tile, a quarter of it and a street-level tile, each checked to stay within
/// the layer's extent and buffer.
enum GeoJSONTarget {
    static let tiles = [TileID(z: 0, x: 0, y: 0), TileID(z: 1, x: 1, y: 0), TileID(z: 14, x: 9326, y: 4741)]

    static func run(_ bytes: [UInt8]) {
        guard let data = try? GeoJSONData(data: Data(bytes)) else { return }
        for tile in tiles {
            guard let layer = data.layer(for: tile, name: "fuzz") else { continue }
            let reach = Int32(Double(layer.extent) * 1.1)
            for feature in layer.features {
                _ = feature.polygons
                for part in feature.geometry {
                    for point in part {
                        precondition(abs(point.x) <= reach && abs(point.y) <= reach, "a point outside the tile's buffer")
                    }
                }
            }
        }
    }
}
