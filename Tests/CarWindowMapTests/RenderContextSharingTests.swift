import CEGL
import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowGeo
@testable import CarWindowStyle
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowTestSupport

/// Render contexts come and go while others keep drawing: sessions for several screens, tests
/// one after another. They share the process's EGL display, which must stay initialised until
/// the last of them ends.
@Suite(.serialized) struct RenderContextSharingTests {
    static func isInitialised(_ display: EGLDisplayHandle) -> Bool {
        eglQueryString(display.raw, EGL_EXTENSIONS) != nil
    }

    @Test func endingOneContextLeavesTheSharedDisplayToTheOthers() async throws {
        let survivor = try await RenderContext()
        var leaving: RenderContext? = try await RenderContext()
        if let leaving { #expect(leaving.display.raw == survivor.display.raw, "one display per platform") }
        await leaving?.shutdown()
        leaving = nil  // its EGL objects go with it
        #expect(Self.isInitialised(survivor.display), "the display was terminated under a live context")

        // The survivor still draws, and a new context can still be made beside it.
        let (context, renderer) = try await makeRenderer(width: 64, height: 48)
        _ = await renderer.renderWhenLoaded()
        let pixels = await renderer.readPixels().pixels
        #expect(pixels.contains { $0 != pixels[0] }, "a map, not a blank")
        await context.shutdown()
        await survivor.shutdown()
    }
}
