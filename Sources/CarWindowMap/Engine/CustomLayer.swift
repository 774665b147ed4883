import CarWindowGeo
import Foundation

/// What a custom layer's draw gets: the map's framebuffer, bound, and the view's matrices.
///
/// Values are valid during the draw only.
public struct CustomLayerFrame: Sendable {
    /// The GL framebuffer the map draws into (bound when the draw starts).
    public var framebuffer: UInt32
    /// The picture's width in pixels.
    public var width: Int
    /// The picture's height in pixels.
    public var height: Int
    /// The camera the picture is drawn with.
    public var camera: Camera
    /// The view as MapLibre gives it to a custom layer: Web Mercator coordinates (x east and y
    /// south, both 0...1 over the world; z up, in the same units) to clip space, column-major.
    /// In floats, a zoomed-in view jitters by pixels: prefer ``matrix(metresAround:)``.
    public var mercatorMatrix: SIMD16<Float>
    private let transform: MapTransform

    package init(framebuffer: UInt32, transform: MapTransform) {
        self.framebuffer = framebuffer
        self.transform = transform
        width = transform.width
        height = transform.height
        camera = transform.camera
        let size = transform.worldSize
        mercatorMatrix = Self.floats(transform.worldMatrix * .scale(size, size, size))
    }

    /// A matrix for geometry in metres around `origin`: x east, y north, z up, to clip space,
    /// column-major. Near its origin it is exact in floats at every zoom, which is what a 3D
    /// vehicle model or a lane overlay needs. The picture's first row is its top, so triangles
    /// that face the camera wind clockwise in GL's terms: `glFrontFace(GL_CW)` before culling.
    public func matrix(metresAround origin: GeoCoordinate) -> SIMD16<Float> {
        let world = WebMercator.project(origin) * transform.worldSize
        let pixelsPerMetre = transform.worldSize * Self.mercatorUnitsPerMetre(atLatitude: origin.latitude)
        return Self.floats(transform.worldMatrix
            * .translation(world.x, world.y, 0)
            * .scale(pixelsPerMetre, -pixelsPerMetre, pixelsPerMetre))
    }

    /// `coordinate` at `altitude` metres in the units of ``mercatorMatrix``.
    public func mercator(for coordinate: GeoCoordinate, altitude: Double = 0) -> SIMD3<Double> {
        let point = WebMercator.project(coordinate)
        return SIMD3(point.x, point.y, altitude * Self.mercatorUnitsPerMetre(atLatitude: coordinate.latitude))
    }

    /// Where `coordinate` on the ground lies in the picture, in pixels from the top left; nil
    /// when it is behind the camera.
    public func screenPoint(for coordinate: GeoCoordinate) -> SIMD2<Double>? {
        transform.screenPoint(for: coordinate)
    }

    /// Web Mercator units (the world is 1 wide) per metre on the ground at `latitude`.
    private static func mercatorUnitsPerMetre(atLatitude latitude: Double) -> Double {
        let circumference: Double = 2 * Double.pi * WebMercator.earthRadius
        return 1 / (circumference * cos(latitude * Double.pi / 180))
    }

    private static func floats(_ matrix: Matrix4) -> SIMD16<Float> {
        var result = SIMD16<Float>()
        for column in 0..<4 {
            for row in 0..<4 { result[column * 4 + row] = Float(matrix[column, row]) }
        }
        return result
    }
}

/// A custom layer's drawing: called on the render thread with the context current and the
/// map's framebuffer bound, at its place among the style's layers. Throwing leaves the layer out
/// of that picture (logged) and the rest of the map is drawn.
public typealias CustomLayerDraw = @Sendable (CustomLayerFrame) throws -> Void

/// A layer of the map drawn by the engine's own GL, as MapLibre's custom layers are: a 3D
/// vehicle model, a lane-guidance overlay, anything the style cannot say.
///
/// It is drawn in the map's layer order (below the style layer it is added under, or above the
/// style's layers), before the route overlay, the labels, the vehicle marker and the controls.
/// Blending is premultiplied alpha (`GL_ONE, GL_ONE_MINUS_SRC_ALPHA`). Below a style layer, the
/// depth state is that layer's place in the map (its depth range collapsed to one value, tested
/// against the opaque layers above it), so what it draws is flat and those layers hide it; leave
/// the depth and stencil buffers as they are. Above the style's layers nothing of the map tests
/// depth any more: a 3D model may clear the depth buffer and test its own depth there. Never
/// clear the colour: the map below is in it. What the draw changes of GL's state is put back
/// afterwards.
public struct CustomLayer: Sendable {
    /// The layer's id: unique among the custom layers of a map (adding one with the same id
    /// replaces it).
    public var id: String
    /// The drawing.
    public var draw: CustomLayerDraw

    /// A layer `id` drawn by `draw`.
    public init(id: String, draw: @escaping CustomLayerDraw) {
        self.id = id
        self.draw = draw
    }
}
