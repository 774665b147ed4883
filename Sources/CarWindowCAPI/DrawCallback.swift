import CCarWindow
import CarWindow

/// The engine's draw callback with its user data (CARWINDOW_CONTENT_GL). The header makes the
/// engine promise that both may be used from the session's render thread, which is what makes
/// this Sendable.
struct DrawCallback: @unchecked Sendable {
    let function: carwindow_draw_callback
    let userData: UnsafeMutableRawPointer?

    /// The session's draw: the C callback with the frame, marked as a library callback so an
    /// API call from it fails instead of waiting for the render thread it blocks.
    var draw: EngineGLDraw {
        { [self] frame throws(DrawCallbackRefused) in
            var picture = carwindow_gl_frame(framebuffer: frame.framebuffer, width: UInt32(clamping: frame.width),
                                             height: UInt32(clamping: frame.height), scale: frame.scale,
                                             picture_number: frame.pictureNumber)
            let result = CallingThread.insideLibraryCallback { function(&picture, userData) }
            if result != 0 { throw DrawCallbackRefused(result: result) }
        }
    }
}

/// What the engine's draw callback returned when it did not draw the picture.
struct DrawCallbackRefused: Error, CustomStringConvertible {
    let result: Int32
    var description: String {
        "on_draw returned \(result) (not 0), so the picture was skipped and the head unit keeps the last one"
    }
}
