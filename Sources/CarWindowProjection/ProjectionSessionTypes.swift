import Foundation
import CarWindowGeo
import CarWindowStyle
import CarWindowVideoCore
import CarWindowMap
import CarWindowH264
import CarWindowSinks

/// Day or night: which of the session's styles draws the map.
public enum MapAppearance: String, Sendable, Equatable, CaseIterable {
    /// The configuration's day style.
    case day
    /// The night style (the day style when the configuration has none).
    case night
}

/// Makes the sink a session streams into, once per ``ProjectionSession/startStreaming()``, for
/// the chosen stream. It runs on the session. The sink it returns belongs to the session from
/// then on: the session closes it when the stream ends (``ProjectionSession/stop()``,
/// ``ProjectionSession/close()``, or the stream failing for good), and a later start calls the
/// factory again for a new one.
public typealias VideoSinkFactory = @Sendable (StreamResolution) throws(SinkError) -> any VideoSink

/// Everything a ``ProjectionSession`` is made from: the map's data and where the first camera
/// looks are required; everything else has a default and can be set afterwards.
///
/// ```swift
/// var configuration = ProjectionSessionConfiguration(tiles: tiles, dayStyle: day, fonts: fonts,
///                                                    camera: Camera(center: here, zoom: 16)) { _ in
///     try MP4FileSink(url: URL(fileURLWithPath: "drive.mp4"))
/// }
/// configuration.nightStyle = night
/// configuration.keepAliveInterval = .milliseconds(400)
/// ```
///
/// Without a sink factory the session's only output is a head unit: bind it with
/// `SDLProjectionLink`, which adds the head unit as an output. With both, every picture goes
/// to the head unit and to the factory's sink (a recording, say), which fail independently.
public struct ProjectionSessionConfiguration: Sendable {
    /// The vector tiles. Give several sessions the same `SharedTileCache` to read and decode
    /// each tile once for all of them.
    public var tiles: any TileSource
    /// Tile sources of their own for vector sources of the styles, by source id (an overlay
    /// archive beside the basemap); every other vector source draws from ``tiles``. The map is not
    /// made when the style it starts with lacks a vector source of an id bound here; a style set
    /// later without one draws nothing from that binding.
    public var sources: [String: any TileSource] = [:]
    /// The style by day.
    public var dayStyle: Style
    /// Fonts for labels; the map is not drawn without them (an engine's own content needs none).
    public var fonts: FontLibrary?
    /// The first camera: what the map shows until the engine sets another.
    public var camera: Camera
    /// Makes the session's own output (a file, an RTP receiver, a `TeeSink` of several) at each
    /// stream start; nil when a head-unit link is the only output. See ``VideoSinkFactory`` for
    /// who closes the sink.
    public var makeSink: VideoSinkFactory?

