import Foundation
import Logging
import CCarWindow
import CarWindow
import CarWindowSinks
import CarWindowSystemSupport

/// A `carwindow_session`: the projection session, its outputs, its head-unit link while
/// started, and the thread that delivers its events.
final class SessionEntry: Sendable {
    static let table = HandleTable<SessionEntry>(kindTag: 2, kindName: "session")

    let token: UInt
    let context: ContextEntry
    let session: ProjectionSession
    /// The files, RTP and callback outputs; nil when the head unit is the only output.
    private let outputs: RecordingOutputs?
    private let display: HeadUnitDisplay
    private let headUnit: (host: String, port: Int, appName: String, appID: String, security: SDLSecurityConfiguration?)?
    private let delivery: EventDelivery?
    private let eventPump: Task<Void, Never>?

    private struct Running: Sendable {
        var link: SDLProjectionLink?
        var linkRun: Task<Void, Never>?
        var linkNews: Task<Void, Never>?
    }
    /// Start, stop and close run one at a time, each to its end: held while their work is awaited.
    private let lifecycle = NSLock()
    /// What start made, for stop; read and written only with `lifecycle` held.
    private let running = LockedState<Running?>(nil)
    private let closed = LockedState(false)
    /// Whether the engine asked the camera to follow the vehicle.
    let followRequested = LockedState(false)

    /// The map's configuration from the config's tiles, styles and fonts, each read and checked;
    /// the styles' sprites and GeoJSON on servers fetched to files, and their tile sources
    /// opened where the config names no tiles.
    private static func readMap(_ config: carwindow_session_config, camera: Camera, _ what: String)
        throws(APIFailure) -> ProjectionSessionConfiguration {
        let tilesPath = try SessionSetup.string(config.tiles_path, "tiles_path")
        let stylePath = try SessionSetup.string(config.style, "style", required: true)!
        let fontsPath = try SessionSetup.string(config.fonts_path, "fonts_path", required: true)!
        let cacheRoot = try SessionSetup.string(config.cache_path, "cache_path").map { URL(fileURLWithPath: $0, isDirectory: true) }
        var dayStyle = try SessionSetup.style(stylePath, "\(what): config.style")
        var nightStyle = try SessionSetup.string(config.night_style, "night_style").map { text throws(APIFailure) in
            try SessionSetup.style(text, "\(what): config.night_style")
        }
        let fonts: FontLibrary
        do {
            fonts = try FontLibrary(directory: URL(fileURLWithPath: fontsPath, isDirectory: true))
        } catch {
            throw .input("\(what): the fonts in \(fontsPath) cannot be read: \(error)")
        }
        // The cache folder is made only for a map that needs servers (or may: its own sources).
        var downloads: (fetcher: HTTPFetcher, files: URL, warning: String?)?
        if tilesPath == nil || StyleResources.namesServers(dayStyle) || nightStyle.map(StyleResources.namesServers) == true {
            let made = StyleResources.downloads(cacheRoot: cacheRoot)
            let logger = Logger(label: "carwindow.style")
            if let warning = made.warning { logger.warning("\(what): \(warning)") }
            func localized(_ style: Style) -> Style {
                let fetched = StyleResources.fetch(for: style, fetcher: made.fetcher, into: made.files)
                for warning in fetched.warnings { logger.warning("\(what): \(warning)") }
                return fetched.style
            }
            dayStyle = localized(dayStyle)
            nightStyle = nightStyle.map(localized)
            downloads = made
        }
        let tiles: SharedTileCache
        var sources: [String: any TileSource] = [:]
        if let tilesPath {
            do {
                tiles = SharedTileCache(source: try openTileSource(at: URL(fileURLWithPath: tilesPath)))
            } catch {
                throw .input("\(what): the tiles at \(tilesPath) cannot be opened: \(error)")
            }
        } else {
            do {
                // Made above whenever tiles_path is NULL.
                let fetcher = downloads?.fetcher ?? HTTPFetcher(cache: nil)
                let opened = try StyleTileSources.open(for: dayStyle, fetcher: fetcher)
                tiles = SharedTileCache(source: opened.basemap)
                sources = opened.others
            } catch {
                throw .input("\(what): config.tiles_path is NULL and \(error)")
            }
        }
        var configuration = ProjectionSessionConfiguration(tiles: tiles, dayStyle: dayStyle, fonts: fonts, camera: camera)
        configuration.nightStyle = nightStyle
        configuration.sources = sources
        return configuration
    }

