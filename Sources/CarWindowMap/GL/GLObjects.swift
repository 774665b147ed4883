internal import CGLES

// Thin owners of GL object names. They are not Sendable: they live inside the actor that owns
// them (a MapRenderer, on its context's render thread) and die in its isolated deinit, so
// `glDelete*` runs on the thread where their context is current. GLObjectLedger counts every
// name and makes no GL call for a release anywhere else.

/// A compiled and linked program made from files under shaders/.
final class GLProgram {
    let name: GLuint
    private let context: GLContextID

    /// Builds `vertex` and `fragment` (file names under shaders/) with the shared prelude.
    /// `defines` become `#define NAME` lines before the shader text, for variants of one file.
    /// With `binaries`, a program stored there by an earlier start is linked from its binary,
    /// and one compiled here is stored.
    init(vertex: String, fragment: String, attributes: [String], defines: [String] = [],
         binaries: ProgramBinaries?) throws(GLSetupError) {
        guard let vertexSource = Self.source(of: vertex, defines: defines) else { throw .shaderMissing(name: vertex) }
        guard let fragmentSource = Self.source(of: fragment, defines: defines) else { throw .shaderMissing(name: fragment) }
        let key = binaries?.key(vertex: vertexSource, fragment: fragmentSource, attributes: attributes)
        if let binaries, let key {
            let program = glCreateProgram()
            if Self.link(program, from: binaries, key: key) {
                name = program
                context = GLObjectLedger.made(.program)
                return
            }
            glDeleteProgram(program)
        }
        let vertexShader = try Self.compile(GLenum(GL_VERTEX_SHADER), file: vertex, source: vertexSource)
        defer { glDeleteShader(vertexShader) }
        let fragmentShader = try Self.compile(GLenum(GL_FRAGMENT_SHADER), file: fragment, source: fragmentSource)
        defer { glDeleteShader(fragmentShader) }
        let program = glCreateProgram()
        if binaries != nil {
            glProgramParameteri(program, GLenum(GL_PROGRAM_BINARY_RETRIEVABLE_HINT), GL_TRUE)
        }
        glAttachShader(program, vertexShader)
        glAttachShader(program, fragmentShader)
        for (index, attribute) in attributes.enumerated() {
            glBindAttribLocation(program, GLuint(index), attribute)
        }
        glLinkProgram(program)
        var linked: GLint = 0
        glGetProgramiv(program, GLenum(GL_LINK_STATUS), &linked)
        guard linked == GL_TRUE else {
            let log = Self.infoLog(program, glGetProgramiv, glGetProgramInfoLog)
            glDeleteProgram(program)
            throw .programLinkFailed(vertex: vertex, fragment: fragment, log: log)
        }
        if let binaries, let key { Self.store(program, in: binaries, key: key) }
        name = program
        context = GLObjectLedger.made(.program)
    }

    deinit {
        GLObjectLedger.release(.program, madeIn: context) { glDeleteProgram(name) }
    }

    /// Asks GL where `uniform` lives; -1 when the program has no such uniform (setting -1 is
    /// a no-op). A string lookup in the driver: made once per program, when it links (see
    /// ``UniformLocations``), never per frame.
    func uniformLocation(_ uniform: String) -> GLint {
        glGetUniformLocation(name, uniform)
    }

    static func source(of file: String, defines: [String] = []) -> String? {
        guard let body = EmbeddedShaders.sources[file], let prelude = EmbeddedShaders.sources["prelude.glsl"] else {
            return nil
        }
        let definitions = defines.map { "#define \($0)\n" }.joined()
        return "#version 300 es\n" + definitions + prelude + "\n#line 1\n" + body
    }

    private static func compile(_ type: GLenum, file: String, source: String) throws(GLSetupError) -> GLuint {
        let shader = glCreateShader(type)
        source.withCString { pointer in
            var pointer: UnsafePointer<GLchar>? = pointer
            glShaderSource(shader, 1, &pointer, nil)
        }
        glCompileShader(shader)
        var compiled: GLint = 0
        glGetShaderiv(shader, GLenum(GL_COMPILE_STATUS), &compiled)
        guard compiled == GL_TRUE else {
            let log = infoLog(shader, glGetShaderiv, glGetShaderInfoLog)
            glDeleteShader(shader)
            throw .shaderCompilationFailed(file: file, log: log)
        }
        return shader
    }

