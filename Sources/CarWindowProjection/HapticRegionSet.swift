import Foundation
import Logging
import CarWindowGeo
import CarWindowMap

/// A rectangle the head unit's haptic layer can focus and select (SDL's `HapticRect`).
public struct HapticRegion: Sendable, Hashable, CustomStringConvertible {
    /// The ids the RPC accepts.
    public static let idRange = 0...2_000_000_000

    /// Identifies the region across updates, so the head unit keeps its focus on it.
    public var id: Int
    /// Where it is: rendered pixels in ``HapticRegionSet/regions``, head-unit pixels in what
    /// ``HapticRegionSet/update(controls:transform:scale:)`` returns.
    public var rect: ScreenRect

    /// A region `id` covering `rect`.
    public init(id: Int, rect: ScreenRect) {
        self.id = id
        self.rect = rect
    }

    /// The id and rect, for warnings and test failures.
    public var description: String { "#\(id) \(rect)" }
}

/// The haptic regions of a projected map: the navigation engine's own, the renderer's controls
/// and map features that move with the map. GL content has no view tree from which SDL could
/// collect them, so this is where they come from.
///
/// Call ``update(controls:transform:scale:)`` once per frame; it returns the array to send with
/// `SendHapticData` only when it differs from the last one sent, so a still map sends nothing.
public struct HapticRegionSet: Sendable {
    /// A region tied to a place on the map (a point of interest, a traffic incident): a box of
    /// fixed pixel size centred on where `anchor` is drawn this frame.
    public struct MapFeature: Sendable, Hashable {
        /// The region's id; see ``HapticRegionSet`` for the ids that are reserved.
        public var id: Int
        /// The place the box is centred on.
        public var anchor: GeoCoordinate
        /// Width and height of the box in rendered pixels.
        public var size: SIMD2<Double>

        /// A `size` box around `anchor`.
        public init(id: Int, anchor: GeoCoordinate, size: SIMD2<Double>) {
            self.id = id
            self.anchor = anchor
            self.size = size
        }
    }

    /// The most regions one `SendHapticData` may carry.
    public static let maximumCount = 1000
    /// Ids from here to the top of ``HapticRegion/idRange`` belong to the renderer's controls;
    /// declared regions and features using them are dropped.
    public static let reservedControlIDs = 1_999_999_000...2_000_000_000

    /// The id of a control's region: fixed per kind, so focus survives resizes and restarts.
    public static func regionID(for control: MapControl.Kind) -> Int {
        reservedControlIDs.lowerBound + control.rawValue
    }

    /// Width and height in rendered pixels of an alternative route's region: a finger's width.
    public static let alternativeRegionSize = 48.0
    /// Alternatives that get regions; their ids lie in the reserved block.
    static let alternativeRegionCapacity = 100

    /// The id of the region of the alternative route at `index` (in the reserved block).
    public static func regionID(forAlternative index: Int) -> Int {
        reservedControlIDs.lowerBound + 500 + index
    }

    /// The alternative route whose region has `id`, or nil for any other id.
    public static func alternativeIndex(ofRegion id: Int) -> Int? {
        let index = id - regionID(forAlternative: 0)
        return (0..<alternativeRegionCapacity).contains(index) ? index : nil
    }

    private static let logger = Logger(label: "carwindow.haptics")

    /// Regions the navigation engine declares, in rendered pixels.
    public var declaredRegions: [HapticRegion]
    /// Regions that follow the map.
    public var mapFeatures: [MapFeature]
    /// Alternative routes on the map, by index: each gets a region (``alternativeRegionSize``
    /// square, id ``regionID(forAlternative:)``) half way along its part on the screen, so the
    /// head unit's haptic layer can focus and select it.
    public var alternativeRoutes: [[GeoCoordinate]] = []
    /// The regions of the last update, in rendered pixels, sorted by id: what hit tests use.
    public private(set) var regions: [HapticRegion] = []
    /// What was last returned for sending, nil before the first update or after ``resend()``.
    private var lastEmitted: [HapticRegion]?
    /// Warnings of the last update, so a problem that persists is logged once, not every frame.
    private var lastWarnings: [String] = []
    /// What the last update was computed from.
    private var lastInputs: (controls: [MapControl], declared: [HapticRegion], scale: Double)?

