internal import CGLES
import Foundation
import CarWindowGeo
import CarWindowStyle

/// Draws what sits on the screen rather than on the map: the vehicle marker, the zoom and
/// recenter buttons and the attribution.
final class ScreenOverlays {
    static let margin = 14.0

    /// Buttons grow with the screen: 36 px on small clusters, 64 px on tall screens.
    static func buttonSize(height: Int) -> Double {
        min(max(Double(height) * 0.1, 36), 64)
    }
    static let attributionSize: Float = 11
    static let attributionPadding = 4.0

    private var attribution: ShapedText?
    private var plus: ShapedText?
    private var minus: ShapedText?
    private var controlMeshes: (size: SIMD2<Int>, covered: ScreenInsets, fill: GPUMesh, outline: GPUMesh, icons: GPUMesh)?
    private var cachedLayout: (width: Int, height: Int, covered: ScreenInsets, controls: [MapControl])?
    private var focusRingMesh: (rect: ScreenRect, mesh: GPUMesh)?
    private var vehicleMeshes: [(GPUMesh, Color)] = []
    private var attributionMesh: (box: ScreenRect, mesh: GPUMesh)?

    func prepare(glyphs: GlyphAtlas, fonts: FontLibrary, attribution credits: String) {
        let bold = fonts.resolve(["Noto Sans Bold"])
        setAttribution(credits, glyphs: glyphs, fonts: fonts)
        plus = glyphs.shape("+", font: bold, size: GlyphAtlas.baseSize, anchor: .center)
        // An en dash: Noto Sans has no U+2212 minus sign.
        minus = glyphs.shape("\u{2013}", font: bold, size: GlyphAtlas.baseSize, anchor: .center)
    }

    /// Shapes a new credit line (a style with other sources).
    func setAttribution(_ credits: String, glyphs: GlyphAtlas, fonts: FontLibrary) {
        attribution = glyphs.shape(credits, font: fonts.resolve(["Noto Sans Regular"]), size: GlyphAtlas.baseSize,
                                   anchor: .topLeft)
        attributionMesh = nil
    }

    // MARK: Controls

    /// Where the controls sit for a viewport: a column at the right edge of the part `covered`
    /// leaves visible, zoom in and out above recenter, vertically centred in it.
    static func controlLayout(width: Int, height: Int, covered: ScreenInsets = .zero) -> [MapControl] {
        let visible = covered.visibleRect(width: width, height: height)
        let size = buttonSize(height: height), gap = size / 6, groupGap = size / 2.4
        let total = size * 3 + gap + groupGap
        let x = visible.x + visible.width - margin - size
        var y = visible.y + max(margin, (visible.height - total) / 2)
        var controls: [MapControl] = []
        for kind in MapControl.Kind.allCases {
            controls.append(MapControl(kind: kind, rect: ScreenRect(x: x, y: y, width: size, height: size)))
            y += size + (kind == .zoomIn ? gap : groupGap)
        }
        return controls
    }

    /// ``controlLayout(width:height:covered:)`` for the current size and insets, kept until they
    /// change: every frame asks for it (drawing, labels, haptic regions) and it must not allocate
    /// each time.
    func layout(width: Int, height: Int, covered: ScreenInsets) -> [MapControl] {
        if let cached = cachedLayout, cached.width == width, cached.height == height, cached.covered == covered {
            return cached.controls
        }
        let controls = Self.controlLayout(width: width, height: height, covered: covered)
        cachedLayout = (width, height, covered, controls)
        return controls
    }

