import CarWindowGeo

/// The tile sources a style's vector sources draw from: the basemap given to the renderer for
/// every vector source, except those the engine bound to sources of their own (an overlay
/// archive of traffic or charging stations beside the basemap).
///
/// A tile of the map is the basemap's tile with each bound source's tile of the same place
/// joined to it, its layers renamed so that two sources' layers of one name never mix.
struct BoundTileSources: Sendable {
    /// What every vector source without a binding draws from; it sets the zoom levels tiles are
    /// loaded at.
    let basemap: any TileSource
    /// The bound sources by style source id, sorted by id so every tile joins them in one order.
    let overlays: [(id: String, source: any TileSource)]

    init(basemap: any TileSource, overlays: [String: any TileSource] = [:]) {
        self.basemap = basemap
        // An overlay whose zoom levels end below the basemap's gives one tile to many: it is
        // decoded once for all of them.
        self.overlays = overlays.sorted { $0.key < $1.key }.map { id, source in
            let shared = source.maxZoom < basemap.maxZoom && !(source is SharedTileCache)
                ? SharedTileCache(source: source, capacity: 32, byteCapacity: 64 << 20) : source
            return (id: id, source: shared)
        }
    }

    /// The name under which layer `layer` of the source bound to style source `source` joins a
    /// tile: no vector tile layer can have it, as tile layer names never start with a control
    /// character.
    static func layerName(source: String, layer: String) -> String { "\u{1}source:" + source + "\u{1}" + layer }

    /// Whether style source `id` draws from a source of its own rather than the basemap.
    func binds(_ id: String) -> Bool { overlays.contains { $0.id == id } }

    /// The basemap's tile with the bound sources' layers joined to it, or nil when none of them
    /// has anything there. A bound source whose zoom levels end below the tile's gives its tile
    /// at its highest zoom, cut to this tile; one whose levels start above it gives nothing.
    ///
    /// - Throws: the first source's error; the tile is tried again as a whole.
    func decodedTile(for tile: TileID) throws(TileSourceError) -> VectorTile? {
        var joined = try basemap.decodedTile(for: tile)
        for overlay in overlays where tile.z >= overlay.source.minZoom {
            let levelsAbove = max(tile.z - overlay.source.maxZoom, 0)
            let ancestor = TileID(z: tile.z - levelsAbove, x: tile.x >> levelsAbove, y: tile.y >> levelsAbove)
            guard let data = try overlay.source.decodedTile(for: ancestor) else { continue }
            var layers: [VectorTileLayer] = []
            for layer in data.layers {
                let name = Self.layerName(source: overlay.id, layer: layer.name)
                if levelsAbove == 0 {
                    var renamed = layer
                    renamed.name = name
                    layers.append(renamed)
                } else if let cut = layer.cut(from: ancestor, to: tile, name: name) {
                    layers.append(cut)
                }
            }
            if joined == nil { joined = VectorTile(layers: []) }
            joined?.layers.append(contentsOf: layers)
            joined?.reductions.merge(data.reductions)
        }
        return joined
    }
}

extension VectorTileLayer {
    /// Geometry kept beyond each edge of a cut tile, as a fraction of the tile, so that lines and
    /// outlines meet the next tile's.
    static let cutBuffer = 1.0 / 32

    /// This layer of tile `ancestor` cut to `tile`, a tile inside it some levels down, in `tile`'s
    /// coordinates: scaled up, clipped to the tile and its buffer. Up to four levels of scaling
    /// go into a larger extent, so the cut keeps the source's precision. Nil when nothing of the
    /// layer reaches the tile.
    func cut(from ancestor: TileID, to tile: TileID, name: String) -> VectorTileLayer? {
        let levels = tile.z - ancestor.z
        guard levels >= 0, levels < 31, extent > 0 else { return nil }
        let newExtent = extent << min(levels, 4)
        let scale = Double(1 << levels)
        let offset = SIMD2(Double(tile.x - (ancestor.x << levels)), Double(tile.y - (ancestor.y << levels)))
        let units = Double(newExtent)
        func local(_ point: TilePoint) -> SIMD2<Double> {
            (SIMD2(Double(point.x), Double(point.y)) / Double(extent) * scale - offset) * units
        }
        let margin = Self.cutBuffer * units
        let box = SIMD4(-margin, -margin, units + margin, units + margin)
        func points(_ path: some Collection<SIMD2<Double>>) -> [TilePoint] {
            path.map { TilePoint(x: Int32($0.x.rounded()), y: Int32($0.y.rounded())) }
        }
        var kept: [VectorTileFeature] = []
        for feature in features {
            var parts: [[TilePoint]] = []
            switch feature.type {
            case .point:
                let inside = feature.geometry.joined().map(local).filter {
                    $0.x >= box.x && $0.y >= box.y && $0.x <= box.z && $0.y <= box.w
                }
                if !inside.isEmpty { parts = [points(inside)] }
            case .lineString:
                for line in feature.geometry {
                    for piece in TileClipping.line(line.map(local), to: box) { parts.append(points(piece)) }
                }
            case .polygon:
                // A ring keeps its winding through the cut; an outer ring cut away takes the
                // holes after it along.
                var outerKept = false
                for ring in feature.geometry {
                    let area = VectorTileFeature.signedAreaTimesTwo(ring)
                    guard area != 0 else { continue }
                    let isOuter = area > 0
                    if !isOuter && !outerKept { continue }
                    let clipped = TileClipping.ring(ring.map(local), to: box).dropLast()
                    let cutRing = points(clipped)
                    guard cutRing.count >= 3, VectorTileFeature.signedAreaTimesTwo(cutRing) != 0 else {
                        if isOuter { outerKept = false }
                        continue
                    }
                    if isOuter { outerKept = true }
                    parts.append(cutRing)
                }
            case .unknown:
                continue
            }
            guard !parts.isEmpty else { continue }
            kept.append(VectorTileFeature(id: feature.id, type: feature.type, properties: feature.properties, geometry: parts))
        }
        return kept.isEmpty ? nil : VectorTileLayer(name: name, version: version, extent: newExtent, features: kept)
    }
}
