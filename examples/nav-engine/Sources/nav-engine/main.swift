// A navigation engine projecting its map into a car's head unit over SmartDeviceLink, in two files.
//
// It draws the bundled Helsinki map with a projection session, shows a route, drives a car along
// it under the session's follow camera, highlights the car's lane with its own OpenGL ES drawing
// as a custom layer of the map (LaneHighlight.swift), plays a voice prompt before each turn,
// and streams it all as H.264 into the head unit until the car arrives or --seconds have passed;
// then it closes everything. The head unit decides the size, the frame rate and when video may
// flow; the engine only sets the route, the car and the prompts.
//
//   usage: nav-engine HOST:PORT [--seconds N] [--speed KMH] [--assets FOLDER]
//   (by default until the car arrives, at 40 km/h, with the data in ../../assets: the
//   repository's, seen from examples/nav-engine)
//
// Into the in-repo head unit, from the repository root, in two terminals:
//   swift run carwindow headunit --port 12345 --out out/received.h264
//   swift run --package-path examples/nav-engine nav-engine 127.0.0.1:12345 --assets assets
//
// Exit status: 0 once the drive has streamed to its end; 64 a bad argument; 66 unreadable map
// data; 69 a head unit that cannot be reached, never lets the app stream, or is lost; 70 anything
// else (no OpenGL ES, say).
import CarWindowMap          // tiles, styles, fonts, the render context (with CarWindowGeo and CarWindowStyle)
import CarWindowProjection   // the session: draws when the picture changes, encodes, follows the car
import CarWindowSDL          // the head unit: SmartDeviceLink's connection, video and voice prompts
import Foundation

/// Why the engine stops early: a message for a person, and the exit status.
struct Failure: Error { var message: String, status: Int32 }

struct Options {
    var host = "", port = 0
    var seconds: Double?                                              // nil: until the car arrives
    var speed = 40 / 3.6                                              // metres per second
    var assets = URL(fileURLWithPath: "../../assets", isDirectory: true)
}