    func drawControls(width: Int, height: Int, covered: ScreenInsets, dark: Bool, programs: Programs, state: GLStateCache,
                      drawCalls: inout Int) {
        let size = SIMD2(width, height)
        if controlMeshes?.size != size || controlMeshes?.covered != covered {
            var positions: [SIMD2<Float>] = [], indices: [UInt32] = []
            var iconPositions: [SIMD2<Float>] = [], iconIndices: [UInt32] = []
            var outline = LineTessellation()
            for control in layout(width: width, height: height, covered: covered) {
                let ring = Self.roundedRect(control.rect, radius: control.rect.width / 4)
                Self.appendFan(ring, positions: &positions, indices: &indices)
                outline.addLine(ring, join: .miter, cap: .butt, closed: true)
                if control.kind == .recenter {
                    Self.appendFan(Self.arrow(center: control.rect.center, size: Float(control.rect.width / 2), angle: 0),
                                   positions: &iconPositions, indices: &iconIndices, marker: true)
                }
            }
            controlMeshes = (size, covered, .fill(positions: positions, indices: indices, colors: nil),
                             .line(outline, colors: nil, widths: nil),
                             .fill(positions: iconPositions, indices: iconIndices, colors: nil))
        }
        guard let meshes = controlMeshes else { return }
        let ortho = Self.orthographic(width: width, height: height)
        let background = dark ? Color(r: 0.16, g: 0.18, b: 0.21, a: 0.94) : Color(r: 1, g: 1, b: 1, a: 0.94)
        let border = dark ? Color(r: 0.35, g: 0.38, b: 0.42, a: 1) : Color(r: 0.62, g: 0.64, b: 0.67, a: 1)
        Self.drawFill(meshes.fill, matrix: ortho, color: background, programs: programs, state: state)
        Self.drawOutline(meshes.outline, matrix: ortho, color: border, width: 1.2, programs: programs, state: state)
        Self.drawFill(meshes.icons, matrix: ortho, color: Self.ink(dark: dark), programs: programs, state: state)
        drawCalls += 3
    }

    // MARK: Focus

    /// How far the focus ring stands off the focused rectangle, and how thick it is: thick
    /// enough to find at a glance on a car's screen.
    static let focusRingGap = 3.0
    static let focusRingWidth: Float = 4

    /// Draws the ring around `rect`; its mesh is remade only when the rectangle moves.
    func drawFocusRing(around rect: ScreenRect, width: Int, height: Int, dark: Bool, programs: Programs,
                       state: GLStateCache, drawCalls: inout Int) {
        guard rect.width.isFinite, rect.height.isFinite, rect.x.isFinite, rect.y.isFinite,
              rect.width > 0, rect.height > 0 else { return }
        if focusRingMesh?.rect != rect {
            let gap = Self.focusRingGap
            let outer = ScreenRect(x: rect.x - gap, y: rect.y - gap, width: rect.width + 2 * gap, height: rect.height + 2 * gap)
            var ring = LineTessellation()
            ring.addLine(Self.roundedRect(outer, radius: min(outer.width, outer.height) / 4), join: .round, cap: .butt, closed: true)
            focusRingMesh = (rect, .line(ring, colors: nil, widths: nil))
        }
        guard let mesh = focusRingMesh?.mesh else { return }
        let ortho = Self.orthographic(width: width, height: height)
        // A light halo under the ring keeps it visible over any map colour.
        Self.drawOutline(mesh, matrix: ortho, color: Self.focusHalo(dark: dark), width: Self.focusRingWidth + 3,
                         programs: programs, state: state)
        Self.drawOutline(mesh, matrix: ortho, color: Self.focusColor(dark: dark), width: Self.focusRingWidth,
                         programs: programs, state: state)
        drawCalls += 2
    }

    /// The ring's colour: a saturated blue by day, a warm amber at night that does not dazzle.
    static func focusColor(dark: Bool) -> Color {
        dark ? Color(r: 1, g: 0.72, b: 0.2) : Color(r: 0.05, g: 0.4, b: 0.95)
    }

    /// What surrounds the ring: white by day, near black at night.
    static func focusHalo(dark: Bool) -> Color {
        dark ? Color(r: 0.05, g: 0.06, b: 0.08, a: 0.9) : Color(r: 1, g: 1, b: 1, a: 0.9)
    }