    /// What the pictures show: CarWindow's map (the default), or the engine's own picture.
    public var content = ProjectedContent.map
    /// How long the engine's GL draw (``EngineContent/gl(_:)``) may run before the session
    /// reports it stalled (an error event, once per draw) and keeps the last picture alive
    /// without it: keep-alives go on, and ``ProjectionSession/stop()`` and
    /// ``ProjectionSession/close()`` return without waiting for the draw. Calls that need the
    /// render thread (a snapshot, a resize) wait until it returns. One second unless set;
    /// at least a tenth of one.
    public var engineDrawTimeout: Duration = .seconds(1)
    /// A name for logs: "console", "cluster". The default is "map".
    public var name = "map"
    /// The style by night; nil (the default) keeps the day style at night.
    public var nightStyle: Style?
    /// Which style the session starts with; the default is ``MapAppearance/day``.
    public var appearance = MapAppearance.day
    /// The sizes this app can draw, per orientation (SmartDeviceLink's supported-size ranges).
    /// The default, ``SupportedSizes/any``, takes whatever the head unit offers.
    public var supportedSizes = SupportedSizes.any
    /// The app's own frame rate; it applies only where lower than the head unit's. The default,
    /// nil, streams at the head unit's rate (SmartDeviceLink's 15 fps unless it asks otherwise).
    public var customFramesPerSecond: Double?
    /// The app's own bitrate in bit/s; it applies only where lower than the head unit's. The
    /// default, nil, streams at the head unit's limit (600 kbit/s unless it says otherwise).
    public var customBitrate: Int?
    /// How the encoder spends its bits; the default is `RateControl.cbr`.
    public var rateControl = RateControl.cbr
    /// Whether a stream whose bitrate cannot carry its size and frame rate sends fewer pictures
    /// a second, then less detail in each, rather than a picture of blocks (each change is a
    /// ``ProjectionSessionEvent/qualityChanged(_:)`` event), and goes back up when the bitrate
    /// allows; on by default. Off, the encoder's quantiser alone holds the bitrate.
    public var adaptsQualityToBitrate = true
    /// Which H.264 encoder to use; the default is VA-API where a GPU offers it, else OpenH264.
    public var encoder = EncoderChoice.automatic
    /// OpenH264's threads, one slice of each picture apiece; the default chooses from the cores
    /// and the stream's size. Hardware encoders ignore it.
    public var encoderThreads = EncoderThreads.automatic
    /// Re-encodes of the last picture after motion stops, to sharpen it; the default is 3.
    public var refinementFrames = 3
    /// How long the first picture of a start, resume or resize may wait for the view's tiles to
    /// be laid out, so that the head unit does not show an empty map first; after it the picture
    /// shows what is there. The default is 0.5 s; zero sends the first picture at once.
    public var firstPictureHold: Duration = .milliseconds(500)
    /// How keep-alives are made on a still map; the default is a hand-made skip picture.
    public var keepAlive = KeepAliveMethod.skipPicture
    /// Time between keep-alives on a still map, kept within 0.05...0.9 s, below a head unit's
    /// ~1 s "no video" timeout; the default is 0.5 s.
    public var keepAliveInterval: Duration = .milliseconds(500)
    /// Tap, double-tap, pan and pinch thresholds; the defaults are SmartDeviceLink's.
    public var gestures = GestureRecognizer.Configuration()
    /// Whether pans, pinches and double taps move the map (taps on regions always count); on
    /// by default.
    public var mapGesturesEnabled = true
    /// Whether the zoom and recenter buttons are drawn (and become haptic regions); on by default.
    public var showsControls = true
    /// Draws every frame slot whether or not anything changed, as the reference capturers do.
    /// Only for measuring what drawing on change saves; off by default.
    public var drawsEveryFrame = false
    /// The time the session runs on: frame pacing, refinements, keep-alives, camera animations,
    /// the double-tap window and the statistics' times (render and encode times excepted: they
    /// measure the machine). The system's monotonic clock unless a test drives the session in
    /// its own time.
    public var clock: SessionClock = .monotonic
    /// Offline encoding (`carwindow encode`, the benchmark): these settings exactly, frame rate
    /// and all, instead of what the head unit's display and the custom values give, for
    /// streams of their size.
    package var encoderSettings: EncoderSettings?

    /// A configuration with SmartDeviceLink's defaults for everything but the map's data and
    /// first camera: 15 fps and 600 kbit/s unless the head unit asks otherwise, 3 refinement
    /// frames, a skip-picture keep-alive every 0.5 s, every stream size the head unit offers.
    ///
    /// - Parameters:
    ///   - tiles: the vector tiles (see ``tiles``).
    ///   - dayStyle: the style by day, and by night too unless ``nightStyle`` is set.
    ///   - fonts: fonts for labels.
    ///   - camera: where the map looks until the engine sets another camera.
    ///   - makeSink: the session's own output, made at each stream start; nil when an
    ///     `SDLProjectionLink` bound to the session is the only output.
    public init(tiles: any TileSource, dayStyle: Style, fonts: FontLibrary, camera: Camera,
                makeSink: VideoSinkFactory? = nil) {
        self.tiles = tiles
        self.dayStyle = dayStyle
        self.fonts = fonts
        self.camera = camera
        self.makeSink = makeSink
    }
}

extension ProjectionSessionConfiguration {
    /// A configuration for a session that shows the engine's own picture instead of a map, with
    /// the same defaults as ``init(tiles:dayStyle:fonts:camera:makeSink:)`` for the stream.
    ///
    /// - Parameters:
    ///   - content: how the engine supplies its picture: its GL draw, or pixels it hands over.
    ///   - makeSink: the session's own output, made at each stream start; nil when an
    ///     `SDLProjectionLink` bound to the session is the only output.
    public init(engine content: EngineContent, makeSink: VideoSinkFactory? = nil) {
        tiles = NoTiles()
        dayStyle = .empty
        fonts = nil
        camera = Camera(center: GeoCoordinate(latitude: 0, longitude: 0), zoom: 0)
        self.makeSink = makeSink
        self.content = .engine(content)
        name = "engine"
    }
}

