import CarWindowGeo
import CarWindowVideoCore
import CarWindowMap

/// Where a session's pictures are drawn: its map, or the engine's own canvas.
enum StreamCanvas {
    case map(MapRenderer)
    case engine(EngineCanvas)

    var map: MapRenderer? {
        if case .map(let renderer) = self { renderer } else { nil }
    }
}

/// What one draw of a ``FrameSource`` did, whichever canvas drew it.
struct SourceDraw {
    /// Why the picture was not drawn and converted; nil when its readback started.
    var error: ProjectionSessionError?
    /// The earlier picture's NV12 frame, when the draw was asked to collect one.
    var collected: Result<NV12Frame, ProjectionSessionError>?
    /// The map's controls drawn, for haptic regions; none on an engine's canvas.
    var controls: [MapControl] = []
    /// The map's camera transform, for haptic map features; nil on an engine's canvas.
    var transform: MapTransform?
}

/// The first stage of a stream's frame path: draws the session's view on its canvas (the map,
/// or the engine's GL or pixels), on the render thread, and hands the pictures on as NV12.
///
/// Pictures are read back through a ring of two slots, so the GPU (or llvmpipe's rasterizer
/// threads) finishes one picture while the next is drawn: a draw returns a ``Ticket`` for its
/// picture, and a later draw or ``collect(_:isolation:)`` turns a ticket into a frame. With
/// zero copy (``encoderSurface``) it draws straight into the encoder's input surface instead and
/// nothing is read back.
///
/// One per stream, with the stream's size; owned by the session's actor and used only there.
final class FrameSource {
    let canvas: StreamCanvas
    let width: Int
    let height: Int
    /// Whether pictures use the full 0-255 range (else the video range).
    let fullRange: Bool
    /// Zero copy: the encoder's input surface, which the canvas draws into (GL on GBM, a
    /// VA-API encoder that exports its surface); nil when pictures are read back and copied.
    let encoderSurface: DMABufPlanes?
    /// The readback slot the next picture uses.
    private var nextSlot = 0
    /// A frame to read the next picture into: the one the encoder gave back last.
    private var spare: NV12Frame?

    /// A picture drawn whose readback has started and is not collected yet.
    struct Ticket {
        fileprivate let slot: Int
    }

    /// Which picture a draw collects while it is on the render thread.
    enum Collecting {
        /// None: the caller collects later (the next draw comes right away, a script's).
        case nothing
        /// One drawn by an earlier draw.
        case earlier(Ticket)
        /// The one this draw draws, right after starting its readback.
        case thisPicture
    }

    /// What the next picture shows: the map's view, or what the engine draws or handed over.
    enum Content {
        case map(camera: Camera, overlays: MapOverlays, tileArrived: @Sendable () -> Void)
        case engine(EngineDrawing)
    }

    init(canvas: StreamCanvas, width: Int, height: Int, fullRange: Bool, encoderSurface: DMABufPlanes?) {
        self.canvas = canvas
        self.width = width
        self.height = height
        self.fullRange = fullRange
        self.encoderSurface = encoderSurface
    }

    /// Draws `content` and starts reading the picture back, and collects what `collecting`
    /// says, all in one visit to the render thread. The draw's `collected` holds the collected
    /// frame; the ticket is this picture's.
    func draw(_ content: Content, collecting: Collecting,
              isolation: isolated (any Actor)? = #isolation) async -> (ticket: Ticket, draw: SourceDraw) {
        let slot = nextSlot
        nextSlot ^= 1
        let collect: (slot: Int, frame: NV12Frame)? = switch collecting {
        case .nothing: nil
        case .earlier(let ticket): (ticket.slot, takeSpare())
        case .thisPicture: (slot, takeSpare())
        }
        switch (canvas, content) {
        case (.map(let renderer), .map(let camera, let overlays, let tileArrived)):
            let drawn = await renderer.drawStreamFrame(camera: camera, overlays: overlays, fullRange: fullRange,
                                                       readbackSlot: slot, collecting: collect, tileArrived: tileArrived)
            return (Ticket(slot: slot), SourceDraw(error: drawn.error.map { .renderer($0) },
                                                   collected: drawn.collected?.mapError { .renderer($0) },
                                                   controls: drawn.controls, transform: drawn.transform))
        case (.engine(let engineCanvas), .engine(let drawing)):
            let drawn = await engineCanvas.drawStreamFrame(drawing, fullRange: fullRange, readbackSlot: slot,
                                                           collecting: collect)
            return (Ticket(slot: slot), SourceDraw(error: drawn.error.map { .engineContent($0) },
                                                   collected: drawn.collected?.mapError { .renderer($0) }))
        default:
            return (Ticket(slot: slot), SourceDraw(error: Self.mismatch))
        }
    }

    /// The frame of the picture `ticket` stands for (waiting for the GPU if it is still busy).
    func collect(_ ticket: Ticket, isolation: isolated (any Actor)? = #isolation) async
        -> Result<NV12Frame, ProjectionSessionError> {
        switch canvas {
        case .map(let renderer): await renderer.collectStreamFrame(slot: ticket.slot, into: takeSpare()).mapError { .renderer($0) }
        case .engine(let engineCanvas):
            await engineCanvas.collectStreamFrame(slot: ticket.slot, into: takeSpare()).mapError { .renderer($0) }
        }
    }

    /// Zero copy: draws `content` into ``encoderSurface`` in one visit to the render thread;
    /// the draw's error, if any, says why the picture is not in the surface.
    func drawIntoEncoderSurface(_ surface: DMABufPlanes, _ content: Content,
                                isolation: isolated (any Actor)? = #isolation) async -> SourceDraw {
        switch (canvas, content) {
        case (.map(let renderer), .map(let camera, let overlays, let tileArrived)):
            let drawn = await renderer.drawStreamFrame(camera: camera, overlays: overlays, fullRange: fullRange,
                                                       into: surface, tileArrived: tileArrived)
            return SourceDraw(error: drawn.error.map { .renderer($0) }, controls: drawn.controls, transform: drawn.transform)
        case (.engine(let engineCanvas), .engine(let drawing)):
            let error = await engineCanvas.drawStreamFrame(drawing, fullRange: fullRange, into: surface)
            return SourceDraw(error: error.map { .engineContent($0) })
        default:
            return SourceDraw(error: Self.mismatch)
        }
    }

    /// A draw whose content is not the canvas's kind; the session never asks for one.
    private static let mismatch = ProjectionSessionError.engineContent(
        .wrongContent(operation: "draw this picture", content: "another kind of content"))

    /// Takes back a frame the stream is done with (the picture that was on screen), to read a
    /// later picture into: after the first pictures, drawing allocates no frames.
    func recycle(_ frame: NV12Frame) {
        guard frame.width == width, frame.height == height, frame.fullRange == fullRange else { return }
        spare = frame
    }

    private func takeSpare() -> NV12Frame {
        if let frame = spare {
            spare = nil
            return frame
        }
        return NV12Frame(width: width, height: height, fullRange: fullRange)
    }
}