func parseOptions(_ arguments: [String]) throws(Failure) -> Options {
    let usage = "usage: nav-engine HOST:PORT [--seconds 1-3600] [--speed 5-200 km/h] [--assets FOLDER]"
    func bad(_ why: String) -> Failure { Failure(message: "\(why)\n\(usage)", status: 64) }
    var options = Options(), rest = arguments[...], headUnit: String?
    while let argument = rest.popFirst() {
        switch argument {
        case "-h", "--help":
            throw Failure(message: usage, status: 0)
        case "--assets":
            guard let folder = rest.popFirst() else { throw bad("--assets needs a folder") }
            options.assets = URL(fileURLWithPath: folder, isDirectory: true)
        case "--seconds", "--speed":
            let (range, unit) = argument == "--seconds" ? (1.0...3600, "seconds") : (5.0...200, "km/h")
            guard let text = rest.popFirst(), let value = Double(text), range.contains(value) else {
                throw bad("\(argument) takes \(unit) in \(Int(range.lowerBound))-\(Int(range.upperBound))")
            }
            if argument == "--seconds" { options.seconds = value } else { options.speed = value / 3.6 }
        default:
            guard !argument.hasPrefix("-"), headUnit == nil else { throw bad("unexpected argument '\(argument)'") }
            headUnit = argument
        }
    }
    // The last colon separates the port, so "[::1]:12345" works too.
    guard let text = headUnit, let colon = text.lastIndex(of: ":"), colon > text.startIndex,
          let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
        throw bad("give the head unit as HOST:PORT with the port in 1-65535, like 127.0.0.1:12345" + (headUnit.map { "; got '\($0)'" } ?? ""))
    }
    options.host = String(text[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
    options.port = port
    return options
}

// MARK: - The route, as an engine's router would give it

/// Kasarmitori to Hakaniemi on the roads of the bundled extract (its transportation layer,
/// simplified to within 4 m), and the turns along it by the index of their point.
let route = [(60.16562, 24.94873), (60.16565, 24.94969), (60.17219, 24.94899), (60.17261, 24.94889),
             (60.17271, 24.94866), (60.17369, 24.94984), (60.17394, 24.95029), (60.17411, 24.95041),
             (60.17795, 24.95014), (60.17850, 24.95069)].map { GeoCoordinate(latitude: $0.0, longitude: $0.1) }
let turns: [(point: Int, says: String)] = [(1, "turn left onto Fabianinkatu"), (4, "turn right onto Kaisaniemenkatu"),
                                           (7, "keep left onto Unioninkatu"), (8, "keep right onto Siltasaarenkatu")]
/// How far ahead of a turn its prompt plays.
let announceMetres = 150.0

/// The vector from `a` to `b` in metres (x east, y north): flat is exact enough within a city.
func offset(_ a: GeoCoordinate, _ b: GeoCoordinate) -> (x: Double, y: Double) {
    let metresPerDegree = 111_320.0
    return ((b.longitude - a.longitude) * metresPerDegree * cos(a.latitude * .pi / 180),
            (b.latitude - a.latitude) * metresPerDegree)
}
/// Metres from the route's start to each of its points.
let routeMetres = route.indices.reduce(into: [Double]()) { sums, index in
    let step = index == 0 ? (x: 0.0, y: 0.0) : offset(route[index - 1], route[index])
    sums.append((sums.last ?? 0) + (step.x * step.x + step.y * step.y).squareRoot())
}
/// Where the car is `metres` along the route, and its heading (degrees clockwise from north).
func position(atMetres metres: Double) -> (GeoCoordinate, Double) {
    let segment = min(max(routeMetres.firstIndex { $0 >= metres } ?? route.count - 1, 1), route.count - 1)
    let (a, b) = (route[segment - 1], route[segment])
    let t = min(max((metres - routeMetres[segment - 1]) / (routeMetres[segment] - routeMetres[segment - 1]), 0), 1)
    let step = offset(a, b)
    return (GeoCoordinate(latitude: a.latitude + (b.latitude - a.latitude) * t,
                          longitude: a.longitude + (b.longitude - a.longitude) * t), atan2(step.x, step.y) * 180 / .pi)
}

// MARK: - The engine

func run(_ options: Options) async throws {
    // The map data: vector tiles, a MapLibre style (its sprite beside it) and fonts for labels.
    let data: (tiles: any TileSource, style: Style, fonts: FontLibrary)
    do {
        data = (try openTileSource(at: options.assets.appendingPathComponent("helsinki.pmtiles")),
                try Style(contentsOf: options.assets.appendingPathComponent("styles/day.json")),
                try FontLibrary(directory: options.assets.appendingPathComponent("fonts", isDirectory: true)))
    } catch {
        throw Failure(message: "cannot read the map data in \(options.assets.path) (give --assets the repository's assets folder): \(error)",
                      status: 66)
    }
    let context: RenderContext                               // headless EGL on its own render thread
    do { context = try await RenderContext() } catch {
        throw Failure(message: "no headless OpenGL ES: \(error)", status: 70)
    }
    let session = ProjectionSession(configuration: ProjectionSessionConfiguration(
        tiles: SharedTileCache(source: data.tiles), dayStyle: data.style, fonts: data.fonts,
        camera: Camera(center: route[0], zoom: 17, pitch: 40)), context: context)
    // The link registers as a NAVIGATION app; after the head unit is lost it tries 5 times.
    var connection = SDLConnection.Configuration(appName: "Nav Engine", appID: "nav-engine-example")
    connection.reconnect = SDLReconnectPolicy(maximumAttempts: 5)
    let headUnit = "\(options.host):\(options.port)"
    let link = SDLProjectionLink(session: session, connection: connection,
                                 transport: { SDLTCPTransport(host: options.host, port: options.port) })

    // What the session reports; taken before anything starts, so that nothing is missed.
    let events = session.events
    let watcher = Task {
        for await event in events {
            switch event {
            case .streamStarted(let stream, let settings):
                print("streaming \(stream.encodedSize) at \(Int(settings.framesPerSecond)) fps, \(settings.bitrate / 1000) kbit/s")
            case .controlTapped(let control): print("the driver tapped \(control)")
            case .warning(let warning): print("warning: \(warning)")
            case .error(let error): print("error: \(error)")
            default: break
            }
        }
    }
    // The first picture already shows the route, the destination and the car, with the camera on it.
    await session.setRoute(route)
    await session.setDestination(route[route.count - 1])
    await session.followVehicle(FollowCameraConfiguration())   // course-up, the car 3/4 down the screen
    await session.updateVehicle(VehicleFix(coordinate: route[0], heading: position(atMetres: 0).1, speed: 0))
    // The engine's own GL inside the map: its lane, highlighted under the route line.
    let highlight = LaneHighlight()
    highlight.move(to: route[0], heading: position(atMetres: 0).1, ahead: 40)
    do { try await session.addCustomLayer(highlight.layer, below: "route-casing") } catch {
        throw Failure(message: "the style cannot take the lane highlight: \(error)", status: 70)
    }

    var failure: (any Error)?
    do {
        // The link runs until it is stopped or the head unit is gone for good; the drive beside it.
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                do { try await link.run() } catch {
                    throw Failure(message: "cannot reach the head unit at \(headUnit): \(error)", status: 69)
                }
                return false
            }
            group.addTask {
                try await waitUntilStreaming(session, link, headUnit: headUnit)
                try await drive(session, prompts: link.prompts, highlight: highlight, options: options)
                return true
            }
            do {
                if try await group.next() == false {
                    let why = await link.lastDisconnection.map { "\($0)" } ?? "it closed the connection"
                    throw Failure(message: "lost the head unit at \(headUnit): \(why)", status: 69)
                }
            } catch {
                await link.stop()                            // ends run(); the drive is cancelled with the group
                throw error
            }
            let statistics = await session.statistics
            print("sent \(statistics.framesSent) pictures (\(statistics.framesRendered) drawn, \(statistics.keepAlives) keep-alives), \(statistics.bytesSent / 1000) kB")
            await link.stop()                                // ends the video, unregisters the app, closes the connection
        }
    } catch {
        failure = error
    }
    await session.close()                                    // ends its events and frees its GL objects
    await watcher.value
    await context.shutdown()
    if let failure { throw failure }
}

