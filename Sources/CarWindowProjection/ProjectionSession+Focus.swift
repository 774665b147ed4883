import Foundation
import CarWindowMap

/// Where a head unit's keys move the app's own focus.
public enum FocusMove: Sendable, Equatable {
    /// To the nearest region above, below, left or right of the focused one.
    case up, down, left, right
    /// To the next or previous region in reading order (top to bottom, then left to right): a
    /// rotary knob's turn.
    case next, previous
}

/// Focus for head units with neither touch nor haptic data: the app draws a ring on one of its
/// haptic regions (the map's buttons, the engine's regions, alternatives), the head unit's keys
/// move it, and selecting acts as a tap on it. A head unit with haptic data draws its own focus
/// from the rectangles (SendHapticData) and needs none of this.
extension ProjectionSession {
    /// Turns the app's own focus on or off. On, the first region in reading order is focused
    /// and ringed in the picture (styled for day and night); off, the ring goes.
    public func setFocusEnabled(_ enabled: Bool) {
        guard enabled != focusEnabled else { return }
        focusEnabled = enabled
        if enabled {
            focus(on: orderedFocusRegions().first?.id)
        } else {
            focus(on: nil)
        }
    }

    /// Whether the app's own focus is on.
    public var isFocusEnabled: Bool { focusEnabled }

    /// The haptic region the focus is on; nil when focus is off or there is nothing to focus.
    public var focusedRegionID: Int? { focusEnabled ? focusedID : nil }

    /// Moves the focus; nothing happens when focus is off or no region lies that way.
    public func moveFocus(_ move: FocusMove) {
        guard focusEnabled else { return }
        let ordered = orderedFocusRegions()
        guard let current = ordered.first(where: { $0.id == focusedID }) else {
            focus(on: ordered.first?.id)
            return
        }
        switch move {
        case .next, .previous:
            guard let index = ordered.firstIndex(where: { $0.id == current.id }), ordered.count > 1 else { return }
            let step = move == .next ? 1 : ordered.count - 1
            focus(on: ordered[(index + step) % ordered.count].id)
        case .up, .down, .left, .right:
            focus(on: Self.nearest(from: current.rect, toward: move, among: ordered)?.id ?? current.id)
        }
    }

    /// Acts on the focused region as a tap on its centre would: a control's action, or
    /// ``ProjectionSessionEvent/regionTapped(id:)`` for the engine's regions.
    public func activateFocus() {
        guard focusEnabled, let id = focusedID, let point = haptics.selectionPoint(for: id) else { return }
        apply([.tap(at: point)])
    }

    /// The regions in reading order: rows top to bottom (centres within half a region's height
    /// count as one row), left to right within a row.
    func orderedFocusRegions() -> [HapticRegion] {
        haptics.regions.sorted { a, b in
            let rowTolerance = min(a.rect.height, b.rect.height) / 2
            if abs(a.rect.center.y - b.rect.center.y) > rowTolerance { return a.rect.center.y < b.rect.center.y }
            return a.rect.center.x < b.rect.center.x
        }
    }

    /// The region nearest `rect` in the direction of `move`: within 60 degrees of it, scored by
    /// the distance along the direction plus twice the distance across it, so a region straight
    /// ahead beats a closer one off to the side.
    static func nearest(from rect: ScreenRect, toward move: FocusMove, among regions: [HapticRegion]) -> HapticRegion? {
        let direction: SIMD2<Double>
        switch move {
        case .up: direction = SIMD2(0, -1)
        case .down: direction = SIMD2(0, 1)
        case .left: direction = SIMD2(-1, 0)
        case .right: direction = SIMD2(1, 0)
        case .next, .previous: return nil
        }
        var best: (region: HapticRegion, score: Double)?
        for region in regions where region.rect != rect {
            let offset = region.rect.center - rect.center
            let along = (offset * direction).sum()
            let across = abs(offset.x * direction.y - offset.y * direction.x)
            guard along > 0, across <= along * 1.74 else { continue }
            let score = along + 2 * across
            if score < (best?.score ?? .infinity) { best = (region, score) }
        }
        return best?.region
    }

    /// Keeps the ring on the focused region as regions move with the map, and moves the focus to
    /// the nearest region when its region went away. Runs after each picture's regions.
    func followFocusedRegion() {
        let regions = haptics.regions
        if let id = focusedID, let region = regions.first(where: { $0.id == id }) {
            if view.overlays.focusRing != region.rect {
                view.overlays.focusRing = region.rect
                changed()
            }
            return
        }
        guard !regions.isEmpty || focusedID != nil else { return }
        let previous = view.overlays.focusRing?.center
        let replacement = previous.flatMap { point in
            regions.min { a, b in
                let da = a.rect.center - point, db = b.rect.center - point
                return (da * da).sum() < (db * db).sum()
            }
        } ?? orderedFocusRegions().first
        focus(on: replacement?.id)
    }

    private func focus(on id: Int?) {
        let rect = id.flatMap { id in haptics.regions.first { $0.id == id }?.rect }
        let changedFocus = id != focusedID
        focusedID = id
        if view.overlays.focusRing != rect {
            view.overlays.focusRing = rect
            changed()
        }
        if changedFocus { emit(.focusChanged(regionID: id)) }
    }
}