    /// Adds the + and − glyphs of the zoom buttons to the frame's text.
    func appendControlLabels(to placer: inout LabelPlacer, width: Int, height: Int, covered: ScreenInsets, dark: Bool) {
        let ink = Self.ink(dark: dark)
        for control in layout(width: width, height: height, covered: covered) {
            let text = control.kind == .zoomIn ? plus : control.kind == .zoomOut ? minus : nil
            guard let text else { continue }
            let center = control.rect.center
            placer.addScreenText(text, at: SIMD2(Float(center.x), Float(center.y)), size: Float(control.rect.width * 0.62),
                                 fill: ink,
                                 halo: .transparent, haloWidth: 0)
        }
    }

    /// The colour of control icons.
    static func ink(dark: Bool) -> Color {
        dark ? Color(r: 0.9, g: 0.92, b: 0.94) : Color(r: 0.2, g: 0.22, b: 0.25)
    }

    // MARK: Vehicle

    func drawVehicle(_ vehicle: VehicleMarker?, transform: MapTransform, programs: Programs, state: GLStateCache,
                     drawCalls: inout Int) {
        guard let vehicle, let point = transform.screenPoint(for: vehicle.coordinate),
              point.x > -50, point.y > -50, point.x < Double(transform.width) + 50,
              point.y < Double(transform.height) + 50 else { return }
        if vehicleMeshes.isEmpty {
            var shadow: [SIMD2<Float>] = [], shadowIndices: [UInt32] = []
            Self.appendFan(Self.circle(radius: 17), positions: &shadow, indices: &shadowIndices)
            var rim: [SIMD2<Float>] = [], rimIndices: [UInt32] = []
            Self.appendFan(Self.circle(radius: 15), positions: &rim, indices: &rimIndices)
            var body: [SIMD2<Float>] = [], bodyIndices: [UInt32] = []
            Self.appendFan(Self.circle(radius: 12), positions: &body, indices: &bodyIndices)
            var arrow: [SIMD2<Float>] = [], arrowIndices: [UInt32] = []
            Self.appendFan(Self.arrow(center: .zero, size: 15, angle: 0), positions: &arrow, indices: &arrowIndices,
                           marker: true)
            vehicleMeshes = [
                (.fill(positions: shadow, indices: shadowIndices, colors: nil), Color(r: 0, g: 0, b: 0, a: 0.25)),
                (.fill(positions: rim, indices: rimIndices, colors: nil), .white),
                (.fill(positions: body, indices: bodyIndices, colors: nil), Color(r: 0.1, g: 0.45, b: 0.95)),
                (.fill(positions: arrow, indices: arrowIndices, colors: nil), .white),
            ]
        }
        // The marker stays screen-aligned and round; its arrow turns with heading minus bearing.
        let base = Self.orthographic(width: transform.width, height: transform.height)
            * Matrix4.translation(point.x, point.y, 0)
        let turned = base * Matrix4.rotationZ((vehicle.heading - transform.camera.bearing) * .pi / 180)
        for (index, (mesh, color)) in vehicleMeshes.enumerated() {
            Self.drawFill(mesh, matrix: index == 3 ? turned : base, color: color, programs: programs, state: state)
            drawCalls += 1
        }
    }

    // MARK: Attribution

    /// The credit line's box: the bottom-right corner of what the engine's panels leave visible,
    /// so no panel hides it.
    func attributionBox(width: Int, height: Int, covered: ScreenInsets) -> ScreenRect {
        let visible = covered.visibleRect(width: width, height: height)
        let scale = Double(Self.attributionSize / GlyphAtlas.baseSize)
        let textWidth = Double(attribution?.width ?? 0) * scale
        let textHeight = Double(attribution?.height ?? 0) * scale
        let padding = Self.attributionPadding
        return ScreenRect(x: visible.x + visible.width - textWidth - 2 * padding,
                          y: visible.y + visible.height - textHeight - 2 * padding,
                          width: textWidth + 2 * padding, height: textHeight + 2 * padding)
    }

