import Foundation

/// A camera seen through a viewport of `width` x `height` pixels: the matrices that draw it and
/// the conversions between screen pixels and geographic coordinates.
///
/// Screen coordinates have their origin at the top-left corner, x to the right and y down, in
/// pixels. The projection follows MapLibre's conventions (field of view, near and far planes) so
/// that the same camera frames the same area in both renderers.
public struct MapTransform: Sendable {
    /// The camera, clamped into range.
    public let camera: Camera
    /// Viewport width in pixels, at least 1.
    public let width: Int
    /// Viewport height in pixels, at least 1.
    public let height: Int

    /// MapLibre's vertical field of view, about 36.87 degrees.
    static let fieldOfView = 0.6435011087932844
    /// Pixels a tile spans at its own zoom level.
    package static let tileSize = 512.0

    /// World width in pixels at this zoom.
    package let worldSize: Double
    /// The camera centre in world pixels.
    let centerWorld: SIMD2<Double>
    /// Distance from the eye to the centre of the screen on the ground, in pixels.
    package let cameraToCenterDistance: Double
    /// World pixels (z in pixels) -> clip space, top row of the image at framebuffer row 0.
    package let worldMatrix: Matrix4
    private let inverseWorldMatrix: Matrix4
    /// Pixels per metre of height at the centre latitude, for extrusions.
    package let pixelsPerMeter: Double

    /// Makes the transform; the camera is clamped into range and the size to at least 1x1.
    public init(camera: Camera, width: Int, height: Int) {
        let camera = camera.clamped
        self.camera = camera
        self.width = max(width, 1)
        self.height = max(height, 1)
        worldSize = Self.tileSize * pow(2, camera.zoom)
        centerWorld = WebMercator.project(camera.center) * worldSize
        let halfFieldOfView = Self.fieldOfView / 2
        cameraToCenterDistance = 0.5 * Double(self.height) / tan(halfFieldOfView)
        pixelsPerMeter = worldSize / (2 * .pi * WebMercator.earthRadius * cos(camera.center.latitude * .pi / 180))

        let pitch = camera.pitch * .pi / 180
        // How far past the centre the ray through the top edge meets the ground, then its depth.
        let topHalfSurfaceDistance = sin(halfFieldOfView) * cameraToCenterDistance / sin(.pi / 2 - pitch - halfFieldOfView)
        let furthestDistance = cos(.pi / 2 - pitch) * topHalfSurfaceDistance + cameraToCenterDistance
        let far = furthestDistance * 1.01
        let near = Double(self.height) / 50

        let projection = Matrix4.scale(1, -1, 1) // image top at framebuffer row 0: no flip on readback
            * Matrix4.perspective(fieldOfView: Self.fieldOfView, aspect: Double(self.width) / Double(self.height),
                                  near: near, far: far)
        let view = Matrix4.translation(0, 0, -cameraToCenterDistance)
            * Matrix4.rotationX(-pitch)
            * Matrix4.scale(1, -1, 1)
            * Matrix4.rotationZ(-camera.bearing * .pi / 180)
            * Matrix4.translation(-centerWorld.x, -centerWorld.y, 0)
        worldMatrix = projection * view
        inverseWorldMatrix = worldMatrix.inverted ?? .identity
    }

    // MARK: Screen and geography

    /// The screen point of `coordinate` on the ground, or nil when it is behind the camera.
    public func screenPoint(for coordinate: GeoCoordinate) -> SIMD2<Double>? {
        screenPoint(forWorld: WebMercator.project(coordinate) * worldSize)
    }

    /// The geographic point on the ground under `screenPoint`, or nil above the horizon.
    public func coordinate(at screenPoint: SIMD2<Double>) -> GeoCoordinate? {
        groundPoint(at: screenPoint).map { WebMercator.unproject($0 / worldSize) }
    }

    /// The screen point of a world-pixel position on the ground.
    func screenPoint(forWorld world: SIMD2<Double>, height: Double = 0) -> SIMD2<Double>? {
        let clip = worldMatrix.transform(SIMD4(world.x, world.y, height, 1))
        guard clip.w > 1e-9 else { return nil }
        return SIMD2((clip.x / clip.w + 1) / 2 * Double(width), (clip.y / clip.w + 1) / 2 * Double(self.height))
    }

    /// The world-pixel position on the ground under a screen point, or nil above the horizon.
    func groundPoint(at screenPoint: SIMD2<Double>) -> SIMD2<Double>? {
        let x = screenPoint.x / Double(width) * 2 - 1
        let y = screenPoint.y / Double(height) * 2 - 1
        let nearPoint = inverseWorldMatrix.transform(SIMD4(x, y, -1, 1))
        let farPoint = inverseWorldMatrix.transform(SIMD4(x, y, 1, 1))
        let a = SIMD3(nearPoint.x, nearPoint.y, nearPoint.z) / nearPoint.w
        let b = SIMD3(farPoint.x, farPoint.y, farPoint.z) / farPoint.w
        let dz = b.z - a.z
        guard abs(dz) > 1e-12 else { return nil }
        let t = -a.z / dz
        guard t >= 0 else { return nil }
        let hit = a + (b - a) * t
        return SIMD2(hit.x, hit.y)
    }

    // MARK: Tiles

