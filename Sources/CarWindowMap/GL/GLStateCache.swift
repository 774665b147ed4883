internal import CGLES

/// How many GL state changes a ``GLStateCache`` was asked for: those it issued and those it
/// skipped because GL already had the value.
package struct GLStateCounts: Sendable, Equatable, CustomStringConvertible {
    /// State calls made.
    package var issued = 0
    /// Requests that set what was already set, answered without a GL call.
    package var skipped = 0

    package init(issued: Int = 0, skipped: Int = 0) {
        self.issued = issued
        self.skipped = skipped
    }

    package var description: String { "\(issued) state changes issued, \(skipped) skipped" }
}

/// The GL state a map's draw path sets, as it last set it, so that setting a value GL already
/// has costs no call: the drawers set what each layer needs without knowing what the layer
/// before left behind.
///
/// Each value starts unknown, and ``invalidate()`` makes them unknown again: at the start of
/// each frame, since the NV12 converter, other maps sharing the context and anything else may
/// have changed GL in between, and after code in a frame that changes GL without it (uploading a
/// texture binds it). An unknown value is always set.
///
/// Vertex arrays are not cached: each draw binds its own. A stale vertex array binding does not
/// draw a wrong picture but reads vertices that are not there (or takes another array's index
/// buffer at the next index upload), and crashes inside the driver; binding each time costs
/// a few calls a frame.
///
/// Not Sendable: it describes the context current on the render thread, and lives in the
/// renderer that draws there.
final class GLStateCache {
    private struct StencilFunction: Equatable {
        var function: GLenum, reference: GLint, mask: GLuint
    }

    private struct StencilOperation: Equatable {
        var stencilFail: GLenum, depthFail: GLenum, pass: GLenum
    }

    private struct BlendFunction: Equatable {
        var source: GLenum, destination: GLenum
    }

    private struct Viewport: Equatable {
        var x: GLint, y: GLint, width: GLsizei, height: GLsizei
    }

    /// Changes issued and skipped since ``resetCounts()``.
    private(set) var counts = GLStateCounts()
    /// When set, each skip first reads GL's own value back and records a disagreement in
    /// ``staleSkips``: for tests that prove no code path leaves the cache stale. It costs a
    /// GL round trip per skip, so frames never run with it.
    var verifiesSkips = false
    /// What GL had where the cache skipped a change, described; empty unless ``verifiesSkips``.
    private(set) var staleSkips: [String] = []

    private var depthTest: Bool?
    private var stencilTest: Bool?
    private var blend: Bool?
    private var cullFace: Bool?
    private var depthMask: Bool?
    private var depthFunction: GLenum?
    private var depthRange: SIMD2<Float>?
    private var stencilFunction: StencilFunction?
    private var stencilOperation: StencilOperation?
    private var stencilMask: GLuint?
    private var blendFunction: BlendFunction?
    private var colorMask: Bool?
    private var cullFaceMode: GLenum?
    private var lineWidth: Float?
    private var program: GLuint?
    private var activeTextureUnit: GLenum?
    /// The 2D texture bound on each unit the draw path uses (the sheets and the glyph atlas
    /// all go on unit 0).
    private var boundTextures: [GLuint?] = [nil, nil]
    private var framebuffer: GLuint?
    private var viewport: Viewport?

    /// Forgets every value: the next request for each is issued.
    func invalidate() {
        depthTest = nil
        stencilTest = nil
        blend = nil
        cullFace = nil
        depthMask = nil
        depthFunction = nil
        depthRange = nil
        stencilFunction = nil
        stencilOperation = nil
        stencilMask = nil
        blendFunction = nil
        colorMask = nil
        cullFaceMode = nil
        lineWidth = nil
        program = nil
        activeTextureUnit = nil
        for unit in boundTextures.indices { boundTextures[unit] = nil }
        framebuffer = nil
        viewport = nil
    }

    /// Forgets the bound textures: allocating a texture binds it on the active unit.
    func forgetTextures() {
        for unit in boundTextures.indices { boundTextures[unit] = nil }
    }

    /// Starts counting from zero.
    func resetCounts() {
        counts = GLStateCounts()
    }

    // MARK: Capabilities