    func appendAttribution(to placer: inout LabelPlacer, box: ScreenRect, dark: Bool) {
        guard let attribution else { return }
        let ink = dark ? Color(r: 0.8, g: 0.82, b: 0.85) : Color(r: 0.2, g: 0.2, b: 0.22)
        let padding = Self.attributionPadding
        placer.addScreenText(attribution, at: SIMD2(Float(box.x + padding), Float(box.y + padding)),
                             size: Self.attributionSize, fill: ink, halo: .transparent, haloWidth: 0)
    }

    func drawAttributionBackground(width: Int, height: Int, covered: ScreenInsets, dark: Bool, programs: Programs,
                                   state: GLStateCache, drawCalls: inout Int) {
        let box = attributionBox(width: width, height: height, covered: covered)
        if attributionMesh?.box != box {
            let corners: [SIMD2<Float>] = [
                SIMD2(Float(box.x), Float(box.y)), SIMD2(Float(box.x + box.width), Float(box.y)),
                SIMD2(Float(box.x + box.width), Float(box.y + box.height)), SIMD2(Float(box.x), Float(box.y + box.height)),
            ]
            attributionMesh = (box, .fill(positions: corners, indices: [0, 1, 2, 0, 2, 3], colors: nil))
        }
        guard let mesh = attributionMesh?.mesh else { return }
        let color = dark ? Color(r: 0.05, g: 0.06, b: 0.08, a: 0.6) : Color(r: 1, g: 1, b: 1, a: 0.7)
        Self.drawFill(mesh, matrix: Self.orthographic(width: width, height: height), color: color, programs: programs,
                      state: state)
        drawCalls += 1
    }

    // MARK: Geometry helpers

    /// Pixels, origin top-left, to clip space (framebuffer row 0 is the top of the image).
    static func orthographic(width: Int, height: Int) -> Matrix4 {
        Matrix4.translation(-1, -1, 0) * Matrix4.scale(2 / Double(width), 2 / Double(height), 1)
    }

    static func drawFill(_ mesh: GPUMesh, matrix: Matrix4, color: Color, programs: Programs, state: GLStateCache) {
        let program = programs.fill
        state.useProgram(program.name)
        programs.setMatrix(program.uniforms.matrix, matrix)
        glUniform1f(program.uniforms.opacity, 1)
        let c = color.premultiplied
        glVertexAttrib4f(AttributeSlot.fillColor, c.x, c.y, c.z, c.w)
        mesh.draw()
    }

    static func drawOutline(_ mesh: GPUMesh, matrix: Matrix4, color: Color, width: Float, programs: Programs,
                            state: GLStateCache) {
        let program = programs.useLineProgram(dashes: nil, lineWidth: width, state: state)
        programs.setMatrix(program.uniforms.matrix, matrix)
        glUniform1f(program.uniforms.opacity, 1)
        glUniform1f(program.uniforms.blur, 0)
        glUniform1f(program.uniforms.unitsPerPixel, 1)
        glUniform1f(program.uniforms.centreW, 1)
        let c = color.premultiplied
        glVertexAttrib4f(AttributeSlot.lineColor, c.x, c.y, c.z, c.w)
        glVertexAttrib1f(AttributeSlot.lineWidth, width)
        mesh.draw()
    }

    static func roundedRect(_ rect: ScreenRect, radius: Double) -> [SIMD2<Float>] {
        var points: [SIMD2<Float>] = []
        let corners = [(rect.x + rect.width - radius, rect.y + radius, -Double.pi / 2),
                       (rect.x + rect.width - radius, rect.y + rect.height - radius, 0.0),
                       (rect.x + radius, rect.y + rect.height - radius, Double.pi / 2),
                       (rect.x + radius, rect.y + radius, Double.pi)]
        for (cx, cy, start) in corners {
            for step in 0...6 {
                let angle = start + Double(step) / 6 * .pi / 2
                points.append(SIMD2(Float(cx + cos(angle) * radius), Float(cy + sin(angle) * radius)))
            }
        }
        return points
    }

