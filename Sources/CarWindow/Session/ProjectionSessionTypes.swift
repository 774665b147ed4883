import Foundation

/// Day or night: which of the session's styles draws the map.
public enum MapAppearance: String, Sendable, Equatable, CaseIterable {
    /// The configuration's day style.
    case day
    /// The night style (the day style when the configuration has none).
    case night
}

/// Makes the sink a session streams into, once per ``ProjectionSession/startStreaming()``.
/// It runs on the session; the sink it returns is owned by the session from then on.
public typealias VideoSinkFactory = @Sendable (StreamResolution) throws(SinkError) -> any VideoSink

/// Everything a ``ProjectionSession`` is made from.
public struct ProjectionSessionConfiguration: Sendable {
    /// A name for logs and events: "console", "cluster".
    public var name: String
    /// The vector tiles. Give several sessions the same ``SharedTileCache`` to read and decode
    /// each tile once for all of them.
    public var tiles: any TileSource
    /// The style by day.
    public var dayStyle: Style
    /// The style by night; nil keeps the day style at night.
    public var nightStyle: Style?
    /// Which style the session starts with.
    public var appearance: MapAppearance
    /// Fonts for labels.
    public var fonts: FontLibrary
    /// The sizes this app can draw, per orientation (SmartDeviceLink's supported-size ranges).
    public var supportedSizes: SupportedSizes
    /// The app's own frame rate; it applies only where lower than the head unit's.
    public var customFramesPerSecond: Double?
    /// The app's own bitrate in bit/s; it applies only where lower than the head unit's.
    public var customBitrate: Int?
    /// How the encoder spends its bits.
    public var rateControl: RateControl
    /// Which H.264 encoder to use.
    public var encoder: EncoderChoice
    /// Where the video goes.
    public var makeSink: VideoSinkFactory
    /// Re-encodes of the last picture after motion stops, to sharpen it.
    public var refinementFrames: Int
    /// Seconds between keep-alives on a still map; below a head unit's ~1 s "no video" timeout.
    public var keepAliveInterval: Double
    /// Tap, double-tap, pan and pinch thresholds.
    public var gestures: GestureRecognizer.Configuration
    /// Whether pans, pinches and double taps move the map (taps on regions always count).
    public var mapGesturesEnabled: Bool
    /// The first camera.
    public var camera: Camera
    /// Whether the zoom and recenter buttons are drawn (and become haptic regions).
    public var showsControls: Bool
    /// How keep-alives are made.
    public var keepAlive: KeepAliveMethod = .skipPicture
    /// Draws every frame slot whether or not anything changed, as the reference capturers do.
    /// Only for measuring what drawing on change saves; off by default.
    public var drawsEveryFrame = false

    /// A configuration with SmartDeviceLink's defaults: 15 fps and 600 kbit/s unless the head
    /// unit asks otherwise, 3 refinement frames, a keep-alive every 0.5 s.
    public init(name: String = "map", tiles: any TileSource, dayStyle: Style, nightStyle: Style? = nil,
                appearance: MapAppearance = .day, fonts: FontLibrary, supportedSizes: SupportedSizes = .any,
                customFramesPerSecond: Double? = nil, customBitrate: Int? = nil, rateControl: RateControl = .cbr,
                encoder: EncoderChoice = .automatic, refinementFrames: Int = 3, keepAliveInterval: Double = 0.5,
                gestures: GestureRecognizer.Configuration = .init(), mapGesturesEnabled: Bool = true,
                camera: Camera, showsControls: Bool = true, makeSink: @escaping VideoSinkFactory) {
        self.name = name
        self.tiles = tiles
        self.dayStyle = dayStyle
        self.nightStyle = nightStyle
        self.appearance = appearance
        self.fonts = fonts
        self.supportedSizes = supportedSizes
        self.customFramesPerSecond = customFramesPerSecond
        self.customBitrate = customBitrate
        self.rateControl = rateControl
        self.encoder = encoder
        self.refinementFrames = refinementFrames
        self.keepAliveInterval = keepAliveInterval
        self.gestures = gestures
        self.mapGesturesEnabled = mapGesturesEnabled
        self.camera = camera
        self.showsControls = showsControls
        self.makeSink = makeSink
    }
}