    /// Clip-space matrix for geometry in the tile units (`extent` per side) of `tile`; z is in
    /// metres, for extrusions.
    package func tileMatrix(for tile: TileID, extent: Int) -> Matrix4 {
        let tileWorldSize = worldSize / Double(1 << tile.z)
        let scale = tileWorldSize / Double(extent)
        return worldMatrix
            * Matrix4.translation(Double(tile.x) * tileWorldSize, Double(tile.y) * tileWorldSize, 0)
            * Matrix4.scale(scale, scale, pixelsPerMeter)
    }

    /// Tile units of `tile` per screen pixel at the centre of the view.
    package func tileUnitsPerPixel(for tile: TileID, extent: Int) -> Double {
        Double(extent) / (worldSize / Double(1 << tile.z))
    }

    /// The ground area the viewport shows, as world pixels of its four corners (top-left,
    /// top-right, bottom-right, bottom-left).
    package var visibleGroundQuad: GroundQuad {
        let w = Double(width), h = Double(height)
        // Above-horizon corners cannot happen at pitch <= 60; the centre is the safe fallback.
        return GroundQuad(groundPoint(at: SIMD2(0, 0)) ?? centerWorld, groundPoint(at: SIMD2(w, 0)) ?? centerWorld,
                          groundPoint(at: SIMD2(w, h)) ?? centerWorld, groundPoint(at: SIMD2(0, h)) ?? centerWorld)
    }

    /// The tiles at `zoom` that the viewport shows, nearest the centre first, at most `limit`.
    package func coveringTiles(zoom: Int, limit: Int = 64) -> [TileID] {
        var tiles: [TileID] = []
        var scratch: [(TileID, Double)] = []
        coveringTiles(zoom: zoom, limit: limit, into: &tiles, scratch: &scratch)
        return tiles
    }

    /// ``coveringTiles(zoom:limit:)`` into `tiles`, reusing its storage and `scratch`'s, so a
    /// renderer that keeps both between frames allocates nothing here.
    package func coveringTiles(zoom: Int, limit: Int = 64, into tiles: inout [TileID], scratch: inout [(TileID, Double)]) {
        tiles.removeAll(keepingCapacity: true)
        scratch.removeAll(keepingCapacity: true)
        let zoom = max(0, min(zoom, 24))
        let tilesAcross = Double(1 << zoom)
        let toTile = tilesAcross / worldSize
        let quad = visibleGroundQuad.scaled(by: toTile)
        let (low, high) = quad.bounds
        let minX = max(0, Int(floor(low.x))), maxX = min(Int(tilesAcross) - 1, Int(floor(high.x)))
        let minY = max(0, Int(floor(low.y))), maxY = min(Int(tilesAcross) - 1, Int(floor(high.y)))
        guard minX <= maxX, minY <= maxY else { return }
        let center = centerWorld * toTile
        for x in minX...maxX {
            for y in minY...maxY where quad.intersectsUnitSquare(at: SIMD2(Double(x), Double(y))) {
                let dx = Double(x) + 0.5 - center.x, dy = Double(y) + 0.5 - center.y
                scratch.append((TileID(z: zoom, x: x, y: y), dx * dx + dy * dy))
            }
        }
        scratch.sort { $0.1 < $1.1 }
        for (tile, _) in scratch.prefix(limit) { tiles.append(tile) }
    }
}

/// Four corners of the ground a view shows, in order around the quadrilateral; a value with no
/// heap storage, because it is made every frame.
package struct GroundQuad: Sendable {
    package var corners: (SIMD2<Double>, SIMD2<Double>, SIMD2<Double>, SIMD2<Double>)

    init(_ a: SIMD2<Double>, _ b: SIMD2<Double>, _ c: SIMD2<Double>, _ d: SIMD2<Double>) {
        corners = (a, b, c, d)
    }

    subscript(index: Int) -> SIMD2<Double> {
        switch index & 3 {
        case 0: corners.0
        case 1: corners.1
        case 2: corners.2
        default: corners.3
        }
    }

    func scaled(by factor: Double) -> GroundQuad {
        GroundQuad(corners.0 * factor, corners.1 * factor, corners.2 * factor, corners.3 * factor)
    }

    /// The smallest and largest x and y of the corners.
    var bounds: (low: SIMD2<Double>, high: SIMD2<Double>) {
        let low = pointwiseMin(pointwiseMin(corners.0, corners.1), pointwiseMin(corners.2, corners.3))
        let high = pointwiseMax(pointwiseMax(corners.0, corners.1), pointwiseMax(corners.2, corners.3))
        return (low, high)
    }

    /// Separating-axis test against the unit square with its top-left corner at `origin`.
    func intersectsUnitSquare(at origin: SIMD2<Double>) -> Bool {
        let (low, high) = bounds
        // The square's own axes: the quad's bounding box.
        if high.x < origin.x || low.x > origin.x + 1 || high.y < origin.y || low.y > origin.y + 1 { return false }
        // The quad's edge normals.
        for index in 0..<4 {
            let edge = self[index + 1] - self[index]
            let axis = SIMD2(-edge.y, edge.x)
            if axis == .zero { continue }
            var quadMin = Double.infinity, quadMax = -Double.infinity
            for corner in 0..<4 {
                let value = (self[corner] * axis).sum()
                quadMin = min(quadMin, value)
                quadMax = max(quadMax, value)
            }
            // The square's corners project to base, base + ax, base + ay and base + ax + ay.
            let base = (origin * axis).sum()
            let squareMin = base + min(0, axis.x) + min(0, axis.y)
            let squareMax = base + max(0, axis.x) + max(0, axis.y)
            if squareMax < quadMin || quadMax < squareMin { return false }
        }
        return true
    }
}