    /// A set with the engine's `declaredRegions` and `mapFeatures`.
    public init(declaredRegions: [HapticRegion] = [], mapFeatures: [MapFeature] = []) {
        self.declaredRegions = declaredRegions
        self.mapFeatures = mapFeatures
    }

    /// Forgets what was sent, so that the next update sends the full set again: call it when the
    /// head unit may have lost them (a new video service, a reconnect).
    public mutating func resend() {
        lastEmitted = nil
    }

    /// Recomputes the regions for this frame and returns them for `SendHapticData`, or nil when
    /// the head unit already has exactly these.
    ///
    /// The returned regions are sorted by id and multiplied by `scale` (the head unit's display
    /// scale, clamped to 1...10 like SDL does; non-finite means 1), with edges rounded to whole
    /// pixels so that sub-pixel map motion does not cause a send. Controls come first, then
    /// declared regions, then features; beyond ``maximumCount`` the rest are dropped with a
    /// warning. Features whose anchor is behind the camera or whose box is off screen are left
    /// out, and boxes are clipped to the screen. An empty set is returned once, which clears the
    /// head unit's regions (the iOS library never sends an empty set and so never clears them).
    ///
    /// - Parameters:
    ///   - controls: the renderer's on-screen controls (`MapRenderer.controls`), empty when hidden.
    ///   - transform: this frame's camera, for projecting ``mapFeatures``; nil skips them.
    ///   - scale: the head unit's display scale.
    public mutating func update(controls: [MapControl], transform: MapTransform?, scale: Double = 1) -> [HapticRegion]? {
        // Nothing that moves with the map and nothing changed: the answer is "already sent",
        // found without building the set again (this runs every frame).
        if mapFeatures.isEmpty, alternativeRoutes.isEmpty, lastEmitted != nil, let last = lastInputs,
           last.controls == controls, last.declared == declaredRegions, last.scale == scale {
            return nil
        }
        lastInputs = (controls, declaredRegions, scale)
        var warnings: [String] = []
        var candidates: [HapticRegion] = controls.map {
            HapticRegion(id: Self.regionID(for: $0.kind), rect: $0.rect)
        }
        for region in declaredRegions {
            if let problem = Self.problem(with: region) {
                warnings.append("declared haptic region \(region.id) dropped: \(problem)")
            } else {
                candidates.append(region)
            }
        }
        if let transform {
            for (index, route) in alternativeRoutes.prefix(Self.alternativeRegionCapacity).enumerated() {
                guard let center = Self.midpointOnScreen(of: route, transform: transform) else { continue }
                let size = Self.alternativeRegionSize
                let box = ScreenRect(x: center.x - size / 2, y: center.y - size / 2, width: size, height: size)
                let screen = ScreenRect(x: 0, y: 0, width: Double(transform.width), height: Double(transform.height))
                if let visible = Self.intersection(box, screen) {
                    candidates.append(HapticRegion(id: Self.regionID(forAlternative: index), rect: visible))
                }
            }
        }
        if !mapFeatures.isEmpty, let transform {
            let screen = ScreenRect(x: 0, y: 0, width: Double(transform.width), height: Double(transform.height))
            for feature in mapFeatures {
                guard feature.size.x.isFinite, feature.size.y.isFinite, feature.size.x > 0, feature.size.y > 0 else {
                    warnings.append("map feature \(feature.id) dropped: its size \(feature.size) must be finite and positive")
                    continue
                }
                guard let center = transform.screenPoint(for: feature.anchor) else { continue }
                let box = ScreenRect(x: center.x - feature.size.x / 2, y: center.y - feature.size.y / 2,
                                     width: feature.size.x, height: feature.size.y)
                guard let visible = Self.intersection(box, screen) else { continue }
                let region = HapticRegion(id: feature.id, rect: visible)
                if let problem = Self.problem(with: region) {
                    warnings.append("map feature \(feature.id) dropped: \(problem)")
                } else {
                    candidates.append(region)
                }
            }
        }

        var seen = Set<Int>()
        var kept: [HapticRegion] = []
        var dropped = 0
        for region in candidates {
            guard seen.insert(region.id).inserted else {
                warnings.append("haptic region id \(region.id) used twice; the later one is dropped")
                continue
            }
            if kept.count < Self.maximumCount { kept.append(region) } else { dropped += 1 }
        }
        if dropped > 0 {
            warnings.append("\(dropped) haptic regions dropped: SendHapticData carries at most \(Self.maximumCount)")
        }
        if warnings != lastWarnings {
            for warning in warnings { Self.logger.warning("\(warning)") }
            lastWarnings = warnings
        }

        kept.sort { $0.id < $1.id }
        regions = kept
        let scale = scale.isFinite ? min(max(scale, 1), 10) : 1
        let outgoing = kept.map { HapticRegion(id: $0.id, rect: Self.scaledAndRounded($0.rect, by: scale)) }
        guard outgoing != lastEmitted else { return nil }
        lastEmitted = outgoing
        return outgoing
    }

