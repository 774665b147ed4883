import Foundation

/// A 4x4 matrix of doubles in column-major order, as OpenGL takes it.
///
/// Camera maths stays in doubles (world coordinates at zoom 18 exceed float precision); only
/// the final per-tile matrices are narrowed to floats for the GPU.
package struct Matrix4: Equatable {
    var m: (Double, Double, Double, Double, Double, Double, Double, Double,
            Double, Double, Double, Double, Double, Double, Double, Double)

    package static let identity = Matrix4(m: (1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1))

    package static func == (a: Matrix4, b: Matrix4) -> Bool { a.array == b.array }

    var array: [Double] {
        withUnsafeBytes(of: m) { Array($0.bindMemory(to: Double.self)) }
    }

    package subscript(column: Int, row: Int) -> Double {
        get { withUnsafeBytes(of: m) { $0.bindMemory(to: Double.self)[column * 4 + row] } }
        set { withUnsafeMutableBytes(of: &m) { $0.bindMemory(to: Double.self)[column * 4 + row] = newValue } }
    }

    package static func * (a: Matrix4, b: Matrix4) -> Matrix4 {
        var result = Matrix4.identity
        for column in 0..<4 {
            for row in 0..<4 {
                var sum = 0.0
                for k in 0..<4 { sum += a[k, row] * b[column, k] }
                result[column, row] = sum
            }
        }
        return result
    }

    /// Transforms `(x, y, z, w)`.
    package func transform(_ v: SIMD4<Double>) -> SIMD4<Double> {
        var out = SIMD4<Double>()
        for row in 0..<4 {
            out[row] = self[0, row] * v.x + self[1, row] * v.y + self[2, row] * v.z + self[3, row] * v.w
        }
        return out
    }

    package static func translation(_ x: Double, _ y: Double, _ z: Double) -> Matrix4 {
        var r = identity
        r[3, 0] = x; r[3, 1] = y; r[3, 2] = z
        return r
    }

    package static func scale(_ x: Double, _ y: Double, _ z: Double) -> Matrix4 {
        var r = identity
        r[0, 0] = x; r[1, 1] = y; r[2, 2] = z
        return r
    }

    static func rotationX(_ angle: Double) -> Matrix4 {
        var r = identity
        let c = cos(angle), s = sin(angle)
        r[1, 1] = c; r[1, 2] = s; r[2, 1] = -s; r[2, 2] = c
        return r
    }

    package static func rotationZ(_ angle: Double) -> Matrix4 {
        var r = identity
        let c = cos(angle), s = sin(angle)
        r[0, 0] = c; r[0, 1] = s; r[1, 0] = -s; r[1, 1] = c
        return r
    }

    static func perspective(fieldOfView: Double, aspect: Double, near: Double, far: Double) -> Matrix4 {
        let f = 1 / tan(fieldOfView / 2)
        var r = Matrix4(m: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        r[0, 0] = f / aspect
        r[1, 1] = f
        r[2, 2] = (far + near) / (near - far)
        r[2, 3] = -1
        r[3, 2] = 2 * far * near / (near - far)
        return r
    }

    /// The inverse, or nil for a singular matrix.
    var inverted: Matrix4? {
        // Fixed-size storage: inverting runs every frame and must not allocate.
        let a = unsafeBitCast(m, to: SIMD16<Double>.self)
        var inv = SIMD16<Double>()
        inv[0] = a[5]*a[10]*a[15] - a[5]*a[11]*a[14] - a[9]*a[6]*a[15] + a[9]*a[7]*a[14] + a[13]*a[6]*a[11] - a[13]*a[7]*a[10]
        inv[4] = -a[4]*a[10]*a[15] + a[4]*a[11]*a[14] + a[8]*a[6]*a[15] - a[8]*a[7]*a[14] - a[12]*a[6]*a[11] + a[12]*a[7]*a[10]
        inv[8] = a[4]*a[9]*a[15] - a[4]*a[11]*a[13] - a[8]*a[5]*a[15] + a[8]*a[7]*a[13] + a[12]*a[5]*a[11] - a[12]*a[7]*a[9]
        inv[12] = -a[4]*a[9]*a[14] + a[4]*a[10]*a[13] + a[8]*a[5]*a[14] - a[8]*a[6]*a[13] - a[12]*a[5]*a[10] + a[12]*a[6]*a[9]
        inv[1] = -a[1]*a[10]*a[15] + a[1]*a[11]*a[14] + a[9]*a[2]*a[15] - a[9]*a[3]*a[14] - a[13]*a[2]*a[11] + a[13]*a[3]*a[10]
        inv[5] = a[0]*a[10]*a[15] - a[0]*a[11]*a[14] - a[8]*a[2]*a[15] + a[8]*a[3]*a[14] + a[12]*a[2]*a[11] - a[12]*a[3]*a[10]
        inv[9] = -a[0]*a[9]*a[15] + a[0]*a[11]*a[13] + a[8]*a[1]*a[15] - a[8]*a[3]*a[13] - a[12]*a[1]*a[11] + a[12]*a[3]*a[9]
        inv[13] = a[0]*a[9]*a[14] - a[0]*a[10]*a[13] - a[8]*a[1]*a[14] + a[8]*a[2]*a[13] + a[12]*a[1]*a[10] - a[12]*a[2]*a[9]
        inv[2] = a[1]*a[6]*a[15] - a[1]*a[7]*a[14] - a[5]*a[2]*a[15] + a[5]*a[3]*a[14] + a[13]*a[2]*a[7] - a[13]*a[3]*a[6]
        inv[6] = -a[0]*a[6]*a[15] + a[0]*a[7]*a[14] + a[4]*a[2]*a[15] - a[4]*a[3]*a[14] - a[12]*a[2]*a[7] + a[12]*a[3]*a[6]
        inv[10] = a[0]*a[5]*a[15] - a[0]*a[7]*a[13] - a[4]*a[1]*a[15] + a[4]*a[3]*a[13] + a[12]*a[1]*a[7] - a[12]*a[3]*a[5]
        inv[14] = -a[0]*a[5]*a[14] + a[0]*a[6]*a[13] + a[4]*a[1]*a[14] - a[4]*a[2]*a[13] - a[12]*a[1]*a[6] + a[12]*a[2]*a[5]
        inv[3] = -a[1]*a[6]*a[11] + a[1]*a[7]*a[10] + a[5]*a[2]*a[11] - a[5]*a[3]*a[10] - a[9]*a[2]*a[7] + a[9]*a[3]*a[6]
        inv[7] = a[0]*a[6]*a[11] - a[0]*a[7]*a[10] - a[4]*a[2]*a[11] + a[4]*a[3]*a[10] + a[8]*a[2]*a[7] - a[8]*a[3]*a[6]
        inv[11] = -a[0]*a[5]*a[11] + a[0]*a[7]*a[9] + a[4]*a[1]*a[11] - a[4]*a[3]*a[9] - a[8]*a[1]*a[7] + a[8]*a[3]*a[5]
        inv[15] = a[0]*a[5]*a[10] - a[0]*a[6]*a[9] - a[4]*a[1]*a[10] + a[4]*a[2]*a[9] + a[8]*a[1]*a[6] - a[8]*a[2]*a[5]
        let determinant = a[0] * inv[0] + a[1] * inv[4] + a[2] * inv[8] + a[3] * inv[12]
        guard determinant != 0, determinant.isFinite else { return nil }
        return Matrix4(m: unsafeBitCast(inv / determinant, to: type(of: m)))
    }

    /// Writes the matrix as floats into `buffer`, which must hold 16, without allocating.
    package func write(into buffer: UnsafeMutablePointer<Float>) {
        withUnsafeBytes(of: m) { raw in
            let d = raw.bindMemory(to: Double.self)
            for i in 0..<16 { buffer[i] = Float(d[i]) }
        }
    }
}
