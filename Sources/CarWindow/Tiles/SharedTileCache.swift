import Foundation
import Synchronization

/// A tile source that keeps the most recently used decoded tiles, so that several maps over the
/// same data (a centre console and an instrument cluster, each with its own size and style)
/// read and decode every tile once.
///
/// Give the same instance to every ``MapRenderer`` or ``ProjectionSession`` that should share it.
/// Each map still lays tiles out for its own style; what is shared is the archive reads, the
/// inflating and the decoding.
///
/// - Important: Thread-safe.
public final class SharedTileCache: TileSource {
    /// The source the tiles come from.
    public let source: any TileSource
    /// How many decoded tiles stay cached.
    public let capacity: Int

    /// One tile's cache entry. Its own lock makes a second map that asks for a tile being
    /// decoded wait for that decode instead of decoding it again.
    private final class Slot: Sendable {
        let tile = Mutex<Result<VectorTile?, TileSourceError>?>(nil)
    }
    private struct State {
        var slots: [TileID: (slot: Slot, lastUse: UInt64)] = [:]
        var clock: UInt64 = 0
        var hits = 0
        var misses = 0
    }
    private let state = Mutex(State())

    /// Caches up to `capacity` decoded tiles of `source` (at least 16).
    public init(source: any TileSource, capacity: Int = 256) {
        self.source = source
        self.capacity = max(capacity, 16)
    }

    public var name: String { source.name }
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
            state.slots[tile] = (slot, state.clock)
            if state.slots.count > capacity,
               let oldest = state.slots.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                state.slots[oldest] = nil
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
        state.withLock { state in
            if wasCached { state.hits += 1 } else { state.misses += 1 }
            if case .failure = result { state.slots[tile] = nil }
        }
        return try result.get()
    }

    /// Lookups served from the cache and lookups that went to the source, since it was made.
    public var statistics: (hits: Int, misses: Int) {
        state.withLock { ($0.hits, $0.misses) }
    }
}