    /// Makes the session from a checked config (see `carwindow_session_create`).
    static func create(context: ContextEntry, config pointer: UnsafePointer<carwindow_session_config>?)
        throws(APIFailure) -> SessionEntry {
        let config = try SessionSetup.copy(pointer)
        let what = "carwindow_session_create"
        // Numbers first, so a wrong one is reported before any file is read.
        let camera = try SessionSetup.checkCamera(config.camera, "\(what): config.camera")
        guard config.scale.isFinite, HeadUnitDisplay.scaleRange.contains(config.scale) else {
            throw .invalidArgument("\(what): config.scale must be 1...10 (got \(config.scale))")
        }
        guard config.frames_per_second.isFinite else { throw .invalidArgument("\(what): config.frames_per_second must be finite") }
        try SessionSetup.checkRange(config.frames_per_second, 1...60, "frames_per_second", zeroAllowed: true)
        try SessionSetup.checkRange(config.bitrate, 10_000...100_000_000, "bitrate", zeroAllowed: true)
        try SessionSetup.checkRange(config.encoder, 0...2, "encoder")
        try SessionSetup.checkRange(config.appearance, 0...1, "appearance")
        try SessionSetup.checkRange(config.show_controls, 0...1, "show_controls")
        let encoderThreads = try SessionSetup.encoderThreads(config)
        let supportedSizes = try SessionSetup.supportedSizes(config)
        let rtp = try SessionSetup.endpoint(config.rtp_host, config.rtp_port, "rtp")
        let sdl = try SessionSetup.endpoint(config.sdl_host, config.sdl_port, "sdl")
        let annexB = try SessionSetup.string(config.annexb_path, "annexb_path").map { URL(fileURLWithPath: $0) }
        let mp4 = try SessionSetup.string(config.mp4_path, "mp4_path").map { URL(fileURLWithPath: $0) }
        let sdp = try SessionSetup.string(config.sdp_path, "sdp_path").map { URL(fileURLWithPath: $0) }
        if sdp != nil && rtp == nil { throw .invalidArgument("\(what): config.sdp_path needs rtp_host and rtp_port") }
        let callback = config.on_access_unit.map { AccessUnitCallback(function: $0, userData: config.access_unit_user_data) }
        guard annexB != nil || mp4 != nil || rtp != nil || sdl != nil || callback != nil else {
            throw .invalidArgument("\(what): the config names no output; set annexb_path, mp4_path, rtp_host, sdl_host or on_access_unit")
        }
        let display = sdl == nil ? try SessionSetup.display(config) : HeadUnitDisplay()
        let name = try SessionSetup.string(config.name, "name") ?? (config.content == CARWINDOW_CONTENT_MAP ? "map" : "engine")
        let appName = try SessionSetup.string(config.sdl_app_name, "sdl_app_name") ?? "CarWindow"
        let appID = try SessionSetup.string(config.sdl_app_id, "sdl_app_id") ?? "carwindow"
        let security = try SessionSetup.security(config, hasHeadUnit: sdl != nil, what)
        let engineContent = try SessionSetup.engineContent(config, what)

        // Then the inputs: the map's, unless the engine draws its own picture.
        let map = try engineContent == nil ? Self.readMap(config, camera: camera, what) : nil

        // The outputs last: a bad input above leaves no file behind.
        let outputs: RecordingOutputs?
        if annexB != nil || mp4 != nil || rtp != nil || callback != nil {
            do {
                var ownSinks: (@Sendable () -> [any VideoSink])?
                if let callback {
                    ownSinks = { [AccessUnitCallbackSink(callback)] }
                }
                outputs = try RecordingOutputs(annexB: annexB, mp4: mp4, rtp: rtp, sdp: sdp, makeOwnSinks: ownSinks)
            } catch {
                throw APIFailure(error, doing: "\(what): an output cannot be opened")
            }
        } else {
            outputs = nil
        }

        var makeSink: VideoSinkFactory?
        if let outputs {
            makeSink = { _ throws(SinkError) in try outputs.makeSink() }
        }
        var configuration = map ?? ProjectionSessionConfiguration(engine: engineContent ?? .pixels)
        configuration.makeSink = makeSink
        configuration.name = name
        configuration.appearance = config.appearance == CARWINDOW_APPEARANCE_NIGHT ? .night : .day
        configuration.supportedSizes = supportedSizes
        configuration.customFramesPerSecond = config.frames_per_second > 0 ? config.frames_per_second : nil
        configuration.customBitrate = config.bitrate > 0 ? Int(config.bitrate) : nil
        configuration.encoder = switch config.encoder {
        case CARWINDOW_ENCODER_OPENH264: .forced(.openh264)
        case CARWINDOW_ENCODER_VAAPI: .forced(.vaapi)
        default: .automatic
        }
        configuration.encoderThreads = encoderThreads
        configuration.showsControls = config.show_controls == 1
        let eventCallback = config.on_event.map { EventCallback(function: $0, userData: config.event_user_data) }

        do {
            try context.addSession()
        } catch {
            outputs?.closeUnused()
            throw error
        }
        let session = ProjectionSession(configuration: configuration, context: context.renderContext)
        return table.insert { token in
            SessionEntry(token: token, context: context, session: session, outputs: outputs, display: display,
                         headUnit: sdl.map { ($0.host, $0.port, appName, appID, security) },
                         callback: eventCallback)
        }.entry
    }

