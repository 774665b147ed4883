import Foundation
import CarWindowGeo

/// The bundled Helsinki data: one tilemaker run written as PMTiles, MBTiles and a tile folder.
enum HelsinkiFixtures {
    static let pmtiles = TestPaths.tiles
    static let mbtiles = TestPaths.fixtures.appendingPathComponent("helsinki.mbtiles")
    static let folder = TestPaths.fixtures.appendingPathComponent("helsinki-tiles")

    /// Every tile the archives hold.
    static let tiles: [TileID] = [
        TileID(z: 10, x: 582, y: 296), TileID(z: 11, x: 1165, y: 592), TileID(z: 12, x: 2331, y: 1185),
        TileID(z: 13, x: 4663, y: 2370), TileID(z: 13, x: 4663, y: 2371),
        TileID(z: 14, x: 9326, y: 4741), TileID(z: 14, x: 9326, y: 4742),
        TileID(z: 14, x: 9327, y: 4741), TileID(z: 14, x: 9327, y: 4742),
    ]

    /// A fresh empty folder under the temporary directory.
    static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("carwindow-tiles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// A minimal protocol buffer encoder for building test tiles and archives byte by byte.
struct ProtobufWriter {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func tag(_ field: UInt64, _ wireType: UInt64) { varint(field << 3 | wireType) }

    mutating func varintField(_ field: UInt64, _ value: UInt64) { tag(field, 0); varint(value) }

    mutating func bytesField(_ field: UInt64, _ content: [UInt8]) {
        tag(field, 2)
        varint(UInt64(content.count))
        bytes += content
    }

    mutating func stringField(_ field: UInt64, _ text: String) { bytesField(field, Array(text.utf8)) }

    mutating func packedField(_ field: UInt64, _ values: [UInt32]) {
        var packed = ProtobufWriter()
        for value in values { packed.varint(UInt64(value)) }
        bytesField(field, packed.bytes)
    }

    static func zigzag(_ value: Int32) -> UInt32 { UInt32(bitPattern: (value << 1) ^ (value >> 31)) }
}
