import CarWindowGeo
import CarWindowVideoCore
import CarWindowMap

/// The first stage of a stream's frame path: draws the session's view with the map renderer, on
/// the renderer's render thread, and hands the pictures on as NV12.
///
/// Pictures are read back through a ring of two slots, so the GPU (or llvmpipe's rasterizer
/// threads) finishes one picture while the next is drawn: a draw returns a ``Ticket`` for its
/// picture, and a later draw or ``collect(_:isolation:)`` turns a ticket into a frame. With
/// zero copy (``encoderSurface``) it draws straight into the encoder's input surface instead and
/// nothing is read back.
///
/// One per stream, with the stream's size; owned by the session's actor and used only there.
final class MapFrameSource {
    let renderer: MapRenderer
    let width: Int
    let height: Int
    /// Whether pictures use the full 0-255 range (else the video range).
    let fullRange: Bool
    /// Zero copy: the encoder's input surface, which the renderer draws into (GL on GBM, a
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

    init(renderer: MapRenderer, width: Int, height: Int, fullRange: Bool, encoderSurface: DMABufPlanes?) {
        self.renderer = renderer
        self.width = width
        self.height = height
        self.fullRange = fullRange
        self.encoderSurface = encoderSurface
    }

    /// Draws `camera` and `overlays` and starts reading the picture back, and collects what
    /// `collecting` says, all in one visit to the render thread. The draw's `collected` holds
    /// the collected frame; the ticket is this picture's.
    func draw(camera: Camera, overlays: MapOverlays, collecting: Collecting, tileArrived: @escaping @Sendable () -> Void,
              isolation: isolated (any Actor)? = #isolation) async -> (ticket: Ticket, draw: StreamDraw) {
        let slot = nextSlot
        nextSlot ^= 1
        let collect: (slot: Int, frame: NV12Frame)? = switch collecting {
        case .nothing: nil
        case .earlier(let ticket): (ticket.slot, takeSpare())
        case .thisPicture: (slot, takeSpare())
        }
        let drawn = await renderer.drawStreamFrame(camera: camera, overlays: overlays, fullRange: fullRange, readbackSlot: slot,
                                                   collecting: collect, tileArrived: tileArrived)
        return (Ticket(slot: slot), drawn)
    }

    /// The frame of the picture `ticket` stands for (waiting for the GPU if it is still busy).
    func collect(_ ticket: Ticket, isolation: isolated (any Actor)? = #isolation) async -> Result<NV12Frame, MapRenderError> {
        await renderer.collectStreamFrame(slot: ticket.slot, into: takeSpare())
    }

    /// Zero copy: draws `camera` and `overlays` into ``encoderSurface`` in one visit to the
    /// render thread; the draw's error, if any, says why the picture is not in the surface.
    func drawIntoEncoderSurface(_ surface: DMABufPlanes, camera: Camera, overlays: MapOverlays,
                                tileArrived: @escaping @Sendable () -> Void,
                                isolation: isolated (any Actor)? = #isolation) async -> StreamDraw {
        await renderer.drawStreamFrame(camera: camera, overlays: overlays, fullRange: fullRange, into: surface,
                                       tileArrived: tileArrived)
    }

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