/// What a session's pictures show.
public enum ProjectedContent: Sendable {
    /// CarWindow's map, drawn from the configuration's tiles, styles and fonts.
    case map
    /// The engine's own picture; the configuration's map settings are not used.
    case engine(EngineContent)
}

/// How an engine supplies its own picture to a session, with the session's pacing unchanged:
/// a picture is drawn at each stream start, after ``ProjectionSession/invalidate()``, and at the
/// stream's frame rate while ``ProjectionSession/setContinuousFrames(_:)`` asks for it; a still
/// screen costs only keep-alives.
public enum EngineContent: Sendable {
    /// The engine draws with GL: the session calls `draw` on its render thread, with its
    /// context current and a framebuffer of the stream's size bound (see `EngineGLFrame`).
    case gl(EngineGLDraw)
    /// The engine draws with anything and hands each picture over: as bytes with
    /// ``ProjectionSession/pushPixels(_:)``, or as a GPU buffer it exported with
    /// ``ProjectionSession/pushDmaBuf(_:)``.
    case pixels

    var name: String {
        switch self {
        case .gl: "the engine's GL drawing"
        case .pixels: "pixels the engine hands over"
        }
    }
}

/// The tiles of a configuration without a map: there are none.
struct NoTiles: TileSource {
    var name: String { "none" }
    var minZoom: Int { 0 }
    var maxZoom: Int { 0 }
    var bounds: GeoBounds? { nil }
    func data(for tile: TileID) throws(TileSourceError) -> Data? { nil }
}

/// How a session keeps a still picture alive on the head unit: once the refinements after the
/// last movement are out, one keep-alive goes out every
/// ``ProjectionSessionConfiguration/keepAliveInterval``.
public enum KeepAliveMethod: String, Sendable, Equatable, CaseIterable {
    /// A hand-made P picture that skips every macroblock: the head unit repeats the picture
    /// exactly, for about 20 bytes and no encoding work. The encoder's later pictures are
    /// renumbered to follow it. Falls back to ``reencode`` for streams it cannot follow.
    case skipPicture
    /// The last picture encoded again at a small bit budget (2 kbit/s; it also keeps
    /// sharpening): encoder work at every keep-alive.
    case reencode
}

/// Where a session is in its life.
///
/// ```
/// disconnected --connect--> ready --startStreaming--> streaming <--suspend/resume--> suspended
///       ^                                                  |                              |
///       +------------------------ stopping <------stop-----+------------------------------+
/// ```
public enum ProjectionSessionState: String, Sendable, Equatable {
    /// No head-unit display yet; nothing is drawn.
    case disconnected
    /// The stream size is chosen and the map can be drawn; no video flows yet.
    case ready
    /// Frames flow: on movement, refinements after it, keep-alives when still.
    case streaming
    /// The head unit may not show video now (HMI level lost, app in the background): nothing is
    /// sent; resuming starts again with an IDR.
    case suspended
    /// Ending the stream, then back to disconnected.
    case stopping
}

/// What a session tells the navigation engine, on ``ProjectionSession/events``.
public enum ProjectionSessionEvent: Sendable, Equatable {
    /// The state changed.
    case stateChanged(from: ProjectionSessionState, to: ProjectionSessionState)
    /// A stream (re)starts at this size and with these settings; the map is laid out in
    /// `stream.encodedSize` pixels. After a resize this is the new size.
    case streamStarted(StreamResolution, EncoderSettings)
    /// The head unit's display changed the stream size; the stream restarts at it.
    case resized(StreamResolution)
    /// The stream's frame rate or detail changed to fit its bitrate (see
    /// ``ProjectionSessionConfiguration/adaptsQualityToBitrate``); also sent when a stream
    /// starts below the head unit's rate. An engine that draws on its own clock may draw this
    /// often and no more.
    case qualityChanged(StreamQuality)
    /// The haptic regions changed: the full set, in head-unit pixels (scaled), ids stable; an
    /// empty set clears them. A head-unit link sends these as SendHapticData.
    case hapticRegions([HapticRegion])
    /// One of the renderer's controls was tapped (the session already zoomed for zoom in/out).
    case controlTapped(MapControl.Kind)
    /// A region the engine declared (or a map feature) was tapped or selected.
    case regionTapped(id: Int)
    /// The map was tapped outside every region: the point in rendered pixels and the place there.
    case mapTapped(point: SIMD2<Double>, coordinate: GeoCoordinate?)
    /// An alternative route (its index in ``ProjectionSession/setAlternatives(_:)``) was tapped:
    /// a tap within a finger's width of its line, outside every region.
    case alternativeTapped(index: Int)
    /// The user moved the map with a gesture; an engine that follows the vehicle may stop doing
    /// so until the user taps recenter. A flung map reports once more where it comes to rest (or
    /// where a touch stopped it).
    case cameraMovedByUser(Camera)
    /// A camera command ran (``ProjectionSession/perform(_:)``: a head unit's navigation
    /// button, say).
    case commandPerformed(MapCommand)
    /// The app's own focus moved to haptic region `id` (nil: nothing to focus); see
    /// ``ProjectionSession/setFocusEnabled(_:)``.
    case focusChanged(regionID: Int?)
    /// Input that was ignored or a problem that did not stop the stream.
    case warning(ProjectionSessionWarning)
    /// A failure; the state events say whether streaming went on.
    case error(ProjectionSessionError)
}

