// The engine's own drawing inside the map: a highlight of the road ahead of the car's last
// position fix, drawn with the engine's own OpenGL ES shaders as a custom layer below the route,
// so the route line runs over it and the car marker sits on top. It is placed in metres around the
// fix with the matrix the map gives it. (The session moves its car marker on between fixes at the
// car's speed; the highlight reaches as far as the car gets before the next fix.)
import CGLESv2
import CarWindowMap
import Foundation
import Synchronization

final class LaneHighlight: Sendable {
    /// Where the car is: written by the drive, read by the draw on the render thread.
    private let car = Mutex<(coordinate: GeoCoordinate, heading: Double, ahead: Double)?>(nil)
    /// The GL objects, made by the first draw and used by every later one: the render thread's
    /// alone, since the map calls the draw only there.
    private let gl = RenderThreadObjects()

    /// Magenta, easy to find in the head unit's pictures (example.sh counts it).
    static let colour: (red: Float, green: Float, blue: Float) = (1, 0, 1)
    /// The highlight: 16 m wide (the road and its sides, wider than the route line over it),
    /// from 8 m behind the fix to `ahead` metres before it (y 1 stands for that).
    static let corners: [Float] = [-8, -8, 8, -8, 8, 1, -8, 1]

    /// A new fix: the car at `coordinate` with `heading`, covering `ahead` metres until the next.
    func move(to coordinate: GeoCoordinate, heading: Double, ahead: Double) {
        car.withLock { $0 = (coordinate, heading, ahead) }
    }

    /// The layer for ``ProjectionSession/addCustomLayer(_:below:)``.
    var layer: CustomLayer {
        CustomLayer(id: "lane-highlight") { [self] frame in
            guard let car = car.withLock({ $0 }) else { return }
            try gl.prepare()
            // Metres east and north around the car, turned to its heading.
            var matrix = frame.matrix(metresAround: car.coordinate)
            let angle = Float(-car.heading * .pi / 180)
            glUseProgram(gl.program)
            withUnsafeBytes(of: &matrix) {
                glUniformMatrix4fv(gl.matrixLocation, 1, GLboolean(GL_FALSE), $0.baseAddress!.assumingMemoryBound(to: GLfloat.self))
            }
            glUniform2f(gl.rotationLocation, cos(angle), sin(angle))
            glUniform1f(gl.aheadLocation, Float(car.ahead))
            glUniform4f(gl.colourLocation, Self.colour.red, Self.colour.green, Self.colour.blue, 1)
            glBindVertexArray(gl.vertexArray)
            glDrawArrays(GLenum(GL_TRIANGLE_FAN), 0, 4)
        }
    }
}

/// GL names made on the render thread, kept there.
private final class RenderThreadObjects: @unchecked Sendable {
    var program: GLuint = 0, vertexArray: GLuint = 0, buffer: GLuint = 0
    var matrixLocation: GLint = -1, rotationLocation: GLint = -1, aheadLocation: GLint = -1, colourLocation: GLint = -1

    struct ShaderFailure: Error, CustomStringConvertible { var description: String }

    func prepare() throws {
        guard program == 0 else { return }
        let vertex = try compile(GLenum(GL_VERTEX_SHADER), """
            #version 300 es
            layout(location = 0) in vec2 corner;    // metres across and along the car's heading
            uniform mat4 u_matrix;                  // metres east, north, up around the car -> clip
            uniform vec2 u_rotation;                // cos, sin of the heading (clockwise from north)
            uniform float u_ahead;                  // metres the far edge lies ahead
            void main() {
                vec2 along = vec2(corner.x, corner.y > 0.0 ? u_ahead : corner.y);
                vec2 turned = vec2(along.x * u_rotation.x - along.y * u_rotation.y,
                                   along.x * u_rotation.y + along.y * u_rotation.x);
                gl_Position = u_matrix * vec4(turned, 0.0, 1.0);
            }
            """)
        let fragment = try compile(GLenum(GL_FRAGMENT_SHADER), """
            #version 300 es
            precision mediump float;
            uniform vec4 u_colour;
            out vec4 colour;
            void main() { colour = u_colour; }
            """)
        let linked = glCreateProgram()
        glAttachShader(linked, vertex)
        glAttachShader(linked, fragment)
        glLinkProgram(linked)
        glDeleteShader(vertex)
        glDeleteShader(fragment)
        var status: GLint = 0
        glGetProgramiv(linked, GLenum(GL_LINK_STATUS), &status)
        guard status != 0 else { throw ShaderFailure(description: "the lane highlight's program did not link") }
        program = linked
        matrixLocation = glGetUniformLocation(program, "u_matrix")
        rotationLocation = glGetUniformLocation(program, "u_rotation")
        aheadLocation = glGetUniformLocation(program, "u_ahead")
        colourLocation = glGetUniformLocation(program, "u_colour")
        glGenVertexArrays(1, &vertexArray)
        glBindVertexArray(vertexArray)
        glGenBuffers(1, &buffer)
        glBindBuffer(GLenum(GL_ARRAY_BUFFER), buffer)
        LaneHighlight.corners.withUnsafeBytes {
            glBufferData(GLenum(GL_ARRAY_BUFFER), $0.count, $0.baseAddress, GLenum(GL_STATIC_DRAW))
        }
        glEnableVertexAttribArray(0)
        glVertexAttribPointer(0, 2, GLenum(GL_FLOAT), GLboolean(GL_FALSE), 8, nil)
    }

    private func compile(_ type: GLenum, _ source: String) throws -> GLuint {
        let shader = glCreateShader(type)
        source.withCString { text in
            var pointer: UnsafePointer<GLchar>? = text
            glShaderSource(shader, 1, &pointer, nil)
        }
        glCompileShader(shader)
        var status: GLint = 0
        glGetShaderiv(shader, GLenum(GL_COMPILE_STATUS), &status)
        guard status != 0 else { throw ShaderFailure(description: "a lane highlight shader did not compile") }
        return shader
    }
}