    static func circle(radius: Float) -> [SIMD2<Float>] {
        (0..<40).map { i in
            let angle = Float(i) / 40 * 2 * .pi
            return SIMD2(cos(angle), sin(angle)) * radius
        }
    }

    /// A navigation arrowhead pointing up (towards -y) around `center`.
    static func arrow(center: SIMD2<Double>, size: Float, angle: Float) -> [SIMD2<Float>] {
        let c = SIMD2(Float(center.x), Float(center.y))
        return [SIMD2(0, -0.5), SIMD2(0.4, 0.45), SIMD2(0, 0.22), SIMD2(-0.4, 0.45)].map { c + $0 * size }
    }

    /// Triangulates a simple polygon (convex, or the arrowhead when `marker`) as a fan.
    static func appendFan(_ ring: [SIMD2<Float>], positions: inout [SIMD2<Float>], indices: inout [UInt32],
                          marker: Bool = false) {
        let base = UInt32(positions.count)
        positions.append(contentsOf: ring)
        if marker {
            // The arrowhead's notch makes it concave: two triangles from the tip.
            indices.append(contentsOf: [base, base + 1, base + 2, base, base + 2, base + 3])
            return
        }
        for i in 1..<(UInt32(ring.count) - 1) { indices.append(contentsOf: [base, base + i, base + i + 1]) }
    }
}

/// The route, drawn from a mesh of the part a view can show (``RouteWindowMesh``), made again
/// only when the view leaves its window or zooms a level past it, and trimmed as it is drawn:
/// the driven part is cut off in the fragment shader, so a car moving along it costs a uniform,
/// not a new mesh.
final class RouteOverlay {
    private var route: [GeoCoordinate] = []
    /// Made once per route: its projection, distances and index.
    private var geometry: RouteGeometry?
    /// What the current mesh covers and where its points lie along the route; its vertices
    /// are dropped once uploaded.
    private var drawing: RouteWindowMesh?
    private var mesh: GPUMesh?

    /// The source id whose line layers draw the route: a style that has them decides the
    /// route's look and where it lies among its layers.
    static let sourceID = StyleLayer.routeSourceID

    /// One line of the route as a style layer draws it.
    struct Part {
        var color: Color
        var width: Float
        var opacity: Float = 1
        var blur: Float = 0
        /// The part already driven (up to the progress) rather than the part ahead.
        var isDriven = false
        /// The colours by ``CongestionLevel`` (premultiplied, in its order) when the layer's
        /// colour reads `congestion` and differs by level; nil: ``color`` everywhere.
        var palette: CongestionPalette?
        /// The layer's `line-gradient`, by the share of the route driven at each point; it
        /// takes the place of ``color`` and ``palette``.
        var gradient: StyleProperty<Color>?
    }

    /// Colours a gradient gets in the shader, at even steps of the progress (`u_gradient`).
    static let gradientSteps = 64
    /// (distance, progress) pairs the shader interpolates the progress between (`u_progress_map`).
    static let progressSamples = 32
    /// Features carrying each step's progress, for evaluating a gradient without allocating.
    private static let gradientFeatures: [VectorTileFeature] = (0..<gradientSteps).map { step in
        VectorTileFeature(type: .lineString,
                          properties: [LinePaint.lineProgressKey: .double(Double(step) / Double(gradientSteps - 1))],
                          geometry: [])
    }

    /// Five colours, one per ``CongestionLevel``, as the shader's `u_palette` takes them.
    struct CongestionPalette: Equatable {
        var unknown, low, moderate, heavy, severe: SIMD4<Float>

        func color(_ level: CongestionLevel) -> SIMD4<Float> {
            switch level {
            case .unknown: unknown
            case .low: low
            case .moderate: moderate
            case .heavy: heavy
            case .severe: severe
            }
        }
    }