/// Input a session ignored, or a problem it went on after; each says what was wrong and what
/// to do. Nothing else changed: the stream goes on as it was (except after
/// ``streamGivenUp(failuresInARow:)``).
public enum ProjectionSessionWarning: Sendable, Equatable, CustomStringConvertible {
    /// ``ProjectionSession/setCamera(_:transition:)`` got a value that is not finite; the camera
    /// on screen stays.
    case cameraIgnored(Camera)
    /// ``ProjectionSession/setVehicle(_:)`` got a position or heading that is not finite; the
    /// vehicle on screen stays.
    case vehicleIgnored(VehicleMarker)
    /// ``ProjectionSession/setRoute(_:)`` dropped `dropped` of `of` points that were not finite
    /// or lay off the globe, and drew the rest.
    case routePointsDropped(dropped: Int, of: Int)
    /// The route has fewer than two valid points (`validPoints`), so none is drawn.
    case routeHidden(validPoints: Int)
    /// ``ProjectionSession/setRouteProgress(_:)`` got metres that are negative or not finite;
    /// the progress on screen stays.
    case routeProgressIgnored(metres: Double)
    /// ``ProjectionSession/setRouteCongestion(_:)`` left out `dropped` of `of` stretches whose
    /// ends were not finite or not in order, or beyond `RouteCongestion.maximumCount`.
    case routeCongestionDropped(dropped: Int, of: Int)
    /// A display update (``ProjectionSession/updateDisplay(_:)``) was refused (the error says
    /// why); the stream goes on at `kept`, the stream size in force (nil before the first stream).
    case displayUpdateIgnored(ProjectionSessionError, kept: StreamResolution?)
    /// The head unit asked for `asked` frames per second, more than this app draws and
    /// encodes; the stream runs at `streamed`.
    case frameRateCapped(asked: Int, streamed: Double)
    /// A touch event from the head unit was refused (``TouchEvent/validate()``) and not used.
    case touchIgnored(TouchEventRejection)
    /// The head unit's display scale `asked` lies outside ``HeadUnitDisplay/scaleRange`` (or is
    /// not finite); the stream uses `used`.
    case scaleClamped(asked: Double, used: Double)
    /// A haptic select named a region that is not on screen.
    case hapticSelectIgnored(regionID: Int)
    /// The encoder's rate control could not switch to the keep-alive rate (`forKeepAlives`) or
    /// back to the moving-map rate; pictures go on at the previous rate.
    case encoderRateUnchanged(forKeepAlives: Bool, EncoderError)
    /// `failuresInARow` pictures in a row failed, or the output can take no more (the errors
    /// before say why): the session stops the stream.
    case streamGivenUp(failuresInARow: Int)

