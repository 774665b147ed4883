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
    /// Why the engine's dma-buf was read through a mapping rather than imported, when it was.
    var dmaBufMapped: String?
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
    /// The share of the stream's width and height whose detail pictures keep
    /// (``StreamQuality/resolutionScale``): 1 unless the bitrate cannot carry the size.
    var resolutionScale = 1.0
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

    init(canvas: StreamCanvas, width: Int, height: Int, fullRange: Bool, encoderSurface: DMABufPlanes?) {
        self.canvas = canvas
        self.width = width
        self.height = height
        self.fullRange = fullRange
        self.encoderSurface = encoderSurface
    }

    /// Draws `camera` and `overlays` on the map and starts reading the picture back, and
    /// collects what `collecting` says, all in one visit to the render thread. The draw's
    /// `collected` holds the collected frame; the ticket is this picture's.
    func drawMap(camera: Camera, overlays: MapOverlays, tileArrived: @escaping @Sendable () -> Void, collecting: Collecting,
                 isolation: isolated (any Actor)? = #isolation) async -> (ticket: Ticket, draw: SourceDraw) {
        let (slot, collect) = slots(collecting)
        guard case .map(let renderer) = canvas else { return (Ticket(slot: slot), SourceDraw(error: Self.mismatch)) }
        let drawn = await renderer.drawStreamFrame(camera: camera, overlays: overlays, fullRange: fullRange,
                                                   readbackSlot: slot, collecting: collect, resolutionScale: resolutionScale,
                                                   tileArrived: tileArrived)
        return (Ticket(slot: slot), SourceDraw(error: drawn.error.map { .renderer($0) },
                                               collected: drawn.collected?.mapError { .renderer($0) },
                                               controls: drawn.controls, transform: drawn.transform))
    }

    /// ``drawMap(camera:overlays:tileArrived:collecting:isolation:)`` for the engine's canvas:
    /// draws or uploads `drawing`.
    func drawEngine(_ drawing: EngineDrawing, collecting: Collecting,
                    isolation: isolated (any Actor)? = #isolation) async -> (ticket: Ticket, draw: SourceDraw) {
        let (slot, collect) = slots(collecting)
        guard case .engine(let engineCanvas) = canvas else { return (Ticket(slot: slot), SourceDraw(error: Self.mismatch)) }
        let drawn = await engineCanvas.drawStreamFrame(drawing, fullRange: fullRange, readbackSlot: slot, collecting: collect,
                                                        resolutionScale: resolutionScale)
        return (Ticket(slot: slot), SourceDraw(error: drawn.error.map { .engineContent($0) },
                                               collected: drawn.collected?.mapError { .renderer($0) },
                                               dmaBufMapped: drawn.dmaBufMapped))
    }

    /// The slot this draw reads back into, and the earlier picture it collects with the frame
    /// to collect it into.
    private func slots(_ collecting: Collecting) -> (slot: Int, collect: (slot: Int, frame: NV12Frame)?) {
        let slot = nextSlot
        nextSlot ^= 1
        return switch collecting {
        case .nothing: (slot, nil)
        case .earlier(let ticket): (slot, (ticket.slot, takeSpare()))
        case .thisPicture: (slot, (slot, takeSpare()))
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

    /// Zero copy: draws `camera` and `overlays` on the map into ``encoderSurface`` in one visit
    /// to the render thread; the draw's error, if any, says why the picture is not in the surface.
    func drawMapIntoEncoderSurface(_ surface: DMABufPlanes, camera: Camera, overlays: MapOverlays,
                                   tileArrived: @escaping @Sendable () -> Void,
                                   isolation: isolated (any Actor)? = #isolation) async -> SourceDraw {
        guard case .map(let renderer) = canvas else { return SourceDraw(error: Self.mismatch) }
        let drawn = await renderer.drawStreamFrame(camera: camera, overlays: overlays, fullRange: fullRange,
                                                   into: surface, resolutionScale: resolutionScale, tileArrived: tileArrived)
        return SourceDraw(error: drawn.error.map { .renderer($0) }, controls: drawn.controls, transform: drawn.transform)
    }

    /// Zero copy for the engine's canvas: draws or uploads `drawing` into ``encoderSurface``.
    func drawEngineIntoEncoderSurface(_ surface: DMABufPlanes, _ drawing: EngineDrawing,
                                      isolation: isolated (any Actor)? = #isolation) async -> SourceDraw {
        guard case .engine(let engineCanvas) = canvas else { return SourceDraw(error: Self.mismatch) }
        let drawn = await engineCanvas.drawStreamFrame(drawing, fullRange: fullRange, into: surface,
                                                        resolutionScale: resolutionScale)
        return SourceDraw(error: drawn.error.map { .engineContent($0) }, dmaBufMapped: drawn.dmaBufMapped)
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