    /// The most change points of traffic one drawing of the route takes (the shader's array):
    /// 32 stretches in the view's window of the route; farther ones show their base colour.
    static let maximumCongestionPoints = 64

    /// The route's look without a style layer for it: a dark casing and a bright line, the
    /// driven part hidden.
    static func defaultParts(zoom: Double) -> [Part] {
        let widen = Float(min(max((zoom - 12) / 6, 0), 1))
        return [Part(color: Color(r: 0.05, g: 0.28, b: 0.62), width: 10 + 6 * widen),
                Part(color: Color(r: 0.25, g: 0.6, b: 1), width: 6 + 5 * widen)]
    }

    // Made once: the layers' filters and paint read them every frame.
    private static let drivenFeature = VectorTileFeature(type: .lineString, properties: ["part": .string("driven")],
                                                         geometry: [])
    private static let remainingFeature = VectorTileFeature(type: .lineString, properties: ["part": .string("remaining")],
                                                            geometry: [])
    /// The features a layer's colour sees for each level, remaining then driven.
    private static let congestionFeatures: [[VectorTileFeature]] = ["remaining", "driven"].map { part in
        CongestionLevel.allCases.map {
            VectorTileFeature(type: .lineString, properties: ["part": .string(part), "congestion": .string($0.description)],
                              geometry: [])
        }
    }

    /// The part a line layer on ``sourceID`` draws, at `zoom`; nil for other layers. Its
    /// filter sees one feature with `part` "driven" or "remaining", so a style draws the driven
    /// part with a layer filtered on `["==", ["get", "part"], "driven"]`.
    static func part(of layer: StyleLayer, zoom: Double) -> Part? {
        guard layer.source == sourceID, let paint = layer.paint.line else { return nil }
        let driven = Self.drivenFeature, remaining = Self.remainingFeature
        let isDriven: Bool
        switch (layer.matches(driven, zoom: zoom), layer.matches(remaining, zoom: zoom)) {
        case (true, false): isDriven = true
        case (false, true), (true, true): isDriven = false
        case (false, false): return nil
        }
        let feature = isDriven ? driven : remaining
        var palette: CongestionPalette?
        if paint.lineColor.dependsOnFeature {
            let features = congestionFeatures[isDriven ? 1 : 0]
            func color(_ level: CongestionLevel) -> SIMD4<Float> {
                paint.lineColor.evaluate(zoom: zoom, feature: features[level.rawValue]).premultiplied
            }
            let levels = CongestionPalette(unknown: color(.unknown), low: color(.low), moderate: color(.moderate),
                                           heavy: color(.heavy), severe: color(.severe))
            let first = levels.unknown
            if levels.low != first || levels.moderate != first || levels.heavy != first || levels.severe != first {
                palette = levels
            }
        }
        return Part(color: paint.lineColor.evaluate(zoom: zoom, feature: feature),
                    width: Float(paint.lineWidth.evaluate(zoom: zoom, feature: feature)),
                    opacity: Float(paint.lineOpacity.evaluate(zoom: zoom, feature: feature)),
                    blur: Float(paint.lineBlur.evaluate(zoom: zoom, feature: feature)), isDriven: isDriven, palette: palette,
                    gradient: paint.lineGradient)
    }

    func draw(_ route: [GeoCoordinate], progress: Double, transform: MapTransform, programs: Programs,
              state: GLStateCache, drawCalls: inout Int) {
        for part in Self.defaultParts(zoom: transform.camera.zoom) {
            draw(route, progress: progress, congestion: [], part: part, transform: transform, programs: programs,
                 state: state, drawCalls: &drawCalls)
        }
    }

    /// Change points of `congestion` for the shader, two to a vec4; kept between frames.
    private var congestionScratch = [Float](repeating: 0, count: RouteOverlay.maximumCongestionPoints * 2)
    private var paletteScratch = [Float](repeating: 0, count: 20)
    private var gradientScratch = [Float](repeating: 0, count: RouteOverlay.gradientSteps * 4)
    private var progressScratch = [Float](repeating: 0, count: RouteOverlay.progressSamples * 2)

