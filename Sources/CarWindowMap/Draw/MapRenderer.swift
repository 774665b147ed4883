internal import CGLES
import Foundation
import Logging
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore

/// Errors of making or changing a map renderer.
public enum MapRenderError: Error, Equatable, CustomStringConvertible {
    /// The size is not drawable: each side must be 1...the GL maximum.
    case invalidSize(width: Int, height: Int, reason: String)
    /// GL set-up failed (a shader, a framebuffer), or a frame's NV12 readback.
    case gl(GLSetupError)
    /// The encoder's input surface (its dma-buf planes) could not be imported for drawing into
    /// it without copies.
    case encoderSurfaceImport(DMABufImportError)
    /// GeoJSON was set for a source the style does not have as a `geojson` source.
    case unknownGeoJSONSource(id: String, known: [String])
    /// A tile source was bound to a source id the style does not have as a `vector` source.
    case unknownVectorSource(id: String, known: [String])
    /// A custom layer was to go below a layer the style does not have.
    case unknownLayer(id: String, known: [String])

    public var description: String {
        switch self {
        case .invalidSize(let width, let height, let reason):
            "cannot draw a \(width)x\(height) map: \(reason). Choose a size between 1x1 and the GPU's maximum."
        case .gl(let error): error.description
        case .encoderSurfaceImport(let error):
            "cannot draw into the encoder's surface: \(error). Encode with copies instead (another EGL platform than gbm)."
        case .unknownGeoJSONSource(let id, let known):
            "the style has no GeoJSON source \"\(id)\"" + (known.isEmpty
                ? "; add one to the style's sources ({\"type\": \"geojson\"}) and layers that draw it"
                : "; its GeoJSON sources are " + known.map { "\"\($0)\"" }.joined(separator: ", "))
        case .unknownLayer(let id, let known):
            "the style has no layer \"\(id)\" to put a custom layer below; name one of its layers ("
                + known.prefix(12).map { "\"\($0)\"" }.joined(separator: ", ") + (known.count > 12 ? ", ..." : "")
                + "), or none to draw it above them"
        case .unknownVectorSource(let id, let known):
            "a tile source was given for \"\(id)\", but the style has no vector source of that id" + (known.isEmpty
                ? "; add one to the style's sources ({\"type\": \"vector\"}) and layers that draw from it"
                : "; its vector sources are " + known.map { "\"\($0)\"" }.joined(separator: ", "))
        }
    }
}

/// How long a frame took and what it showed.
public struct FrameReport: Sendable {
    /// Time on the render thread to issue the frame's GL commands, label placement included;
    /// the GPU may still be drawing when it ends.
    public var issueTime: Duration
    /// Tiles drawn.
    public var tilesDrawn: Int
    /// Tiles still loading; their loaded ancestors stood in.
    public var tilesLoading: Int
    /// Labels placed.
    public var labels: Int
    /// Draw calls issued.
    public var drawCalls: Int
}