    private static func infoLog(
        _ object: GLuint,
        _ getLength: (GLuint, GLenum, UnsafeMutablePointer<GLint>?) -> Void,
        _ getLog: (GLuint, GLsizei, UnsafeMutablePointer<GLsizei>?, UnsafeMutablePointer<GLchar>?) -> Void
    ) -> String {
        var length: GLint = 0
        getLength(object, GLenum(GL_INFO_LOG_LENGTH), &length)
        guard length > 0 else { return "(no log)" }
        var log = [GLchar](repeating: 0, count: Int(length))
        getLog(object, length, nil, &log)
        return String(decoding: log.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A buffer object holding vertices or indices.
final class GLBuffer {
    let name: GLuint
    let target: GLenum
    private let context: GLContextID
    private(set) var byteCount = 0

    init(target: GLenum) {
        var name: GLuint = 0
        glGenBuffers(1, &name)
        self.name = name
        self.target = target
        context = GLObjectLedger.made(.buffer)
    }

    deinit {
        var name = self.name
        GLObjectLedger.release(.buffer, madeIn: context) { glDeleteBuffers(1, &name) }
    }

    /// Replaces the contents; keeps the storage when the new data fits, so per-frame uploads of
    /// similar size do not reallocate.
    func upload<T>(_ elements: [T], usage: GLenum = GLenum(GL_STATIC_DRAW)) {
        glBindBuffer(target, name)
        elements.withUnsafeBytes { bytes in
            if bytes.count <= byteCount && usage == GLenum(GL_DYNAMIC_DRAW) {
                glBufferSubData(target, 0, bytes.count, bytes.baseAddress)
            } else {
                glBufferData(target, max(bytes.count, 1), bytes.baseAddress, usage)
                byteCount = bytes.count
            }
        }
    }
}

/// A vertex array object.
final class GLVertexArray {
    let name: GLuint
    private let context: GLContextID

    init() {
        var name: GLuint = 0
        glGenVertexArrays(1, &name)
        self.name = name
        context = GLObjectLedger.made(.vertexArray)
    }

    deinit {
        var name = self.name
        GLObjectLedger.release(.vertexArray, madeIn: context) { glDeleteVertexArrays(1, &name) }
    }

    /// Declares float attribute `index` of `components` at `offset` in a vertex of `stride` bytes.
    func attribute(_ index: GLuint, components: GLint, type: GLenum = GLenum(GL_FLOAT), normalized: Bool = false,
                   stride: Int, offset: Int) {
        glEnableVertexAttribArray(index)
        glVertexAttribPointer(index, components, type, GLboolean(normalized ? GL_TRUE : GL_FALSE),
                              GLsizei(stride), UnsafeRawPointer(bitPattern: offset))
    }
}

/// A 2D texture.
final class GLTexture {
    let name: GLuint
    private let context: GLContextID
    private(set) var width = 0
    private(set) var height = 0

    init() {
        var name: GLuint = 0
        glGenTextures(1, &name)
        self.name = name
        context = GLObjectLedger.made(.texture)
    }

    deinit {
        var name = self.name
        GLObjectLedger.release(.texture, madeIn: context) { glDeleteTextures(1, &name) }
    }

    /// (Re)allocates storage; contents undefined.
    func allocate(width: Int, height: Int, internalFormat: GLenum, format: GLenum, type: GLenum,
                  filter: GLenum = GLenum(GL_LINEAR), pixels: UnsafeRawPointer? = nil) {
        glBindTexture(GLenum(GL_TEXTURE_2D), name)
        glPixelStorei(GLenum(GL_UNPACK_ALIGNMENT), 1)
        glTexImage2D(GLenum(GL_TEXTURE_2D), 0, GLint(internalFormat), GLsizei(width), GLsizei(height), 0,
                     format, type, pixels)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), GLint(filter))
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), GLint(filter))
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_S), GL_CLAMP_TO_EDGE)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_T), GL_CLAMP_TO_EDGE)
        self.width = width
        self.height = height
    }
}

/// A framebuffer with an RGBA8 colour texture and a depth-stencil renderbuffer, of any size.
final class GLRenderTarget {
    let framebuffer: GLuint
    let color = GLTexture()
    private let depthStencil: GLuint
    private let context: GLContextID
    private(set) var width = 0
    private(set) var height = 0

    init(width: Int, height: Int) throws(GLSetupError) {
        var name: GLuint = 0
        glGenFramebuffers(1, &name)
        framebuffer = name
        glGenRenderbuffers(1, &name)
        depthStencil = name
        context = GLObjectLedger.made(.framebuffer)
        _ = GLObjectLedger.made(.renderbuffer)
        try resize(width: width, height: height)
    }

    deinit {
        var framebuffer = framebuffer, depthStencil = depthStencil
        GLObjectLedger.release(.framebuffer, madeIn: context) { glDeleteFramebuffers(1, &framebuffer) }
        GLObjectLedger.release(.renderbuffer, madeIn: context) { glDeleteRenderbuffers(1, &depthStencil) }
    }

    func resize(width: Int, height: Int) throws(GLSetupError) {
        var maxSize: GLint = 0
        glGetIntegerv(GLenum(GL_MAX_RENDERBUFFER_SIZE), &maxSize)
        guard width > 0, height > 0, width <= Int(maxSize), height <= Int(maxSize) else {
            throw .renderTargetSizeOutOfRange(width: width, height: height, maximum: Int(maxSize))
        }
        color.allocate(width: width, height: height, internalFormat: GLenum(GL_RGBA8), format: GLenum(GL_RGBA),
                       type: GLenum(GL_UNSIGNED_BYTE))
        glBindRenderbuffer(GLenum(GL_RENDERBUFFER), depthStencil)
        glRenderbufferStorage(GLenum(GL_RENDERBUFFER), GLenum(GL_DEPTH24_STENCIL8), GLsizei(width), GLsizei(height))
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
        glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), color.name, 0)
        glFramebufferRenderbuffer(GLenum(GL_FRAMEBUFFER), GLenum(GL_DEPTH_STENCIL_ATTACHMENT), GLenum(GL_RENDERBUFFER),
                                  depthStencil)
        let status = glCheckFramebufferStatus(GLenum(GL_FRAMEBUFFER))
        guard status == GLenum(GL_FRAMEBUFFER_COMPLETE) else {
            throw .framebufferIncomplete(width: width, height: height, status: UInt32(status))
        }
        self.width = width
        self.height = height
    }
}

/// Reads a string from glGetString.
func glString(_ name: Int32) -> String {
    guard let pointer = glGetString(GLenum(name)) else { return "unknown" }
    return String(cString: pointer)
}
