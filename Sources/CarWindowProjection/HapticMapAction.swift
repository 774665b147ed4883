import Foundation

/// What a recognised gesture does to the projected map.
public enum MapAction: Sendable, Equatable {
    /// Move the map content by this many rendered pixels (a pan's delta: finger right, map right).
    case move(by: SIMD2<Double>)
    /// Change the zoom level by this many levels, keeping `around` (rendered pixels) in place.
    case zoom(by: Double, around: SIMD2<Double>)
    /// Turn the map content by this many degrees clockwise on screen, keeping `around`
    /// (rendered pixels) in place.
    case rotate(by: Double, around: SIMD2<Double>)
    /// Let the map glide on at `velocity` (rendered pixels a second), slowing to a stop; the
    /// next touch stops it.
    case glide(velocity: SIMD2<Double>)
    /// The user tapped haptic region `id` (or selected it with the head unit's haptic controls).
    case regionTapped(id: Int)
    /// The user tapped the map outside every region, for the engine to pick a place there.
    case mapTapped(at: SIMD2<Double>)

    /// The map actions for `gestures`, in order.
    ///
    /// A tap on a region is a region event. A double tap on a region counts as two taps on it, so
    /// that pressing the zoom-in button twice quickly zooms twice instead of being swallowed as
    /// one map double tap; elsewhere a double tap zooms in by one level at its point. Pans move
    /// the map (a fling lets it glide on), pinches zoom it by `log2(scale)` around their centre
    /// and turn it with the fingers. With `mapGesturesEnabled` false (a map locked to the
    /// vehicle, say) pans, flings, pinches, rotations and double taps off regions do nothing,
    /// while taps are still delivered.
    public static func actions(for gestures: [Gesture], regions: HapticRegionSet,
                               mapGesturesEnabled: Bool = true) -> [MapAction] {
        var actions: [MapAction] = []
        for gesture in gestures {
            switch gesture {
            case .tap(let point):
                if let region = regions.region(at: point) {
                    actions.append(.regionTapped(id: region.id))
                } else {
                    actions.append(.mapTapped(at: point))
                }
            case .doubleTap(let point):
                if let region = regions.region(at: point) {
                    actions.append(contentsOf: [.regionTapped(id: region.id), .regionTapped(id: region.id)])
                } else if mapGesturesEnabled {
                    actions.append(.zoom(by: 1, around: point))
                }
            case .panBegan(_, let translation), .panChanged(let translation), .panEnded(let translation):
                if mapGesturesEnabled, translation != .zero, translation.x.isFinite, translation.y.isFinite {
                    actions.append(.move(by: translation))
                }
            case .pinchChanged(let scale, let center), .pinchEnded(let scale, let center):
                if mapGesturesEnabled, scale.isFinite, scale > 0, scale != 1 {
                    actions.append(.zoom(by: log2(scale), around: center))
                }
            case .rotationChanged(let degrees, let center):
                if mapGesturesEnabled, degrees.isFinite, degrees != 0 {
                    actions.append(.rotate(by: degrees, around: center))
                }
            case .fling(let velocity):
                if mapGesturesEnabled, velocity.x.isFinite, velocity.y.isFinite, velocity != .zero {
                    actions.append(.glide(velocity: velocity))
                }
            case .pinchBegan, .panCancelled, .pinchCancelled:
                break
            }
        }
        return actions
    }
}