    private init(token: UInt, context: ContextEntry, session: ProjectionSession, outputs: RecordingOutputs?,
                 display: HeadUnitDisplay, headUnit: (host: String, port: Int, appName: String, appID: String, security: SDLSecurityConfiguration?)?,
                 callback: EventCallback?) {
        self.token = token
        self.context = context
        self.session = session
        self.outputs = outputs
        self.display = display
        self.headUnit = headUnit
        if let callback {
            let delivery = EventDelivery(callback: callback, sessionToken: token)
            self.delivery = delivery
            // Taken now, so that the first start's events are all in it; it ends when the session closes.
            let events = session.events
            eventPump = Task.detached {
                for await event in events { delivery.enqueue(.session(event)) }
            }
        } else {
            delivery = nil
            eventPump = nil
        }
    }

    /// `carwindow_session_start`.
    func start() throws(APIFailure) {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        guard running.withLock({ $0 }) == nil else {
            throw .invalidState("carwindow_session_start: the session is already started; stop it first")
        }
        if let headUnit {
            let session = self.session, delivery = self.delivery
            let link = SDLProjectionLink(session: session,
                                         connection: SDLConnection.Configuration(appName: headUnit.appName, appID: headUnit.appID,
                                                                                 security: headUnit.security),
                                         transport: { SDLTCPTransport(host: headUnit.host, port: headUnit.port) })
            let news = link.connection.events
            let linkNews = Task.detached {
                for await event in news {
                    if let message = EventTranslation.headUnitMessage(event) { delivery?.enqueue(.headUnit(message)) }
                }
            }
            let linkRun = Task.detached {
                do {
                    try await link.run()
                } catch {
                    delivery?.enqueue(.headUnit("the head-unit link ended: \(error)"))
                }
            }
            running.withLock { $0 = Running(link: link, linkRun: linkRun, linkNews: linkNews) }
            return
        }
        let session = self.session, display = self.display
        try waitForThrowing(doing: "carwindow_session_start") {
            do {
                try await session.connect(display: display)
                try await session.startStreaming()
            } catch {
                await session.stop()
                throw error
            }
        }
        running.withLock { $0 = Running() }
    }

    /// `carwindow_session_stop`.
    func stop() {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        stopLocked()
    }

    private func stopLocked() {
        guard let started = running.withLock({ $0 }) else { return }
        let session = self.session
        waitFor {
            if let link = started.link { await link.stop() }
            await session.stop()
            await started.linkRun?.value
            started.linkNews?.cancel()
        }
        running.withLock { $0 = nil }
    }

    /// `carwindow_session_close`, once the handle is out of the table.
    func close() {
        lifecycle.lock()
        let alreadyClosed = closed.withLock { closed in
            defer { closed = true }
            return closed
        }
        guard !alreadyClosed else {
            lifecycle.unlock()
            return
        }
        stopLocked()
        let session = self.session, eventPump = self.eventPump
        waitFor {
            await session.close()
            await eventPump?.value
        }
        outputs?.closeUnused()
        context.removeSession()
        lifecycle.unlock()
        // Outside the lock: the event thread may be inside the callback, calling a function that
        // waits for the lock; it must be able to finish so that the thread can end.
        delivery?.finish()
    }
}