    func setDepthTest(_ enabled: Bool) { setCapability(GL_DEPTH_TEST, enabled, &depthTest) }
    func setStencilTest(_ enabled: Bool) { setCapability(GL_STENCIL_TEST, enabled, &stencilTest) }
    func setBlend(_ enabled: Bool) { setCapability(GL_BLEND, enabled, &blend) }
    func setCullFace(_ enabled: Bool) { setCapability(GL_CULL_FACE, enabled, &cullFace) }

    // MARK: Depth

    func setDepthMask(_ writes: Bool) {
        change(&depthMask, to: writes, "depth mask") {
            glDepthMask(GLboolean(writes ? GL_TRUE : GL_FALSE))
        } actual: {
            var value: GLboolean = 0
            glGetBooleanv(GLenum(GL_DEPTH_WRITEMASK), &value)
            return value != 0
        }
    }

    func setDepthFunction(_ function: Int32) {
        change(&depthFunction, to: GLenum(function), "depth function") {
            glDepthFunc(GLenum(function))
        } actual: {
            GLenum(Self.integer(GL_DEPTH_FUNC))
        }
    }

    func setDepthRange(near: Float, far: Float) {
        change(&depthRange, to: SIMD2(near, far), "depth range") {
            glDepthRangef(near, far)
        } actual: {
            var range: (GLfloat, GLfloat) = (0, 0)
            withUnsafeMutablePointer(to: &range) {
                $0.withMemoryRebound(to: GLfloat.self, capacity: 2) { glGetFloatv(GLenum(GL_DEPTH_RANGE), $0) }
            }
            return SIMD2(range.0, range.1)
        }
    }

    // MARK: Stencil

    func setStencilFunction(_ function: Int32, reference: GLint, mask: GLuint) {
        let wanted = StencilFunction(function: GLenum(function), reference: reference, mask: mask)
        change(&stencilFunction, to: wanted, "stencil function") {
            glStencilFunc(GLenum(function), reference, mask)
        } actual: {
            StencilFunction(function: GLenum(Self.integer(GL_STENCIL_FUNC)), reference: Self.integer(GL_STENCIL_REF),
                            mask: GLuint(bitPattern: Self.integer(GL_STENCIL_VALUE_MASK)) & 0xFF)
        }
    }

    func setStencilOperation(stencilFail: Int32, depthFail: Int32, pass: Int32) {
        let wanted = StencilOperation(stencilFail: GLenum(stencilFail), depthFail: GLenum(depthFail), pass: GLenum(pass))
        change(&stencilOperation, to: wanted, "stencil operation") {
            glStencilOp(GLenum(stencilFail), GLenum(depthFail), GLenum(pass))
        } actual: {
            StencilOperation(stencilFail: GLenum(Self.integer(GL_STENCIL_FAIL)),
                             depthFail: GLenum(Self.integer(GL_STENCIL_PASS_DEPTH_FAIL)),
                             pass: GLenum(Self.integer(GL_STENCIL_PASS_DEPTH_PASS)))
        }
    }

    func setStencilMask(_ mask: GLuint) {
        change(&stencilMask, to: mask, "stencil mask") {
            glStencilMask(mask)
        } actual: {
            GLuint(bitPattern: Self.integer(GL_STENCIL_WRITEMASK)) & 0xFF
        }
    }

    // MARK: Colour

    func setBlendFunction(source: Int32, destination: Int32) {
        let wanted = BlendFunction(source: GLenum(source), destination: GLenum(destination))
        change(&blendFunction, to: wanted, "blend function") {
            glBlendFunc(GLenum(source), GLenum(destination))
        } actual: {
            BlendFunction(source: GLenum(Self.integer(GL_BLEND_SRC_RGB)), destination: GLenum(Self.integer(GL_BLEND_DST_RGB)))
        }
    }