/// Draws one map: a style over a tile source, seen through a camera, into an offscreen target of
/// any size, with the route, vehicle, controls and attribution on top.
///
/// It shares the executor of its ``RenderContext``: its methods run on the render thread, so
/// they may call GL directly. Several renderers (screens) can share one context.
///
/// - Important: Thread-safe: it is an actor.
public actor MapRenderer {
    /// The GL context and render thread the renderer draws with.
    public nonisolated let context: RenderContext
    public nonisolated var unownedExecutor: UnownedSerialExecutor { context.thread.asUnownedSerialExecutor() }

    /// The camera the next frame uses.
    public var camera: Camera
    /// The overlays the next frame draws.
    public var overlays = MapOverlays()
    /// Width of the offscreen target in pixels; see ``resize(width:height:)``.
    public private(set) var width: Int
    /// Height of the offscreen target in pixels.
    public private(set) var height: Int
    /// The style being drawn; see ``setStyle(_:)``.
    public private(set) var style: Style

    let fonts: FontLibrary
    let glyphs: GlyphAtlas
    /// The style's sprite images, for icons; empty when the style has no sprite.
    public private(set) var sprites: SpriteSheet
    private var tiles: TileLayoutStore
    /// Tile sources the engine bound to vector source ids; they outlive style changes.
    private let boundSources: [String: any TileSource]
    /// GeoJSON the engine set, by source id; it outlives style changes.
    private var engineGeoJSON: [String: GeoJSONData] = [:]
    /// Counts style changes, so a GeoJSON update that waited for its tiles knows whether the
    /// style it laid them out for is still the one drawn.
    private var styleGeneration = 0
    /// Counts ``setGeoJSON(_:forSource:)`` calls, so a style switch that waited for its tiles
    /// knows whether the engine's GeoJSON changed meanwhile.
    private var geojsonGeneration = 0
    private let resources: MapResources
    private var target: GLRenderTarget { resources.target }
    private var programs: Programs { resources.programs }
    private var drawers: LayerDrawers { resources.drawers }
    private var screen: ScreenOverlays { resources.screen }
    private var route: RouteOverlay { resources.route }
    private var gpuTiles: [TileID: GPUTile] = [:]
    private var frameCounter: UInt64 = 0
    private let logger = Logger(label: "carwindow.render")
    /// How many GPU tiles stay resident; older ones are released.
    private let gpuTileCapacity = 96
    private var drawCalls = 0
    /// The engine's custom layers in the order added, each with the style layer it goes below
    /// (nil: above the style's layers).
    private var customLayers: [(layer: CustomLayer, below: String?)] = []
    /// Custom layers whose last draw threw, so each failure is logged once, not every picture.
    private var failingCustomLayers: Set<String> = []
    // Per-frame lists, kept between frames so drawing reuses their storage.
    private var frameTiles: [GPUTile] = []
    private var frameMatrices: [Matrix4] = []
    private var frameCullers: [ChunkCuller] = []
    private var drawnInOpaquePass: [Bool] = []
    private var frameCovering: [TileID] = []
    private var coveringScratch: [(TileID, Double)] = []

    /// Its GL objects (target, programs, buffers, GPU tiles, the NV12 converter) die with it,
    /// here on the render thread where their context is current, whichever thread let the
    /// renderer go. After the context's shutdown they went with the context: nothing is deleted.
    isolated deinit {
        resources.output.releaseImportedPlanes()
    }

    /// Makes a renderer drawing `style` over `tiles` at `width` x `height`.
    ///
    /// - Parameters:
    ///   - context: the GL context and render thread to draw with.
    ///   - width: width of the offscreen target in pixels.
    ///   - height: height of the offscreen target in pixels.
    ///   - style: the style to draw.
    ///   - tiles: the basemap: every vector source of the style draws from it, except those
    ///     bound in `sources`. It also sets the zoom levels tiles are loaded at.
    ///   - sources: tile sources of their own for vector sources of the style, by source id (an
    ///     overlay of traffic or charging stations beside the basemap). A source whose zoom
    ///     levels end below the view's has its highest tiles cut and scaled up. The bindings
    ///     hold across style changes; a style without the id draws nothing from it.
    ///   - fonts: the faces labels are drawn with.
    ///   - camera: where the first frame looks.
    /// - Throws: ``MapRenderError/unknownVectorSource(id:known:)`` when `style` has no vector
    ///   source of a bound id, and the errors of making GL resources.
    public init(context: RenderContext, width: Int, height: Int, style: Style, tiles: any TileSource,
                sources: [String: any TileSource] = [:],
                fonts: FontLibrary, camera: Camera) async throws(MapRenderError) {
        try await self.init(making: context, width: width, height: height, style: style, tiles: tiles,
                            sources: sources, fonts: fonts, camera: camera)
    }

    // Why the public initializer only delegates: Swift 6.3.1 -O builds of any module that
    // inlines an allocation of this actor (an engine, the session, the benchmarks) crash with
    // "circular reference" while stack promotion asks for the isolation of its isolated deinit.
    // A private designated initializer keeps the allocation out of what other modules inline.
    private init(making context: RenderContext, width: Int, height: Int, style: Style, tiles source: any TileSource,
                 sources: [String: any TileSource], fonts: FontLibrary, camera: Camera) async throws(MapRenderError) {
        let vectorSources = style.sources.filter { $0.value.type == .vector }.keys.sorted()
        if let unknown = sources.keys.sorted().first(where: { !vectorSources.contains($0) }) {
            throw .unknownVectorSource(id: unknown, known: vectorSources)
        }
        boundSources = sources
        self.context = context
        self.width = width
        self.height = height
        self.style = style
        self.fonts = fonts
        self.camera = camera
        let glyphs = GlyphAtlas(library: fonts)
        self.glyphs = glyphs
        // Read before the renderer is isolated, so the files are not read on the render thread.
        let sprites = Self.loadSprites(for: style)
        self.sprites = sprites
        tiles = TileLayoutStore(source: source, overlays: sources, builder: TileLayoutBuilder(
            style: style, glyphs: glyphs, fonts: fonts, sourceMaxZoom: source.maxZoom, sprites: sprites,
            geojson: Self.loadGeoJSON(for: style, engineData: [:])))
        // GL objects must be made on the render thread: the rest of set-up hops there.
        switch await context.makeMapResources(width: width, height: height) {
        case .success(let resources): self.resources = resources
        case .failure(let error): throw error
        }
        screen.prepare(glyphs: glyphs, fonts: fonts,
                       attribution: MapAttribution.text(style: style, tiles: source, sources: sources))
        resources.icons.upload(sprites)
    }

    /// Loads the sprites `style` names, logging what could not be used: a style whose sprite
    /// is missing still draws, without icons, as in MapLibre.
    nonisolated static func loadSprites(for style: Style) -> SpriteSheet {
        guard !style.sprites.isEmpty else { return .empty }
        let (sheet, failures, skipped) = SpriteSheet.load(for: style)
        for failure in failures { spriteLogger.warning("\(failure); icons from it are not drawn") }
        for message in skipped.prefix(20) { spriteLogger.warning("\(message)") }
        if skipped.count > 20 { spriteLogger.warning("\(skipped.count - 20) more sprite images are left out") }
        return sheet
    }

    /// The features of `style`'s GeoJSON sources: what the engine set for a source id, else the
    /// source's inline data or file. A file that cannot be read is logged and the source is empty.
    nonisolated static func loadGeoJSON(for style: Style, engineData: [String: GeoJSONData]) -> [String: GeoJSONData] {
        var result: [String: GeoJSONData] = [:]
        for (id, source) in style.sources where source.type == .geojson {
            if let data = engineData[id] {
                result[id] = data
                continue
            }
            do throws(GeoJSONError) {
                if let inline = source.inlineData {
                    result[id] = try GeoJSONData(json: inline)
                } else if let url = source.dataURL {
                    let path: String
                    do {
                        path = try SpriteSheet.fileBase(url, relativeTo: style.baseURL)
                    } catch {
                        throw GeoJSONError.unreadable(path: url, reason: "the map reads GeoJSON from files: fetch it first with StyleResources.fetch(for:fetcher:into:) (CarWindowRemoteTiles; the carwindow CLI does), or give a file path")
                    }
                    result[id] = try GeoJSONData(contentsOf: URL(fileURLWithPath: path))
                } else {
                    result[id] = .empty
                }
            } catch {
                Logger(label: "carwindow.render").warning("GeoJSON source \"\(id)\": \(error); it draws nothing until the engine sets its features")
                result[id] = .empty
            }
        }
        return result
    }

    /// A tile store for `style` over the same tiles, with its sprites and GeoJSON.
    private func makeStore(style: Style, sprites: SpriteSheet, geojson: [String: GeoJSONData]) -> TileLayoutStore {
        TileLayoutStore(source: tiles.source, overlays: boundSources, builder: TileLayoutBuilder(
            style: style, glyphs: glyphs, fonts: fonts, sourceMaxZoom: tiles.source.maxZoom, sprites: sprites,
            geojson: geojson))
    }

    /// Replaces the features of the style's GeoJSON source `id` (the engine's search results,
    /// traffic or alternatives): the next frame draws them with the style's layers for that
    /// source. The tiles the view needs are laid out again before the change shows, so no frame
    /// shows the map without them. The features stay when the style changes to one with a
    /// GeoJSON source of the same id.
    ///
    /// - Throws: ``MapRenderError/unknownGeoJSONSource(id:known:)`` when the style has no
    ///   GeoJSON source `id`.
    public func setGeoJSON(_ data: GeoJSONData, forSource id: String) async throws(MapRenderError) {
        guard style.sources[id]?.type == .geojson else {
            throw .unknownGeoJSONSource(id: id, known: style.sources.filter { $0.value.type == .geojson }.keys.sorted())
        }
        engineGeoJSON[id] = data
        geojsonGeneration += 1
        var geojson = tiles.builder.geojson
        geojson[id] = data
        let generation = styleGeneration
        let store = makeStore(style: style, sprites: sprites, geojson: geojson)
        await layOutView(in: store)
        guard generation == styleGeneration else {
            // The style changed meanwhile; its store is built from engineGeoJSON already.
            return
        }
        tiles = store
        gpuTiles.removeAll()
    }

    /// Lays out the tiles the current view needs in `store`, side by side on its workers.
    private func layOutView(in store: TileLayoutStore) async {
        let transform = self.transform
        let covering = transform.coveringTiles(zoom: store.dataZoom(for: transform.camera.zoom))
        for tile in covering { store.request(tile, frame: frameCounter) }
        for tile in covering { _ = await store.layout(tile) }
    }

    /// The sheet for a new style: the current one when the style names the same sprites.
    private func sprites(for style: Style) async -> SpriteSheet {
        if style.sprites == self.style.sprites && style.baseURL == self.style.baseURL { return sprites }
        return await Task.detached { Self.loadSprites(for: style) }.value
    }

    // MARK: Changing what is drawn

    /// Replaces the style; tiles are laid out again for it.
    public func setStyle(_ style: Style) {
        if style.sprites != self.style.sprites || style.baseURL != self.style.baseURL {
            sprites = Self.loadSprites(for: style)
            resources.icons.upload(sprites)
        }
        self.style = style
        styleGeneration += 1
        screen.setAttribution(MapAttribution.text(style: style, tiles: tiles.source, sources: boundSources), glyphs: glyphs, fonts: fonts)
        tiles = makeStore(style: style, sprites: sprites, geojson: Self.loadGeoJSON(for: style, engineData: engineGeoJSON))
        gpuTiles.removeAll()
    }

    /// Replaces the style once the tiles the current view needs are laid out for it; frames
    /// drawn meanwhile keep the old style, so a switch (day to night while streaming) never
    /// shows a half-empty map.
    public func switchStyle(to style: Style) async {
        let newSprites = await sprites(for: style)
        let engineData = engineGeoJSON, geojsonAsked = geojsonGeneration
        // Files and inline data are parsed off the render thread; a style without them costs nothing.
        let readsData = style.sources.values.contains { $0.type == .geojson && ($0.inlineData != nil || $0.dataURL != nil) }
        let geojson = readsData ? await Task.detached { Self.loadGeoJSON(for: style, engineData: engineData) }.value
            : Self.loadGeoJSON(for: style, engineData: engineData)
        var store = makeStore(style: style, sprites: newSprites, geojson: geojson)
        await layOutView(in: store)
        if geojsonAsked != geojsonGeneration {
            // The engine's features changed while the tiles were laid out: theirs win.
            store = makeStore(style: style, sprites: newSprites,
                              geojson: Self.loadGeoJSON(for: style, engineData: engineGeoJSON))
        }
        self.style = style
        styleGeneration += 1
        screen.setAttribution(MapAttribution.text(style: style, tiles: tiles.source, sources: boundSources), glyphs: glyphs, fonts: fonts)
        if sprites.width != newSprites.width || sprites.height != newSprites.height || sprites.names != newSprites.names
            || sprites.pixels != newSprites.pixels {
            resources.icons.upload(newSprites)
        }
        sprites = newSprites
        tiles = store
        gpuTiles.removeAll()
    }

    /// Sets the camera for the next frame.
    public func setCamera(_ camera: Camera) { self.camera = camera }

    /// Sets the overlays for the next frame.
    public func setOverlays(_ overlays: MapOverlays) { self.overlays = overlays }

    /// Changes the target size; the next frame draws at it.
    public func resize(width: Int, height: Int) throws(MapRenderError) {
        do {
            try target.resize(width: width, height: height)
        } catch {
            throw .invalidSize(width: width, height: height, reason: error.description)
        }
        self.width = width
        self.height = height
    }

    /// The transform of the current camera and size: screen <-> geographic conversions.
    public var transform: MapTransform { MapTransform(camera: camera, width: width, height: height) }

    /// The on-screen controls as drawn in the last frame (empty when hidden), ids stable.
    public var controls: [MapControl] {
        overlays.showsControls ? screen.layout(width: width, height: height, covered: overlays.coveredInsets) : []
    }

    // MARK: Frames

    /// Loads every tile the current camera needs, then draws.
    public func renderWhenLoaded() async -> FrameReport {
        await loadTiles()
        return renderFrame()
    }

    /// Loads and lays out every tile the current camera needs (labels' glyphs included),
    /// without drawing.
    package func loadTiles() async {
        let transform = self.transform
        let covering = transform.coveringTiles(zoom: tiles.dataZoom(for: transform.camera.zoom))
        for tile in covering { tiles.request(tile, frame: frameCounter) }
        for tile in covering { _ = await tiles.layout(tile) }
    }

    /// Requests every tile `camera` needs that is not laid out yet, and says how many those are;
    /// `tileArrived` runs as each is ready. A stream's first picture waits while any is missing.
    package func tilesStillLoading(for camera: Camera, tileArrived: @escaping @Sendable () -> Void) -> Int {
        let transform = MapTransform(camera: camera, width: width, height: height)
        var missing = 0
        for tile in transform.coveringTiles(zoom: tiles.dataZoom(for: camera.zoom))
        where gpuTiles[tile] == nil && tiles.cachedLayout(tile) == nil {
            missing += 1
            tiles.request(tile, frame: frameCounter, loaded: tileArrived)
        }
        return missing
    }

    /// Draws a frame with the tiles at hand; missing tiles are requested and their loaded
    /// ancestors drawn instead. `tileArrived` runs when a requested tile is ready.
    @discardableResult
    public func renderFrame(tileArrived: (@Sendable () -> Void)? = nil) -> FrameReport {
        let start = DispatchTime.now().uptimeNanoseconds
        frameCounter += 1
        drawCalls = 0
        let transform = self.transform
        let (drawn, loading) = resolveTiles(transform, tileArrived: tileArrived)
        let labels = draw(transform, tiles: drawn)
        evictTiles()
        let elapsed = Duration.nanoseconds(DispatchTime.now().uptimeNanoseconds - start)
        return FrameReport(issueTime: elapsed, tilesDrawn: drawn.count, tilesLoading: loading,
                           labels: labels, drawCalls: drawCalls)
    }

    /// Tile loads this renderer started that have not finished calling back yet; zero means no
    /// `tileArrived` call is still to come. Tests in manual time wait for it.
    package var tileLoadsInFlight: Int { tiles.loadsInFlight }

    /// Whether this renderer's methods run on its context's render thread (they always should).
    func isOnRenderThread() -> Bool { context.thread.isCurrent }

    /// Waits until the GPU has finished the frame (for timing; readback waits by itself).
    public func finish() { glFinish() }

    /// Reads the last frame back as RGBA, top row first.
    public func readPixels() -> RGBAImage {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), target.framebuffer)
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 1)
        pixels.withUnsafeMutableBytes {
            glReadPixels(0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), $0.baseAddress)
        }
        return RGBAImage(width: width, height: height, pixels: pixels)
    }

    // MARK: NV12

    /// Converts the last frame to NV12 on the GPU and starts reading it back into `slot` (0 or
    /// 1) without waiting: collect it with ``collectNV12(slot:into:)`` after drawing the next
    /// frame, so the copy overlaps that work.
    public func convertToNV12(fullRange: Bool = false, slot: Int) throws(MapRenderError) {
        try convertToNV12(fullRange: fullRange, slot: slot, resolutionScale: 1)
    }

    /// ``convertToNV12(fullRange:slot:)`` keeping only `resolutionScale` (0-1] of the picture's
    /// detail (a stream whose bitrate cannot carry its size).
    package func convertToNV12(fullRange: Bool, slot: Int, resolutionScale: Double) throws(MapRenderError) {
        try resources.output.convert(source: target.color.name, width: width, height: height, fullRange: fullRange,
                                     flipsRows: false, slot: slot, resolutionScale: resolutionScale)
    }

    /// The NV12 frame whose readback was started in `slot`, copied into `frame`'s storage (which
    /// must have this renderer's size); nil if nothing was started there.
    public func collectNV12(slot: Int, into frame: consuming NV12Frame) -> NV12Frame? {
        resources.output.collect(slot: slot, into: frame)
    }

    /// Zero copy, for GL on GBM with a VA-API encoder: converts the last frame straight into the
    /// encoder's input surface, given as the dma-buf planes it exported. Nothing crosses to the
    /// CPU; the planes are imported once and reused while they stay the same.
    public func convertToNV12(into planes: DMABufPlanes, fullRange: Bool = false) throws(MapRenderError) {
        try convertToNV12(into: planes, fullRange: fullRange, resolutionScale: 1)
    }

    /// ``convertToNV12(into:fullRange:)`` keeping only `resolutionScale` (0-1] of the detail.
    package func convertToNV12(into planes: DMABufPlanes, fullRange: Bool, resolutionScale: Double) throws(MapRenderError) {
        try resources.output.convert(source: target.color.name, width: width, height: height, fullRange: fullRange,
                                     flipsRows: false, into: planes, resolutionScale: resolutionScale)
    }

    /// Draws nothing new: converts the last frame and waits for its NV12 bytes.
    public func readNV12(fullRange: Bool = false) throws(MapRenderError) -> NV12Frame {
        try convertToNV12(fullRange: fullRange, slot: 0)
        let frame = NV12Frame(width: width, height: height, fullRange: fullRange)
        guard let filled = collectNV12(slot: 0, into: frame) else {
            throw .gl(.readbackUnavailable)
        }
        return filled
    }

    // MARK: Tiles

    /// The GPU tiles to draw: each covering tile if ready, else its nearest ready ancestor.
    private func resolveTiles(_ transform: MapTransform, tileArrived: (@Sendable () -> Void)?) -> ([GPUTile], Int) {
        let zoom = tiles.dataZoom(for: transform.camera.zoom)
        var drawn = frameTiles
        frameTiles = []
        drawn.removeAll(keepingCapacity: true)
        defer { frameTiles = drawn }
        var loading = 0
        var covering = frameCovering
        frameCovering = []
        defer { frameCovering = covering }
        transform.coveringTiles(zoom: zoom, into: &covering, scratch: &coveringScratch)
        for tile in covering {
            if let gpu = gpuTile(tile) {
                append(gpu, to: &drawn)
                continue
            }
            loading += 1
            tiles.request(tile, frame: frameCounter, loaded: tileArrived)
            var ancestor = tile.parent
            while let candidate = ancestor, candidate.z >= tiles.source.minZoom {
                if let gpu = gpuTile(candidate) {
                    append(gpu, to: &drawn)
                    break
                }
                ancestor = candidate.parent
            }
        }
        // Parents first: children's stencil masks then cover the parent where both exist.
        drawn.sort { $0.layout.tile.z < $1.layout.tile.z }
        return (drawn, loading)
    }

    private func append(_ tile: GPUTile, to list: inout [GPUTile]) {
        if !list.contains(where: { $0 === tile }) { list.append(tile) }
    }

    private func gpuTile(_ tile: TileID) -> GPUTile? {
        if let gpu = gpuTiles[tile] {
            gpu.lastUse = frameCounter
            return gpu
        }
        guard let layout = tiles.cachedLayout(tile) else { return nil }
        let gpu = GPUTile(layout)
        gpu.lastUse = frameCounter
        gpuTiles[tile] = gpu
        return gpu
    }

    private func evictTiles() {
        guard gpuTiles.count > gpuTileCapacity else { return }
        let sorted = gpuTiles.sorted { $0.value.lastUse < $1.value.lastUse }
        for (tile, _) in sorted.prefix(gpuTiles.count - gpuTileCapacity) { gpuTiles[tile] = nil }
    }

    // MARK: Drawing

    /// Counts of the last frame's GL state changes, issued and skipped by its state cache.
    package private(set) var lastFrameStateChanges = GLStateCounts()

    /// Makes every later frame check each GL state change its cache skips against GL itself
    /// (slow: a GL query per skip); ``staleStateSkips`` lists any disagreement. For tests.
    package func verifyStateCacheSkips() {
        resources.glState.verifiesSkips = true
    }

    /// The skipped state changes that GL disagreed with, while verifying; empty when the state
    /// cache never went stale.
    package var staleStateSkips: [String] { resources.glState.staleSkips }

    private func draw(_ transform: MapTransform, tiles drawn: [GPUTile]) -> Int {
        let zoom = transform.camera.zoom
        let state = resources.glState
        // Between frames the NV12 converter, readbacks and other maps on this context set GL
        // state of their own: nothing the cache remembers holds any more.
        state.invalidate()
        state.resetCounts()
        state.bindFramebuffer(target.framebuffer)
        state.setViewport(x: 0, y: 0, width: width, height: height)
        state.setBlendFunction(source: GL_ONE, destination: GL_ONE_MINUS_SRC_ALPHA)

        let layers = style.layers
        let layerCount = layers.count
        // The bottom background layer, when opaque, is the clear colour: no full-screen pass.
        var clear = Color.white
        var firstLayer = 0
        if let first = layers.first, let paint = first.paint.background, paint.backgroundPattern == nil,
           first.isVisible(atZoom: zoom) {
            let color = paint.backgroundColor.evaluate(zoom: zoom)
            let opacity = Float(paint.backgroundOpacity.evaluate(zoom: zoom))
            if color.a * opacity >= 1 {
                clear = color
                firstLayer = 1
            }
        }
        glClearColor(clear.r, clear.g, clear.b, 1)
        glClearDepthf(1)
        glClearStencil(0)
        state.setDepthMask(true)
        state.setStencilMask(0xFF)
        state.setColorMask(true)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT | GL_DEPTH_BUFFER_BIT | GL_STENCIL_BUFFER_BIT))

        let quad = transform.visibleGroundQuad
        frameMatrices.removeAll(keepingCapacity: true)
        frameCullers.removeAll(keepingCapacity: true)
        for tile in drawn {
            frameMatrices.append(transform.tileMatrix(for: tile.layout.tile, extent: tile.layout.extent))
            frameCullers.append(ChunkCuller(transform: transform, tile: tile.layout.tile, extent: tile.layout.extent,
                                            quad: quad))
        }
        var frame = LayerDrawContext(transform: transform, style: style, tiles: drawn, matrices: frameMatrices,
                                     cullers: frameCullers, programs: programs, state: state, sprites: sprites,
                                     overlays: overlays)
        frame.drawTileMasks()

        // Opaque layers top to bottom, each in front of those below it.
        var opaqueTop = -1
        drawnInOpaquePass.removeAll(keepingCapacity: true)
        drawnInOpaquePass.append(contentsOf: repeatElement(false, count: layerCount))
        for index in stride(from: layerCount - 1, through: firstLayer, by: -1) {
            let layer = layers[index]
            guard layer.isVisible(atZoom: zoom) else { continue }
            let drawer = drawers.drawer(for: layer.type)
            guard drawer.isOpaque(layer, at: index, in: frame) else { continue }
            frame.beginLayer(index, pass: .opaque, depthTested: true, spanningDepthBelow: drawer.spansDepthBelowItsLayer)
            drawer.draw(layer, at: index, pass: .opaque, in: &frame)
            opaqueTop = max(opaqueTop, index)
            drawnInOpaquePass[index] = true
        }

        // Everything else bottom to top. Above the top opaque layer nothing can hide a
        // fragment, so the depth test is skipped there.
        for index in firstLayer..<layerCount {
            let layer = layers[index]
            if !customLayers.isEmpty {
                drawCustomLayers(below: layer.id, at: index, depthTested: index <= opaqueTop, transform, &frame)
            }
            guard layer.isVisible(atZoom: zoom) else { continue }
            let drawer = drawers.drawer(for: layer.type)
            guard !drawnInOpaquePass[index] || drawer.drawsAgainAfterOpaquePass else { continue }
            frame.beginLayer(index, pass: .translucent, depthTested: index <= opaqueTop,
                             spanningDepthBelow: drawer.spansDepthBelowItsLayer)
            drawer.draw(layer, at: index, pass: .translucent, in: &frame)
        }

        if !customLayers.isEmpty { drawCustomLayers(below: nil, at: layerCount, depthTested: false, transform, &frame) }
        frame.beginScreenSpace()
        if !style.drawsRoute {
            route.draw(overlays.route, progress: overlays.routeProgress, transform: transform, programs: programs,
                       state: state, drawCalls: &frame.drawCalls)
        }
        let labels = placeLabels(in: frame)
        screen.drawVehicle(overlays.vehicle, transform: transform, programs: programs, state: state,
                           drawCalls: &frame.drawCalls)
        let dark = style.isDark(atZoom: zoom)
        if overlays.showsControls {
            screen.drawControls(width: width, height: height, covered: overlays.coveredInsets, dark: dark,
                                programs: programs, state: state, drawCalls: &frame.drawCalls)
        }
        if let focus = overlays.focusRing {
            screen.drawFocusRing(around: focus, width: width, height: height, dark: dark, programs: programs,
                                 state: state, drawCalls: &frame.drawCalls)
        }
        // Icons go under all text, as a symbol's icon goes under its own text; the attribution's
        // background goes under its text.
        resources.icons.draw(drawers.symbol.placer, width: width, height: height, programs: programs, state: state,
                             drawCalls: &frame.drawCalls)
        screen.drawAttributionBackground(width: width, height: height, covered: overlays.coveredInsets, dark: dark,
                                         programs: programs, state: state, drawCalls: &frame.drawCalls)
        drawers.symbol.drawText(glyphs: glyphs, in: &frame)
        // Nothing after a frame expects a vertex array bound, and an index upload would
        // otherwise replace the last one's indices.
        glBindVertexArray(0)
        drawCalls += frame.drawCalls
        lastFrameStateChanges = state.counts
        return labels
    }

    // MARK: Custom layers

    /// Adds the engine's `layer` below the style layer `layerID` (nil: above every style layer,
    /// under the labels and the screen's overlays), replacing a custom layer of the same id.
    /// The next frame draws it. If a later style lacks `layerID`, it is drawn above the style's
    /// layers.
    ///
    /// - Throws: ``MapRenderError/unknownLayer(id:known:)`` when the style has no layer `layerID`.
    public func addCustomLayer(_ layer: CustomLayer, below layerID: String? = nil) throws(MapRenderError) {
        if let layerID, !style.layers.contains(where: { $0.id == layerID }) {
            throw .unknownLayer(id: layerID, known: style.layers.map(\.id))
        }
        customLayers.removeAll { $0.layer.id == layer.id }
        customLayers.append((layer, layerID))
    }

    /// Removes the custom layer `id`, if there is one.
    public func removeCustomLayer(id: String) {
        customLayers.removeAll { $0.layer.id == id }
        failingCustomLayers.remove(id)
    }

    /// The ids of the custom layers, in the order added.
    public var customLayerIDs: [String] { customLayers.map(\.layer.id) }

    /// Draws the custom layers that go below style layer `id` (nil: those above every style
    /// layer, and those whose layer the style lacks), at layer `index`'s depth.
    private func drawCustomLayers(below id: String?, at index: Int, depthTested: Bool, _ transform: MapTransform,
                                  _ frame: inout LayerDrawContext) {
        for (layer, below) in customLayers {
            if let id {
                guard below == id else { continue }
            } else if let below, style.layers.contains(where: { $0.id == below }) {
                continue
            }
            if id == nil {
                frame.beginScreenSpace()
            } else {
                frame.beginLayer(index, pass: .translucent, depthTested: depthTested, spanningDepthBelow: false)
                resources.glState.setStencilTest(false)
            }
            glBindVertexArray(0)
            do {
                try layer.draw(CustomLayerFrame(framebuffer: target.framebuffer, transform: transform))
                failingCustomLayers.remove(layer.id)
            } catch {
                if failingCustomLayers.insert(layer.id).inserted {
                    logger.warning("custom layer \"\(layer.id)\" failed to draw and is left out until it draws again: \(error)")
                }
            }
            frame.drawCalls += 1
            // Whatever the layer changed, the map's own state is set afresh.
            restoreGLStateAfterEngineCode()
            let state = resources.glState
            state.invalidate()
            state.bindFramebuffer(target.framebuffer)
            state.setViewport(x: 0, y: 0, width: width, height: height)
            state.setBlendFunction(source: GL_ONE, destination: GL_ONE_MINUS_SRC_ALPHA)
        }
    }

    /// Places the frame's labels and the screen's own text (attribution, control labels)
    /// around the controls and the attribution; returns the labels placed.
    private func placeLabels(in frame: LayerDrawContext) -> Int {
        let symbols = drawers.symbol
        symbols.placer.begin(width: width, height: height)
        if overlays.showsControls {
            for control in screen.layout(width: width, height: height, covered: overlays.coveredInsets) {
                symbols.placer.block(control.rect)
            }
        }
        let attribution = screen.attributionBox(width: width, height: height, covered: overlays.coveredInsets)
        symbols.placer.block(attribution)
        symbols.placeLabels(in: frame)
        let dark = style.isDark(atZoom: frame.zoom)
        screen.appendAttribution(to: &symbols.placer, box: attribution, dark: dark)
        if overlays.showsControls {
            screen.appendControlLabels(to: &symbols.placer, width: width, height: height, covered: overlays.coveredInsets,
                                       dark: dark)
        }
        return symbols.placer.placedCount
    }

    /// A fill or line layer's `*-translate`, in pixels along the map's axes; nil when it has
    /// none. A translation anchored to the viewport is turned by the bearing onto the map.
    nonisolated static func translation(of layer: StyleLayer, camera: Camera) -> SIMD2<Double>? {
        let offset: [Double], anchor: TranslateAnchor
        switch layer.paint {
        case .fill(let paint):
            (offset, anchor) = (paint.fillTranslate.evaluate(zoom: camera.zoom), paint.fillTranslateAnchor.evaluate(zoom: camera.zoom))
        case .line(let paint):
            (offset, anchor) = (paint.lineTranslate.evaluate(zoom: camera.zoom), paint.lineTranslateAnchor.evaluate(zoom: camera.zoom))
        default:
            return nil
        }
        guard offset.count == 2, offset[0].isFinite, offset[1].isFinite, offset[0] != 0 || offset[1] != 0 else { return nil }
        let shift = SIMD2(offset[0], offset[1])
        guard anchor == .viewport else { return shift }
        let angle = camera.bearing * .pi / 180
        return SIMD2(cos(angle) * shift.x - sin(angle) * shift.y, sin(angle) * shift.x + cos(angle) * shift.y)
    }

    /// A tile's matrix with the layer's translation in its tile units, so the shift stays the
    /// same number of pixels at every zoom and lies on the map under pitch, as MapLibre draws it.
    nonisolated static func matrix(_ base: Matrix4, for tile: GPUTile, shiftedBy shift: SIMD2<Double>?,
                                   _ transform: MapTransform) -> Matrix4 {
        guard let shift else { return base }
        let units = transform.tileUnitsPerPixel(for: tile.layout.tile, extent: tile.layout.extent)
        return base * .translation(shift.x * units, shift.y * units, 0)
    }
}