    /// The region a touch at `point` (rendered pixels) is on, or nil.
    ///
    /// Where regions overlap, the smallest one containing the point wins, and among equally
    /// small ones the lowest id. The iOS library reports nothing when two views match, because a
    /// view tree's overlaps are usually accidental; here overlaps are by design (a control over a
    /// feature, a small point of interest inside a large area), the smallest region is the most
    /// specific target, and reporting nothing would make such taps vanish.
    public func region(at point: SIMD2<Double>) -> HapticRegion? {
        var best: HapticRegion?
        var bestArea = Double.infinity
        for region in regions where region.rect.contains(point) {
            let area = region.rect.width * region.rect.height
            // `regions` is sorted by id, so a strict comparison keeps the lowest id on ties.
            if area < bestArea {
                best = region
                bestArea = area
            }
        }
        return best
    }

    /// Where a haptic "select" of region `id` acts, in rendered pixels: its centre, as the head
    /// unit's selection is a touch at the rect's centre. Nil for an unknown id.
    public func selectionPoint(for id: Int) -> SIMD2<Double>? {
        regions.first { $0.id == id }?.rect.center
    }

    // MARK: Helpers

    /// The point half way along the part of `line` on the screen, in rendered pixels; nil when
    /// none of it is. Two passes over the line, so nothing is allocated per frame.
    static func midpointOnScreen(of line: [GeoCoordinate], transform: MapTransform) -> SIMD2<Double>? {
        let box = SIMD4(0, 0, Double(transform.width), Double(transform.height))
        func visibleLength(upTo limit: Double) -> (length: Double, point: SIMD2<Double>?) {
            var total = 0.0
            var previous: SIMD2<Double>?
            for coordinate in line {
                let point = transform.screenPoint(for: coordinate)
                defer { previous = point }
                guard let a = previous, let b = point, let (start, end) = TileClipping.segment(a, b, to: box) else { continue }
                let length = ((end - start) * (end - start)).sum().squareRoot()
                if total + length >= limit {
                    return (limit, length > 0 ? start + (end - start) * ((limit - total) / length) : start)
                }
                total += length
            }
            return (total, nil)
        }
        let total = visibleLength(upTo: .infinity).length
        guard total > 0 else { return nil }
        return visibleLength(upTo: total / 2).point
    }

    private static func problem(with region: HapticRegion) -> String? {
        guard HapticRegion.idRange.contains(region.id) else {
            return "id outside \(HapticRegion.idRange.lowerBound)...\(HapticRegion.idRange.upperBound)"
        }
        guard !reservedControlIDs.contains(region.id) else {
            return "ids \(reservedControlIDs.lowerBound)... are reserved for the renderer's controls"
        }
        let rect = region.rect
        guard rect.x.isFinite, rect.y.isFinite, rect.width.isFinite, rect.height.isFinite else {
            return "rect \(rect) is not finite"
        }
        guard rect.width > 0, rect.height > 0 else { return "rect \(rect) is empty" }
        return nil
    }

    private static func intersection(_ a: ScreenRect, _ b: ScreenRect) -> ScreenRect? {
        let minX = max(a.x, b.x), minY = max(a.y, b.y)
        let maxX = min(a.x + a.width, b.x + b.width), maxY = min(a.y + a.height, b.y + b.height)
        guard maxX > minX, maxY > minY else { return nil }
        return ScreenRect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }

    private static func scaledAndRounded(_ rect: ScreenRect, by scale: Double) -> ScreenRect {
        let minX = (rect.x * scale).rounded(), minY = (rect.y * scale).rounded()
        let maxX = ((rect.x + rect.width) * scale).rounded(), maxY = ((rect.y + rect.height) * scale).rounded()
        return ScreenRect(x: minX, y: minY, width: maxX - minX, height: maxY - minY)
    }
}
