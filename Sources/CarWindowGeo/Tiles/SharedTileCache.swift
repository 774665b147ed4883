import Foundation
import CarWindowSystemSupport

/// A tile source that keeps the most recently used decoded tiles, so that several maps over the
/// same data (a centre console and an instrument cluster, each with its own size and style)
/// read and decode every tile once.
///
/// Give the same instance to every `MapRenderer` or `ProjectionSession` that should share it.
/// Each map still lays tiles out for its own style; what is shared is the archive reads, the
/// inflating and the decoding.
///
/// - Important: Thread-safe.
public final class SharedTileCache: TileSource {
    /// The source the tiles come from.
    public let source: any TileSource
    /// How many decoded tiles stay cached.
    public let capacity: Int
    /// How many bytes of decoded tiles stay cached, about (see the init).
    public let byteCapacity: Int

    /// One tile's cache entry. Its own lock makes a second map that asks for a tile being
    /// decoded wait for that decode instead of decoding it again.
    private final class Slot: Sendable {
        let tile = LockedState<Result<VectorTile?, TileSourceError>?>(nil)
    }
    private struct State {
        var slots: [TileID: (slot: Slot, lastUse: UInt64, bytes: Int)] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        var hits = 0
        var misses = 0

        mutating func remove(_ tile: TileID) {
            guard let removed = slots.removeValue(forKey: tile) else { return }
            bytes -= removed.bytes
        }
    }
    private let state = LockedState(State())

    /// Caches up to `capacity` decoded tiles of `source` (at least 16), and no more than about
    /// `byteCapacity` bytes of them (at least 1 MiB; the tile decoded last always stays): real
    /// tiles take tens to hundreds of KiB decoded, but one at the decoding limits takes about
    /// 40 MiB, so the bytes bound the cache when the tiles are hostile.
    public init(source: any TileSource, capacity: Int = 256, byteCapacity: Int = 512 << 20) {
        self.source = source
        self.capacity = max(capacity, 16)
        self.byteCapacity = max(byteCapacity, 1 << 20)
    }

    public var name: String { source.name }
    /// The shared source's credit.
    public var attribution: String? { source.attribution }
    public var minZoom: Int { source.minZoom }
    public var maxZoom: Int { source.maxZoom }
    public var bounds: GeoBounds? { source.bounds }

    public func data(for tile: TileID) throws(TileSourceError) -> Data? {
        try source.data(for: tile)
    }

    /// The cached decoded tile, or the source's, decoded once and kept. A tile the source lacks
    /// is remembered as missing; a damaged one is not kept, so its error reaches each caller.
    public func decodedTile(for tile: TileID) throws(TileSourceError) -> VectorTile? {
        let slot: Slot = state.withLock { state in
            state.clock += 1
            if let existing = state.slots[tile] {
                state.slots[tile]?.lastUse = state.clock
                return existing.slot
            }
            let slot = Slot()
            state.slots[tile] = (slot, state.clock, 0)
            if state.slots.count > capacity,
               let oldest = state.slots.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                state.remove(oldest)
            }
            return slot
        }
        let (result, wasCached) = slot.tile.withLock { cached -> (Result<VectorTile?, TileSourceError>, Bool) in
            if let cached { return (cached, true) }
            let result: Result<VectorTile?, TileSourceError>
            do throws(TileSourceError) {
                result = .success(try source.decodedTile(for: tile))
            } catch {
                result = .failure(error)
            }
            if case .success = result { cached = result }
            return (result, false)
        }
        // Counted once, by the caller that decoded it.
        let decodedBytes = wasCached ? nil : (try? result.get())??.byteEstimate
        state.withLock { state in
            if wasCached { state.hits += 1 } else { state.misses += 1 }
            switch result {
            case .failure:
                if state.slots[tile]?.slot === slot { state.remove(tile) }
            case .success:
                guard let bytes = decodedBytes, state.slots[tile]?.slot === slot else { break }
                state.slots[tile]?.bytes = bytes
                state.bytes += bytes
                while state.bytes > byteCapacity, state.slots.count > 1,
                      let oldest = state.slots.filter({ $0.key != tile })
                          .min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                    state.remove(oldest)
                }
            }
        }
        return try result.get()
    }

    /// Bytes of decoded tiles the cache holds now, about.
    var cachedBytes: Int {
        state.withLock { $0.bytes }
    }

    /// Lookups served from the cache and lookups that went to the source, since it was made.
    public var statistics: (hits: Int, misses: Int) {
        state.withLock { ($0.hits, $0.misses) }
    }
}