    /// Sets the line-gradient uniforms for one part: its colours at even steps of the progress,
    /// and where along the mesh the progress takes which value, sampled evenly over the route's
    /// metres the mesh covers (the mesh's distance is not the route's: it starts at the window).
    private func setGradient(_ part: Part, zoom: Double, geometry: RouteGeometry, drawing: RouteWindowMesh,
                             scale: Double, program: LinkedProgram<LineUniforms>) {
        guard let gradient = part.gradient, let first = drawing.firstPointIndex, let last = drawing.lastPointIndex,
              geometry.totalMetres > 0 else {
            glUniform1i(program.uniforms.gradientCount, 0)
            return
        }
        for (step, feature) in Self.gradientFeatures.enumerated() {
            let color = gradient.evaluate(zoom: zoom, feature: feature).premultiplied
            for channel in 0..<4 { gradientScratch[step * 4 + channel] = color[channel] }
        }
        let from = geometry.metres[first], to = geometry.metres[last], total = geometry.totalMetres
        for sample in 0..<Self.progressSamples {
            let metres = from + (to - from) * Double(sample) / Double(Self.progressSamples - 1)
            let units = drawing.trimUnits(atMetres: metres, of: geometry) * scale
            progressScratch[sample * 2] = Float(min(max(units, -1e30), 1e30))
            progressScratch[sample * 2 + 1] = Float(metres / total)
        }
        glUniform1i(program.uniforms.gradientCount, GLint(Self.gradientSteps))
        gradientScratch.withUnsafeBufferPointer {
            glUniform4fv(program.uniforms.gradient, GLsizei(Self.gradientSteps), $0.baseAddress)
        }
        glUniform1i(program.uniforms.progressCount, GLint(Self.progressSamples))
        progressScratch.withUnsafeBufferPointer {
            glUniform4fv(program.uniforms.progressMap, GLsizei(Self.progressSamples / 2), $0.baseAddress)
        }
    }

    /// Sets the traffic uniforms for one part: the change points of the stretches that fall in
    /// the mesh's window, in the shader's distance unit, or none.
    private func setCongestion(_ congestion: [RouteCongestion], progress: Double, part: Part, geometry: RouteGeometry,
                               drawing: RouteWindowMesh, scale: Double, program: LinkedProgram<LineUniforms>) {
        guard let palette = part.palette, !congestion.isEmpty else {
            glUniform1i(program.uniforms.congestionCount, 0)
            return
        }
        var count = 0
        func units(_ metres: Double) -> Float {
            Float(min(max(drawing.trimUnits(atMetres: metres, of: geometry) * scale, -1e30), 1e30))
        }
        // The remaining route is cut at the progress, so stretches that end before it never
        // show: a long route's traffic behind the car and far ahead of the view costs nothing
        // per frame. The stretches are sorted and apart, so their ends are in order.
        var first = 0
        if !part.isDriven {
            var high = congestion.count
            while first < high {
                let middle = (first + high) / 2
                if congestion[middle].endMetres > progress { high = middle } else { first = middle + 1 }
            }
        }
        // Stretches beyond the mesh's window start at its end, and so do all after them.
        let windowEnd = Float(min(drawing.totalUnits * scale, 1e30))
        for stretch in congestion[first...] {
            guard count + 2 <= Self.maximumCongestionPoints else { break }
            let start = units(stretch.startMetres), end = units(stretch.endMetres)
            if start >= windowEnd { break }
            guard end > start else { continue }
            congestionScratch[count * 2] = start
            congestionScratch[count * 2 + 1] = Float(stretch.level.rawValue)
            congestionScratch[count * 2 + 2] = end
            congestionScratch[count * 2 + 3] = Float(CongestionLevel.unknown.rawValue)
            count += 2
        }
        for level in CongestionLevel.allCases {
            let color = palette.color(level)
            for channel in 0..<4 { paletteScratch[level.rawValue * 4 + channel] = color[channel] }
        }
        glUniform1i(program.uniforms.congestionCount, GLint(count))
        guard count > 0 else { return }
        congestionScratch.withUnsafeBufferPointer {
            glUniform4fv(program.uniforms.congestion, GLsizei((count + 1) / 2), $0.baseAddress)
        }
        paletteScratch.withUnsafeBufferPointer { glUniform4fv(program.uniforms.palette, 5, $0.baseAddress) }
    }