/// How a session keeps a still picture alive on the head unit.
public enum KeepAliveMethod: String, Sendable, Equatable, CaseIterable {
    /// A hand-made P picture that skips every macroblock: the head unit repeats the picture
    /// exactly, for about 20 bytes and no encoding work. The encoder's later pictures are
    /// renumbered to follow it. Falls back to ``reencode`` for streams it cannot follow.
    case skipPicture
    /// The last picture encoded again at a small bit budget (it also keeps sharpening).
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
    /// No head unit capability yet; nothing is drawn.
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

/// What a session tells the navigation engine.
public enum ProjectionSessionEvent: Sendable, Equatable {
    /// The state changed.
    case stateChanged(from: ProjectionSessionState, to: ProjectionSessionState)
    /// A stream (re)starts at this size and with these settings; the map is laid out in
    /// `stream.encodedSize` pixels. After a resize this is the new size.
    case streamStarted(StreamResolution, EncoderSettings)
    /// The head unit's capability changed the stream size; the stream restarts at it.
    case resized(StreamResolution)
    /// The haptic regions changed: the full set, in head-unit pixels (scaled), ids stable; an
    /// empty set clears them. A head-unit link sends these as SendHapticData.
    case hapticRegions([HapticRegion])
    /// One of the renderer's controls was tapped (the session already zoomed for zoom in/out).
    case controlTapped(MapControl.Kind)
    /// A region the engine declared (or a map feature) was tapped or selected.
    case regionTapped(id: Int)
    /// The map was tapped outside every region: the point in rendered pixels and the place there.
    case mapTapped(point: SIMD2<Double>, coordinate: GeoCoordinate?)
    /// The user moved the map with a gesture; an engine that follows the vehicle may stop doing
    /// so until the user taps recenter.
    case cameraMovedByUser(Camera)
    /// Input that was ignored or a problem that did not stop the stream.
    case warning(String)
    /// A failure; the state events say whether streaming went on.
    case error(ProjectionSessionError)
}

/// Why a session could not do what was asked, each saying what to do.
public enum ProjectionSessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The head unit's capability offers no size this app supports; no stream.
    case noMatchingResolution(reason: String)
    /// The call does not fit the state (streaming before connecting, say).
    case invalidState(operation: String, state: ProjectionSessionState)
    /// The renderer could not be made or resized.
    case renderer(String)
    /// The encoder could not be made or failed.
    case encoder(EncoderError)
    /// The sink could not be made or refused the stream.
    case sink(SinkError)

    public var description: String {
        switch self {
        case .noMatchingResolution(let reason):
            "the head unit offers no stream size this app supports (\(reason)); widen the supported-size ranges or check the head unit's capability"
        case .invalidState(let operation, let state):
            "cannot \(operation) while the session is \(state.rawValue); connect, then start streaming, in that order"
        case .renderer(let reason): "the map renderer failed: \(reason)"
        case .encoder(let error): "the encoder failed: \(error)"
        case .sink(let error): "the video sink failed: \(error)"
        }
    }
}

/// What a session has done since its stream first started.
public struct ProjectionSessionStatistics: Sendable {
    /// New pictures drawn and sent.
    public var framesRendered = 0
    /// Re-encodes of a still picture that sharpen it.
    public var refinementFrames = 0
    /// Re-encodes of a still picture that keep the head unit from blanking.
    public var keepAlives = 0
    /// IDR pictures sent.
    public var idrFrames = 0
    /// Bytes handed to the sink.
    public var bytesSent = 0
    /// Access units the sink refused.
    public var sinkErrors = 0
    /// Seconds spent streaming (suspended time excluded).
    public var streamingSeconds = 0.0
    /// Bytes sent in each whole second since streaming started (suspended time included).
    public var bytesPerSecond: [Int] = []
    /// New pictures drawn in each whole second since streaming started: the frame rate while
    /// the map moves, and zero while it stands still.
    public var framesRenderedPerSecond: [Int] = []
    /// Milliseconds from a change (camera, vehicle, tiles...) to its picture leaving the sink.
    public var latencyMilliseconds: [Double] = []
    /// Milliseconds on the render thread per drawn picture: draw, NV12 conversion, readback.
    public var renderMilliseconds: [Double] = []
    /// Milliseconds in the encoder per access unit.
    public var encodeMilliseconds: [Double] = []

    /// Access units sent: drawn pictures, refinements and keep-alives.
    public var framesSent: Int { framesRendered + refinementFrames + keepAlives }

    /// How many samples each list keeps (30 minutes at 60 fps); later samples are not kept.
    public static let sampleCapacity = 108_000
}