/// Waits until the head unit lets the session stream (its HMI level, capability and video
/// service decide), with a guard against one that never does.
func waitUntilStreaming(_ session: ProjectionSession, _ link: SDLProjectionLink, headUnit: String) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while await session.state != .streaming {
        if let refused = await link.videoFailure {
            throw Failure(message: "the head unit at \(headUnit) refused the video: \(refused)", status: 69)
        }
        if let unusable = await link.displayFailure {
            throw Failure(message: "the head unit at \(headUnit) offers a screen the app cannot stream: \(unusable)", status: 69)
        }
        guard ContinuousClock.now < deadline else {
            throw Failure(message: "the head unit at \(headUnit) did not let the app stream within 60 s", status: 69)
        }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// Drives the car along the route at a steady speed, handing the session one position a second
/// as positioning would; the follow camera moves the car and the map smoothly in between.
func drive(_ session: ProjectionSession, prompts: SDLPromptPlayer, highlight: LaneHighlight, options: Options) async throws {
    let clock = ContinuousClock(), start = clock.now, length = routeMetres[routeMetres.count - 1]
    var tick = 0, announced = 0, arrowAt: Double?, playing: [Task<PromptOutcome, Never>] = []
    while true {
        let seconds = (clock.now - start) / .seconds(1)
        let metres = min(seconds * options.speed, length)
        let (coordinate, heading) = position(atMetres: metres)
        let arrived = metres >= length
        highlight.move(to: coordinate, heading: heading, ahead: 40 + options.speed)   // a fix a second
        await session.updateVehicle(VehicleFix(coordinate: coordinate, heading: heading, speed: arrived ? 0 : options.speed))
        await session.setRouteProgress(metres)               // splits driven from remaining; no new geometry
        // The arrow shows the next turn ahead; its prompt plays once, `announceMetres` before it.
        let next = turns.first { routeMetres[$0.point] > metres }
        let nextAt = next.map { routeMetres[$0.point] }
        if nextAt != arrowAt {
            arrowAt = nextAt
            await session.setManeuver(atMetres: nextAt)
        }
        while announced < turns.count, routeMetres[turns[announced].point] - metres <= announceMetres {
            let turn = turns[announced]
            announced += 1
            guard routeMetres[turn.point] > metres else { continue }   // passed already: too late to say
            print(String(format: "in %.0f m, %@", routeMetres[turn.point] - metres, turn.says))
            // A chime stands in for speech: a text-to-speech WAV goes the same way, as AudioPrompt(wav:).
            playing.append(Task { await prompts.play(AudioPrompt.chime()) })
        }
        if arrived || options.seconds.map({ seconds >= $0 }) == true {
            print(String(format: arrived ? "arrived after %.0f s" : "stopped after %.0f s, %.0f m along the route", seconds, metres))
            break
        }
        tick += 1                                            // the next fix: a second on, or at --seconds
        try await clock.sleep(until: start + .seconds(min(Double(tick), options.seconds ?? .infinity)))
    }
    var outcomes: [PromptOutcome] = []
    for prompt in playing { outcomes.append(await prompt.value) }         // a prompt under way ends first
    let others = outcomes.filter { $0 != .played }.map(\.description)
    print("voice prompts: \(outcomes.count - others.count) played" + (others.isEmpty ? "" : ", " + others.joined(separator: ", ")))
}

do {
    try await run(try parseOptions(Array(CommandLine.arguments.dropFirst())))
} catch let failure as Failure {
    if failure.status == 0 { print(failure.message) } else { FileHandle.standardError.write(Data("nav-engine: \(failure.message)\n".utf8)) }
    exit(failure.status)
} catch {
    FileHandle.standardError.write(Data("nav-engine: \(error)\n".utf8))
    exit(70)
}
