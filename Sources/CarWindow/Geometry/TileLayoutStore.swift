import Foundation
import Logging
import Synchronization

/// Loads, decodes and lays out tiles on worker tasks and keeps a bounded cache of the results.
///
/// Requests for a tile already on its way share one load. A tile the source lacks, or one that
/// fails to decode, is cached as empty (the failure is logged once), so it is not retried every
/// frame.
///
/// - Important: Thread-safe.
final class TileLayoutStore: Sendable {
    let source: any TileSource
    let builder: TileLayoutBuilder
    let capacity: Int
    private let logger = Logger(label: "carwindow.tiles")

    private struct State {
        var layouts: [TileID: (layout: TileLayout, lastUse: UInt64)] = [:]
        var loading: [TileID: Task<TileLayout, Never>] = [:]
        var clock: UInt64 = 0
    }
    private let state = Mutex(State())

    init(source: any TileSource, builder: TileLayoutBuilder, capacity: Int = 128) {
        self.source = source
        self.builder = builder
        self.capacity = max(capacity, 8)
    }

    /// The zoom of the source's tiles that cover a view at `zoom`.
    func dataZoom(for zoom: Double) -> Int {
        min(max(Int(floor(zoom)), source.minZoom), source.maxZoom)
    }

    /// The layout if it is ready; never waits.
    func cachedLayout(_ tile: TileID) -> TileLayout? {
        state.withLock { state in
            guard let entry = state.layouts[tile] else { return nil }
            state.clock += 1
            state.layouts[tile]?.lastUse = state.clock
            return entry.layout
        }
    }

    /// Starts loading `tile` unless it is cached or already loading; `loaded` runs when a load
    /// this call started is ready. Frames ask every frame until the tile arrives; only the
    /// first ask starts work.
    func request(_ tile: TileID, loaded: @escaping @Sendable () -> Void) {
        guard let load = loadingTask(tile), load.isNew else { return }
        Task {
            _ = await load.task.value
            loaded()
        }
    }

    /// The layout of `tile`, loading it if needed.
    func layout(_ tile: TileID) async -> TileLayout {
        if let cached = cachedLayout(tile) { return cached }
        guard let task = loadingTask(tile)?.task else {
            return cachedLayout(tile) ?? TileLayout(tile: tile, extent: 4096, buckets: [])
        }
        return await task.value
    }

    /// The running or new load of `tile` and whether it is new, or nil when it is cached.
    private func loadingTask(_ tile: TileID) -> (task: Task<TileLayout, Never>, isNew: Bool)? {
        state.withLock { state in
            if state.layouts[tile] != nil { return nil }
            if let task = state.loading[tile] { return (task, false) }
            let task = Task.detached(priority: .userInitiated) { [self] in
                let layout = self.build(tile)
                self.store(layout)
                return layout
            }
            state.loading[tile] = task
            return (task, true)
        }
    }

    private func build(_ tile: TileID) -> TileLayout {
        let empty = TileLayout(tile: tile, extent: 4096, buckets: [])
        do {
            guard let decoded = try source.decodedTile(for: tile) else { return empty }
            return builder.layout(tile, decoded)
        } catch {
            logger.warning("tile \(tile) of \(source.name) is skipped: \(error)")
            return empty
        }
    }

    private func store(_ layout: TileLayout) {
        state.withLock { state in
            state.loading[layout.tile] = nil
            state.clock += 1
            state.layouts[layout.tile] = (layout, state.clock)
            while state.layouts.count > capacity,
                  let oldest = state.layouts.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                state.layouts[oldest] = nil
            }
        }
    }
}