    /// What was ignored or went wrong, and what to do.
    public var description: String {
        switch self {
        case .cameraIgnored(let camera):
            "camera ignored: every value must be finite (\(camera)); the map stays where it was"
        case .vehicleIgnored(let vehicle):
            "vehicle ignored: its position and heading must be finite (\(vehicle.coordinate), heading \(vehicle.heading)); "
                + "the vehicle stays where it was"
        case .routePointsDropped(let dropped, let total):
            "route: \(dropped) of \(total) points dropped (not finite or off the globe); check the route's source"
        case .routeHidden(let valid):
            "route hidden: it needs at least two valid points and has \(valid)"
        case .routeProgressIgnored(let metres):
            "route progress ignored: it must be finite metres of 0 or more (got \(metres)); the route stays as drawn"
        case .routeCongestionDropped(let dropped, let total):
            "route traffic: \(dropped) of \(total) stretches left out (ends not finite, not in order, or more than "
                + "\(RouteCongestion.maximumCount)); the rest is drawn"
        case .displayUpdateIgnored(let error, let kept):
            "display update ignored, the stream goes on at \(kept.map { "\($0.encodedSize)" } ?? "its size"): \(error)"
        case .frameRateCapped(let asked, let streamed):
            "the head unit asks for \(asked) fps; the stream runs at \(Int(streamed)) fps, the most this app draws and encodes"
        case .touchIgnored(let rejection):
            "touch event ignored: \(rejection)"
        case .scaleClamped(let asked, let used):
            "the head unit's display scale \(asked) is outside \(HeadUnitDisplay.scaleRange); the stream uses scale \(used)"
        case .hapticSelectIgnored(let id):
            "haptic select ignored: no region \(id) on screen; select one of the regions last sent"
        case .encoderRateUnchanged(let forKeepAlives, let error):
            "could not change the encoder's rate for \(forKeepAlives ? "keep-alives" : "moving pictures"): \(error)"
        case .streamGivenUp(let failures):
            "the stream stops: \(failures) frames in a row failed, or the output cannot take more (see the errors before); "
                + "fix what they name, then connect and start streaming again"
        }
    }
}

/// Why a session could not do what was asked, each saying what to do.
public enum ProjectionSessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The head unit's display offers no size this app supports; no stream.
    case noMatchingResolution(reason: String)
    /// The call does not fit the state (streaming before connecting, say).
    case invalidState(operation: String, state: ProjectionSessionState)
    /// The renderer could not be made or resized, or a frame could not be drawn.
    case renderer(MapRenderError)
    /// What the engine drew or handed over could not be used (see ``ProjectedContent/engine(_:)``).
    case engineContent(EngineContentError)
    /// The encoder could not be made or failed.
    case encoder(EncoderError)
    /// The sink could not be made or refused the stream, or an output failed.
    case sink(SinkError)
    /// The configuration shows the map but has no fonts for its labels.
    case noFonts
    /// Streaming cannot start: the configuration has no sink factory and no head-unit link is
    /// bound to the session.
    case noOutput

    public var description: String {
        switch self {
        case .noMatchingResolution(let reason):
            "the head unit offers no stream size this app supports (\(reason)); widen the supported-size ranges or check the sizes the head unit offers"
        case .invalidState(let operation, let state):
            "cannot \(operation) while the session is \(state.rawValue); connect, then start streaming, in that order"
        case .renderer(let error): "the map renderer failed: \(error)"
        case .engineContent(let error): error.description
        case .encoder(let error): "the encoder failed: \(error)"
        case .sink(let error): "the video sink failed: \(error)"
        case .noFonts:
            "the map needs fonts for its labels: set the configuration's fonts (FontLibrary(directory:)), or show the engine's own content"
        case .noOutput:
            "the session has nowhere to send video: give its configuration a sink factory (makeSink) or bind it to a head unit with SDLProjectionLink"
        }
    }
}

/// What a session has done since its stream first started.
public struct ProjectionSessionStatistics: Sendable {
    /// New pictures drawn and sent.
    public var framesRendered = 0
    /// Re-encodes of a still picture that sharpen it.
    public var refinementFrames = 0
    /// Keep-alives sent on a still map (skip pictures, or re-encodes of the last picture).
    public var keepAlives = 0
    /// IDR pictures sent.
    public var idrFrames = 0
    /// Bytes handed to the outputs.
    public var bytesSent = 0
    /// Access units the outputs refused (all of them, when there are several).
    public var sinkErrors = 0
    /// Time spent streaming (suspended time excluded).
    public var streamingTime = Duration.zero
    /// Bytes sent in each whole second since streaming started (suspended time included).
    public var bytesPerSecond: [Int] = []
    /// New pictures drawn in each whole second since streaming started: the frame rate while
    /// the map moves, and zero while it stands still.
    public var framesRenderedPerSecond: [Int] = []
    /// Per drawn picture: from the change that made it (camera, vehicle, tiles...) to the picture
    /// leaving the sink.
    public var latencies: [Duration] = []
    /// Per drawn picture: time on the render thread to draw it, convert it to NV12 and read it back.
    public var renderTimes: [Duration] = []
    /// Per encoded picture (drawn, refinement or re-encoded keep-alive): time in the encoder.
    public var encodeTimes: [Duration] = []

    /// Access units sent: drawn pictures, refinements and keep-alives.
    public var framesSent: Int { framesRendered + refinementFrames + keepAlives }

    /// How many samples each list keeps (30 minutes at 60 fps); later samples are not kept.
    public static let sampleCapacity = 108_000
}
