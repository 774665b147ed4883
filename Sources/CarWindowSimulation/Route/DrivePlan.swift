import Foundation
import CarWindowGeo
import CarWindowSystemSupport

/// How a simulated car drives a route.
package struct DriveOptions: Sendable, Equatable {
    /// Metres per second squared when speeding up.
    package var acceleration: Double
    /// Metres per second squared when slowing down (a positive number).
    package var braking: Double
    /// The sideways acceleration allowed in turns, metres per second squared; sharp turns are
    /// driven at `sqrt(lateralAcceleration * radius)`.
    package var lateralAcceleration: Double
    /// The slowest speed a turn (not a U-turn) is driven at, metres per second.
    package var minimumTurnSpeed: Double
    /// How far before and after a vertex the polyline is followed to measure a turn, metres.
    /// Corners of polylines from tiles are sharp, so a turn's radius is estimated from the chords
    /// over this distance rather than from the vertex alone.
    package var turnBaseline: Double
    /// Turns sharper than this many degrees are U-turns: the car stops, then drives back.
    package var uTurnAngle: Double
    /// A traffic light stops the car at every Nth of the route's major intersections (the Nth,
    /// the 2Nth, ...); 0 for none.
    package var trafficLightInterval: Int
    /// Further stops at these distances along the route, metres.
    package var stopDistances: [Double]
    /// How far before an intersection's node the car stops for its light, metres.
    package var stopLineSetback: Double
    /// Each stop lasts a duration drawn uniformly from this range, seconds.
    package var stopDwell: ClosedRange<Double>
    /// The seed of the stop durations, so that a drive replays exactly.
    package var seed: UInt64
    /// The heading is the direction from the point this many metres behind the car to the point
    /// as far ahead, so that it turns smoothly through corners instead of jumping at vertices.
    package var headingSmoothingDistance: Double

    /// At most this many entries of ``stopDistances`` are used.
    package static let maximumStopDistances = 10_000

    /// Options with the defaults a calm city driver has.
    package init(acceleration: Double = 1.5, braking: Double = 2.5, lateralAcceleration: Double = 2.0,
                minimumTurnSpeed: Double = 1.5, turnBaseline: Double = 20, uTurnAngle: Double = 150,
                trafficLightInterval: Int = 3, stopDistances: [Double] = [], stopLineSetback: Double = 5,
                stopDwell: ClosedRange<Double> = 8...20, seed: UInt64 = 1, headingSmoothingDistance: Double = 6) {
        self.acceleration = acceleration
        self.braking = braking
        self.lateralAcceleration = lateralAcceleration
        self.minimumTurnSpeed = minimumTurnSpeed
        self.turnBaseline = turnBaseline
        self.uTurnAngle = uTurnAngle
        self.trafficLightInterval = trafficLightInterval
        self.stopDistances = stopDistances
        self.stopLineSetback = stopLineSetback
        self.stopDwell = stopDwell
        self.seed = seed
        self.headingSmoothingDistance = headingSmoothingDistance
    }
}

/// Why a route cannot be driven.
package enum DrivePlanError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The route has fewer than two points.
    case tooFewPoints(count: Int)
    /// The route has more points than ``DrivePlan/maximumPoints``.
    case tooManyPoints(count: Int, limit: Int)
    /// Point `index` is NaN, infinite or outside the globe's ranges.
    case invalidCoordinate(index: Int, GeoCoordinate)
    /// The route does not have one segment fewer than points.
    case segmentCountMismatch(points: Int, segments: Int)
    /// Segment `index` has a speed limit that is not a positive finite number.
    case invalidSpeedLimit(index: Int, value: Double)
    /// All points of the route are the same place.
    case zeroLength
    /// An option is out of range; `reason` says which and why.
    case invalidOption(String)

    /// What went wrong and what to do about it, for logs and error messages.
    package var description: String {
        switch self {
        case .tooFewPoints(let count):
            "The route has \(count) point\(count == 1 ? "" : "s"); a route to drive needs at least two."
        case .tooManyPoints(let count, let limit):
            "The route has \(count) points, more than the limit of \(limit); simplify it first."
        case .invalidCoordinate(let index, let coordinate):
            "Route point \(index) \(coordinate) is not a finite latitude in -90...90 and longitude in -180...180."
        case .segmentCountMismatch(let points, let segments):
            "The route has \(points) points but \(segments) segments; it needs one segment fewer than points."
        case .invalidSpeedLimit(let index, let value):
            "Route segment \(index) has speed limit \(value); speed limits must be positive metres per second."
        case .zeroLength:
            "All points of the route are the same place; there is nothing to drive."
        case .invalidOption(let reason):
            "Invalid drive option: \(reason)."
        }
    }
}