    /// Whether colour is written at all: the draw path writes all channels or none.
    func setColorMask(_ writes: Bool) {
        change(&colorMask, to: writes, "colour mask") {
            let flag = GLboolean(writes ? GL_TRUE : GL_FALSE)
            glColorMask(flag, flag, flag, flag)
        } actual: {
            var mask: (GLboolean, GLboolean, GLboolean, GLboolean) = (0, 0, 0, 0)
            withUnsafeMutablePointer(to: &mask) {
                $0.withMemoryRebound(to: GLboolean.self, capacity: 4) { glGetBooleanv(GLenum(GL_COLOR_WRITEMASK), $0) }
            }
            return mask.0 != 0 && mask.1 != 0 && mask.2 != 0 && mask.3 != 0
        }
    }

    // MARK: Rasterization

    func setCullFaceMode(_ mode: Int32) {
        change(&cullFaceMode, to: GLenum(mode), "cull face mode") {
            glCullFace(GLenum(mode))
        } actual: {
            GLenum(Self.integer(GL_CULL_FACE_MODE))
        }
    }

    func setLineWidth(_ width: Float) {
        change(&lineWidth, to: width, "line width") {
            glLineWidth(width)
        } actual: {
            var value: GLfloat = 0
            glGetFloatv(GLenum(GL_LINE_WIDTH), &value)
            return value
        }
    }

    func setViewport(x: GLint, y: GLint, width: Int, height: Int) {
        let wanted = Viewport(x: x, y: y, width: GLsizei(width), height: GLsizei(height))
        change(&viewport, to: wanted, "viewport") {
            glViewport(x, y, GLsizei(width), GLsizei(height))
        } actual: {
            var box: (GLint, GLint, GLint, GLint) = (0, 0, 0, 0)
            withUnsafeMutablePointer(to: &box) {
                $0.withMemoryRebound(to: GLint.self, capacity: 4) { glGetIntegerv(GLenum(GL_VIEWPORT), $0) }
            }
            return Viewport(x: box.0, y: box.1, width: box.2, height: box.3)
        }
    }

    // MARK: Bindings

    func bindFramebuffer(_ name: GLuint) {
        change(&framebuffer, to: name, "framebuffer") {
            glBindFramebuffer(GLenum(GL_FRAMEBUFFER), name)
        } actual: {
            GLuint(Self.integer(GL_FRAMEBUFFER_BINDING))
        }
    }

    func useProgram(_ name: GLuint) {
        change(&program, to: name, "program") {
            glUseProgram(name)
        } actual: {
            GLuint(Self.integer(GL_CURRENT_PROGRAM))
        }
    }

    /// Binds `name` as the 2D texture of texture unit `unit` (0 or 1), making that unit active.
    func bindTexture2D(_ name: GLuint, unit: Int) {
        let unitName = GLenum(GL_TEXTURE0) + GLenum(unit)
        change(&activeTextureUnit, to: unitName, "active texture unit") {
            glActiveTexture(unitName)
        } actual: {
            GLenum(Self.integer(GL_ACTIVE_TEXTURE))
        }
        change(&boundTextures[unit], to: name, "texture of unit \(unit)") {
            glBindTexture(GLenum(GL_TEXTURE_2D), name)
        } actual: {
            GLuint(Self.integer(GL_TEXTURE_BINDING_2D))
        }
    }

    // MARK: Issuing

    private func setCapability(_ capability: Int32, _ enabled: Bool, _ cached: inout Bool?) {
        change(&cached, to: enabled, "capability \(capability)") {
            if enabled { glEnable(GLenum(capability)) } else { glDisable(GLenum(capability)) }
        } actual: {
            glIsEnabled(GLenum(capability)) != 0
        }
    }

    /// Issues `issue` unless `cached` already holds `value`. `what` and `actual` are only
    /// evaluated when verifying a skip, so their closures and strings cost nothing per frame.
    private func change<Value: Equatable>(_ cached: inout Value?, to value: Value, _ what: @autoclosure () -> String,
                                          issue: () -> Void, actual: () -> Value) {
        guard cached != value else {
            counts.skipped += 1
            if verifiesSkips {
                let held = actual()
                if held != value { staleSkips.append("\(what()): cached \(value), GL has \(held)") }
            }
            return
        }
        issue()
        cached = value
        counts.issued += 1
    }

    private static func integer(_ name: Int32) -> GLint {
        var value: GLint = 0
        glGetIntegerv(GLenum(name), &value)
        return value
    }
}