/// The GL objects one map owns. Made on the render thread, then owned by its renderer.
final class MapResources {
    let target: GLRenderTarget
    let programs: Programs
    let screen = ScreenOverlays()
    let route = RouteOverlay()
    let icons = IconRenderer()
    let drawers: LayerDrawers
    /// What the draw path last set of GL's state.
    let glState = GLStateCache()
    /// The way out to a stream.
    let output: NV12Output

    init(target: GLRenderTarget, programs: Programs, output: NV12Output) {
        self.target = target
        self.programs = programs
        self.output = output
        drawers = LayerDrawers(icons: icons, route: route)
    }
}

extension RenderContext {
    /// Makes a map's render target, programs and buffers on the render thread.
    func makeMapResources(width: Int, height: Int) -> sending Result<MapResources, MapRenderError> {
        let programs: Programs
        do {
            programs = try Programs(binaries: programBinaries)
        } catch {
            return .failure(.gl(error))
        }
        guard width > 0, height > 0 else {
            return .failure(.invalidSize(width: width, height: height, reason: "each side must be at least 1"))
        }
        do {
            return .success(MapResources(target: try GLRenderTarget(width: width, height: height), programs: programs,
                                         output: NV12Output(display: display, binaries: programBinaries)))
        } catch {
            return .failure(.invalidSize(width: width, height: height, reason: error.description))
        }
    }
}

extension MapRenderer {
    /// Returns once the tile workers of every map released so far have ended, at most `limit`
    /// from now (they finish the layout in hand after their map goes).
    package static func waitForEndingTileWorkers(upTo limit: Duration = .seconds(2)) {
        TileLoader.waitForEndingWorkers(upTo: limit)
    }
}