/// Where the simulated car is at one moment.
package struct VehicleState: Sendable, Equatable {
    /// Where the car is.
    package var coordinate: GeoCoordinate
    /// Degrees clockwise from north, in 0..<360, smoothed through corners.
    package var heading: Double
    /// Metres per second.
    package var speed: Double
    /// Metres driven from the start of the route.
    package var distance: Double
    /// Whether the car stands still (at the start, at a stop, or at the end).
    package var isStopped: Bool
    /// Whether the drive is over: the car stands at the end of the route.
    package var isFinished: Bool
}

/// A deterministic timeline of a car driving a ``DrivingRoute``: it speeds up and slows down at
/// bounded rates, keeps to each segment's speed limit, slows for sharp turns, stops at traffic
/// lights for a seeded random time and stops at the end.
///
/// The whole speed profile is computed once; ``state(at:)`` is a binary search over it and
/// allocates nothing.
package struct DrivePlan: Sendable {
    /// A place where the car stands still for a while.
    package struct Stop: Sendable, Equatable {
        /// Metres from the start of the route.
        package var distance: Double
        /// Seconds from the start of the drive when the car comes to a halt.
        package var arrival: Double
        /// Seconds it stands.
        package var dwell: Double
    }

    /// A stretch of time with constant acceleration.
    struct Piece {
        var startTime: Double
        var startDistance: Double
        var endDistance: Double
        var startSpeed: Double
        var acceleration: Double
    }

    /// Routes with more points are refused.
    package static let maximumPoints = 1_000_000

    /// The route as given.
    package let route: DrivingRoute
    /// How the route is driven.
    package let options: DriveOptions
    /// Seconds from the start to the arrival at the end.
    package let duration: Double
    /// The traffic lights and other stops on the way, in order; the end is not among them.
    package let stops: [Stop]
    /// The polyline driven: the route without repeated points, with a vertex at every stop.
    let points: [GeoCoordinate]
    /// Distance from the start to each of ``points``.
    let distances: [Double]
    /// The speed limit of each segment of ``points``.
    let limits: [Double]
    let pieces: [Piece]

    /// The length driven in metres.
    package var length: Double { distances[distances.count - 1] }

    /// Distances along the route (metres) of its turns: vertices where the direction changes by
    /// more than `degrees`, as a guidance engine would announce them.
    package func turns(sharperThan degrees: Double = 35) -> [Double] {
        guard points.count >= 3 else { return [] }
        var result: [Double] = []
        for index in 1..<(points.count - 1) {
            let incoming = points[index - 1].offset(to: points[index])
            let outgoing = points[index].offset(to: points[index + 1])
            let lengths = (incoming * incoming).sum().squareRoot() * (outgoing * outgoing).sum().squareRoot()
            guard lengths > 0 else { continue }
            let cosine = min(max((incoming * outgoing).sum() / lengths, -1), 1)
            if acos(cosine) * 180 / .pi > degrees, distances[index] - (result.last ?? -100) > 30 {
                result.append(distances[index])
            }
        }
        return result
    }

    /// Plans the drive, or says why the route or the options cannot be driven.
    package init(route: DrivingRoute, options: DriveOptions = DriveOptions()) throws(DrivePlanError) {
        try Self.validate(options)
        let points = route.points
        guard points.count >= 2 else { throw .tooFewPoints(count: points.count) }
        guard points.count <= Self.maximumPoints else { throw .tooManyPoints(count: points.count, limit: Self.maximumPoints) }
        guard route.segments.count == points.count - 1 else {
            throw .segmentCountMismatch(points: points.count, segments: route.segments.count)
        }
        for (index, point) in points.enumerated() where !GeoMath.isValid(point) {
            throw .invalidCoordinate(index: index, point)
        }
        for (index, segment) in route.segments.enumerated() where !(segment.speedLimit.isFinite && segment.speedLimit > 0) {
            throw .invalidSpeedLimit(index: index, value: segment.speedLimit)
        }
        self.route = route
        self.options = options

        // Repeated points would make zero-length segments without a direction.
        var kept: [GeoCoordinate] = [points[0]], keptDistances = [0.0], keptLimits: [Double] = []
        var keptIndex = [Int](repeating: 0, count: points.count)
        for index in points.indices.dropFirst() {
            let step = kept[kept.count - 1].metres(to: points[index])
            if step >= 0.01 {
                kept.append(points[index])
                keptDistances.append(keptDistances[keptDistances.count - 1] + step)
                keptLimits.append(route.segments[index - 1].speedLimit)
            }
            keptIndex[index] = kept.count - 1
        }
        guard kept.count >= 2 else { throw .zeroLength }
        let totalLength = keptDistances[keptDistances.count - 1]

        // Stops: every Nth major intersection, set back to the stop line, and the distances asked for.
        var stopDistances: [Double] = []
        if options.trafficLightInterval > 0 {
            let intersections = route.majorIntersections.filter { (1..<(points.count - 1)).contains($0) }
            for (ordinal, index) in intersections.enumerated() where (ordinal + 1) % options.trafficLightInterval == 0 {
                stopDistances.append(keptDistances[keptIndex[index]] - options.stopLineSetback)
            }
        }
        stopDistances.append(contentsOf: options.stopDistances.prefix(DriveOptions.maximumStopDistances))
        let margin = 5.0
        stopDistances = stopDistances.filter { $0.isFinite && $0 >= margin && $0 <= totalLength - margin }.sorted()
        var distinctStops: [Double] = []
        for distance in stopDistances where distance - (distinctStops.last ?? -.infinity) >= 1 {
            distinctStops.append(distance)
        }

        // A vertex at each stop, reusing a vertex within half a metre.
        var driven: [GeoCoordinate] = [kept[0]], drivenDistances = [0.0], drivenLimits: [Double] = []
        var isStop = [false]
        var nextStop = 0
        for segment in 0..<(kept.count - 1) {
            let start = keptDistances[segment], end = keptDistances[segment + 1]
            while nextStop < distinctStops.count, distinctStops[nextStop] < end - 0.5 {
                let distance = distinctStops[nextStop]
                nextStop += 1
                if distance <= drivenDistances[drivenDistances.count - 1] + 0.5 {
                    isStop[isStop.count - 1] = true
                    continue
                }
                driven.append(GeoMath.interpolate(kept[segment], kept[segment + 1], (distance - start) / (end - start)))
                drivenDistances.append(distance)
                drivenLimits.append(keptLimits[segment])
                isStop.append(true)
            }
            driven.append(kept[segment + 1])
            drivenDistances.append(end)
            drivenLimits.append(keptLimits[segment])
            isStop.append(false)
            while nextStop < distinctStops.count, distinctStops[nextStop] <= end + 0.5 {
                isStop[isStop.count - 1] = true
                nextStop += 1
            }
        }
        isStop[isStop.count - 1] = false
        self.points = driven
        distances = drivenDistances
        limits = drivenLimits

        // The highest speed allowed at each vertex: both neighbouring limits, the turn, stops.
        let count = driven.count
        var speeds = [Double](repeating: 0, count: count)
        for index in 1..<(count - 1) {
            if isStop[index] { continue }
            let turn = Self.turnSpeed(at: index, points: driven, distances: drivenDistances, options: options)
            speeds[index] = min(drivenLimits[index - 1], drivenLimits[index], turn)
        }
        let a = options.acceleration, b = options.braking
        for index in 1..<count {
            let length = drivenDistances[index] - drivenDistances[index - 1]
            speeds[index] = min(speeds[index], (speeds[index - 1] * speeds[index - 1] + 2 * a * length).squareRoot())
        }
        for index in stride(from: count - 2, through: 0, by: -1) {
            let length = drivenDistances[index + 1] - drivenDistances[index]
            speeds[index] = min(speeds[index], (speeds[index + 1] * speeds[index + 1] + 2 * b * length).squareRoot())
        }

        // Each segment: speed up towards its limit, cruise, brake to the next vertex's speed.
        var random = SplitMix64(seed: options.seed)
        var pieces: [Piece] = []
        pieces.reserveCapacity(3 * count)
        var stops: [Stop] = []
        var time = 0.0
        func append(_ startDistance: Double, _ endDistance: Double, _ startSpeed: Double, _ acceleration: Double, _ duration: Double) {
            guard duration > 0 else { return }
            pieces.append(Piece(startTime: time, startDistance: startDistance, endDistance: endDistance,
                                startSpeed: startSpeed, acceleration: acceleration))
            time += duration
        }
        for index in 0..<(count - 1) {
            let start = drivenDistances[index], length = drivenDistances[index + 1] - start
            let entry = speeds[index], exit = speeds[index + 1], limit = drivenLimits[index]
            var peak = ((2 * a * b * length + b * entry * entry + a * exit * exit) / (a + b)).squareRoot()
            peak = min(limit, max(peak, entry, exit))
            let speedUp = min(max((peak * peak - entry * entry) / (2 * a), 0), length)
            let slowDown = min(max((peak * peak - exit * exit) / (2 * b), 0), length - speedUp)
            let cruise = max(length - speedUp - slowDown, 0)
            append(start, start + speedUp, entry, a, (peak - entry) / a)
            if cruise > 0 { append(start + speedUp, start + speedUp + cruise, peak, 0, cruise / peak) }
            append(start + length - slowDown, start + length, peak, -b, (peak - exit) / b)
            if isStop[index + 1] {
                let dwell = options.stopDwell.lowerBound
                    + (options.stopDwell.upperBound - options.stopDwell.lowerBound) * random.nextUnit()
                stops.append(Stop(distance: start + length, arrival: time, dwell: dwell))
                append(start + length, start + length, 0, 0, dwell)
            }
        }
        self.pieces = pieces
        self.stops = stops
        duration = time
    }

    private static func validate(_ options: DriveOptions) throws(DrivePlanError) {
        func positive(_ value: Double, _ name: String) throws(DrivePlanError) {
            guard value.isFinite, value > 0 else { throw .invalidOption("\(name) is \(value); it must be a positive number") }
        }
        try positive(options.acceleration, "acceleration")
        try positive(options.braking, "braking")
        try positive(options.lateralAcceleration, "lateralAcceleration")
        try positive(options.minimumTurnSpeed, "minimumTurnSpeed")
        try positive(options.turnBaseline, "turnBaseline")
        try positive(options.headingSmoothingDistance, "headingSmoothingDistance")
        guard options.uTurnAngle.isFinite, (0...180).contains(options.uTurnAngle) else {
            throw .invalidOption("uTurnAngle is \(options.uTurnAngle); it must be in 0...180 degrees")
        }
        guard options.trafficLightInterval >= 0 else {
            throw .invalidOption("trafficLightInterval is \(options.trafficLightInterval); use 0 for no traffic lights")
        }
        guard options.stopLineSetback.isFinite, options.stopLineSetback >= 0 else {
            throw .invalidOption("stopLineSetback is \(options.stopLineSetback); it must be a distance of 0 or more")
        }
        guard options.stopDwell.lowerBound >= 0, options.stopDwell.upperBound.isFinite else {
            throw .invalidOption("stopDwell is \(options.stopDwell); it must be a finite range of 0 seconds or more")
        }
    }

    /// The fastest speed through the turn at vertex `index`: the turn is taken as a circular arc
    /// tangent to the chords to the points `turnBaseline` metres either side, touching them halfway.
    private static func turnSpeed(at index: Int, points: [GeoCoordinate], distances: [Double],
                                  options: DriveOptions) -> Double {
        let here = distances[index], total = distances[distances.count - 1]
        let before = min(options.turnBaseline, here), after = min(options.turnBaseline, total - here)
        let incoming = position(atDistance: here - before, points: points, distances: distances).offset(to: points[index])
        let outgoing = points[index].offset(to: position(atDistance: here + after, points: points, distances: distances))
        let lengths = (incoming * incoming).sum().squareRoot() * (outgoing * outgoing).sum().squareRoot()
        guard lengths > 0 else { return .infinity }
        let cosine = min(max((incoming * outgoing).sum() / lengths, -1), 1)
        let angle = acos(cosine)
        if angle * 180 / .pi > options.uTurnAngle { return 0 }
        guard angle > 1e-4 else { return .infinity }
        let radius = min(before, after) / 2 / tan(angle / 2)
        return max((options.lateralAcceleration * radius).squareRoot(), options.minimumTurnSpeed)
    }

    /// The index of the segment holding distance `distance` (the last vertex at or before it,
    /// never the final vertex).
    @inline(__always)
    private static func segmentIndex(atDistance distance: Double, distances: [Double]) -> Int {
        var low = 0, high = distances.count - 2
        while low < high {
            let middle = (low + high + 1) / 2
            if distances[middle] <= distance { low = middle } else { high = middle - 1 }
        }
        return low
    }

    @inline(__always)
    private static func position(atDistance distance: Double, points: [GeoCoordinate], distances: [Double]) -> GeoCoordinate {
        let segment = segmentIndex(atDistance: distance, distances: distances)
        let start = distances[segment], length = distances[segment + 1] - start
        let fraction = min(max((distance - start) / length, 0), 1)
        return GeoMath.interpolate(points[segment], points[segment + 1], fraction)
    }

    /// The point `distance` metres along the route, clamped to its ends.
    package func position(atDistance distance: Double) -> GeoCoordinate {
        Self.position(atDistance: min(max(distance.isNaN ? 0 : distance, 0), length), points: points, distances: distances)
    }

    /// The speed limit at `distance` metres along the route, metres per second.
    package func speedLimit(atDistance distance: Double) -> Double {
        limits[Self.segmentIndex(atDistance: distance.isNaN ? 0 : distance, distances: distances)]
    }

    /// Distance driven and speed at `time` seconds (clamped to 0...duration).
    private func motion(at time: Double) -> (distance: Double, speed: Double) {
        guard !pieces.isEmpty else { return (0, 0) }
        let time = min(max(time.isNaN ? 0 : time, 0), duration)
        var low = 0, high = pieces.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if pieces[middle].startTime <= time { low = middle } else { high = middle - 1 }
        }
        let piece = pieces[low]
        let elapsed = time - piece.startTime
        let speed = max(piece.startSpeed + piece.acceleration * elapsed, 0)
        let distance = piece.startDistance + piece.startSpeed * elapsed + piece.acceleration * elapsed * elapsed / 2
        return (min(max(distance, piece.startDistance), piece.endDistance), time >= duration ? 0 : speed)
    }

    /// Where the car is `time` seconds after the start; before the start it waits at the first
    /// point, after ``duration`` it stands at the last.
    package func state(at time: Double) -> VehicleState {
        let (distance, speed) = motion(at: time)
        let window = options.headingSmoothingDistance
        let behind = Self.position(atDistance: max(distance - window, 0), points: points, distances: distances)
        let ahead = Self.position(atDistance: min(distance + window, length), points: points, distances: distances)
        var direction = behind.offset(to: ahead)
        if (direction * direction).sum() < 1e-6 {
            // Only at a U-turn do the points behind and ahead meet; the segment's own direction stands in.
            let segment = Self.segmentIndex(atDistance: distance, distances: distances)
            direction = points[segment].offset(to: points[segment + 1])
        }
        let finished = !(time < duration)
        return VehicleState(coordinate: Self.position(atDistance: distance, points: points, distances: distances),
                            heading: GeoMath.heading(of: direction), speed: speed, distance: distance,
                            isStopped: speed <= 1e-9, isFinished: finished && !time.isNaN)
    }
}