    /// Draws one part of the route (the mesh is made when the route changes, or the view
    /// outgrows it).
    func draw(_ route: [GeoCoordinate], progress: Double, congestion: [RouteCongestion], part: Part,
              transform: MapTransform, programs: Programs, state: GLStateCache, drawCalls: inout Int) {
        prepare(route, transform: transform, state: state)
        guard let geometry, let drawing, let mesh, part.width > 0, part.opacity > 0 else { return }
        let trimUnits = drawing.trimUnits(atMetres: progress, of: geometry)
        if part.isDriven {
            guard trimUnits > 0 else { return }
        } else {
            guard trimUnits < drawing.totalUnits else { return }
        }
        let scale = transform.worldSize / RouteWindowMesh.unitsPerWorld
        let matrix = transform.worldMatrix
            * Matrix4.translation(drawing.origin.x * transform.worldSize, drawing.origin.y * transform.worldSize, 0)
            * Matrix4.scale(scale, scale, 1)
        let program = programs.useTrimmedLineProgram(state: state)
        programs.setMatrix(program.uniforms.matrix, matrix)
        glUniform1f(program.uniforms.unitsPerPixel, Float(1 / scale))
        glUniform1f(program.uniforms.centreW, Float(transform.cameraToCenterDistance))
        glUniform1f(program.uniforms.opacity, min(max(part.opacity, 0), 1))
        glUniform1f(program.uniforms.blur, max(part.blur, 0))
        // In the shader's distance unit, pixels at the centre of the view (v_distance).
        let trim = Float(min(trimUnits * scale, 1e30))
        glUniform1f(program.uniforms.trimBefore, part.isDriven || trimUnits <= 0 ? -1e9 : trim)
        glUniform1f(program.uniforms.trimAfter, part.isDriven ? trim : 1e30)
        // A gradient colours the whole line: traffic, which comes from line-color, does not show.
        setCongestion(part.gradient == nil ? congestion : [], progress: progress, part: part, geometry: geometry,
                      drawing: drawing, scale: scale, program: program)
        setGradient(part, zoom: transform.camera.zoom, geometry: geometry, drawing: drawing, scale: scale, program: program)
        let c = part.color.premultiplied
        glVertexAttrib4f(AttributeSlot.lineColor, c.x, c.y, c.z, c.w)
        glVertexAttrib1f(AttributeSlot.lineWidth, min(part.width, 1024))
        mesh.draw()
        drawCalls += 1
    }

    /// Takes a new route, and makes the mesh for the view when the current one does not serve it.
    private func prepare(_ route: [GeoCoordinate], transform: MapTransform, state: GLStateCache) {
        if route != self.route {
            self.route = route
            geometry = route.count >= 2 ? RouteGeometry(route) : nil
            drawing = nil
            mesh = nil
        }
        guard let geometry else { return }
        let view = RouteWindowMesh.viewBox(transform), zoom = transform.camera.zoom
        if let drawing, drawing.serves(view: view, zoom: zoom) { return }
        var next = RouteWindowMesh(geometry, window: RouteWindowMesh.window(around: view), zoom: zoom)
        mesh = next.tessellation.indices.isEmpty ? nil : .line(next.tessellation, colors: nil, widths: nil)
        next.tessellation = LineTessellation()
        drawing = next
    }
}
