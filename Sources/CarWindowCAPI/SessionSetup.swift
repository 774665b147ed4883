import Foundation
import CCarWindow
import CarWindow

/// Reading a `carwindow_session_config` and the inputs it names, each value checked before use.
enum SessionSetup {
    /// The config's size as callers of earlier minor versions fill it: each ends where the
    /// first field added in the next minor version begins.
    static let earlierSizes = Set([
        MemoryLayout<carwindow_session_config>.offset(of: \.encoder_threads),  // minor 1
        MemoryLayout<carwindow_session_config>.offset(of: \.content),          // minor 2
        MemoryLayout<carwindow_session_config>.offset(of: \.cache_path),       // minors 3 to 7
    ].compactMap { $0 })

    /// The fields a caller's config holds: all of ours from a caller of this version or newer
    /// (a newer caller's extra fields at the end are not ours to read); from a caller of an
    /// earlier minor version, its fields over our defaults for the ones added since.
    static func copy(_ pointer: UnsafePointer<carwindow_session_config>?) throws(APIFailure) -> carwindow_session_config {
        guard let pointer else { throw .invalidArgument("carwindow_session_create: config is NULL; fill one with carwindow_session_config_init") }
        // struct_size is the first field, so it can be read whatever the caller's version.
        let declared = UnsafeRawPointer(pointer).load(as: Int.self)
        let ours = MemoryLayout<carwindow_session_config>.size
        if declared >= ours { return pointer.pointee }
        guard earlierSizes.contains(declared) else {
            throw .invalidArgument("carwindow_session_create: config.struct_size is \(declared), expected \(ours) or more; "
                + "fill the config with carwindow_session_config_init before setting fields")
        }
        var config = carwindow_session_config()
        capiSessionConfigInit(&config)
        withUnsafeMutableBytes(of: &config) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: pointer, count: declared))
        }
        config.struct_size = ours
        return config
    }

    /// `encoder_threads`: 0 for automatic, else a count OpenH264 accepts.
    static func encoderThreads(_ config: carwindow_session_config) throws(APIFailure) -> EncoderThreads {
        let allowed = UInt32(EncoderThreads.allowed.lowerBound)...UInt32(EncoderThreads.allowed.upperBound)
        try checkRange(config.encoder_threads, allowed, "encoder_threads", zeroAllowed: true)
        return config.encoder_threads == 0 ? .automatic : .fixed(Int(config.encoder_threads))
    }

    /// `content` with `on_draw`: nil for the map, else how the engine supplies its picture.
    static func engineContent(_ config: carwindow_session_config, _ what: String) throws(APIFailure) -> EngineContent? {
        try checkRange(config.content, 0...2, "content")
        switch config.content {
        case CARWINDOW_CONTENT_GL:
            guard let function = config.on_draw else {
                throw .invalidArgument("\(what): config.content is CARWINDOW_CONTENT_GL but on_draw is NULL; give the function that draws each picture")
            }
            return .gl(DrawCallback(function: function, userData: config.draw_user_data).draw)
        default:
            guard config.on_draw == nil else {
                throw .invalidArgument("\(what): config.on_draw is set but content is not CARWINDOW_CONTENT_GL; set content to it, or on_draw to NULL")
            }
            return config.content == CARWINDOW_CONTENT_PIXELS ? .pixels : nil
        }
    }

    /// The security layer of `sdl_certificate_path` and `sdl_private_key_path`: OpenSSL with
    /// them, loaded now so that a bad file fails the create.
    static func security(_ config: carwindow_session_config, hasHeadUnit: Bool, _ what: String) throws(APIFailure) -> SDLSecurityConfiguration? {
        try checkRange(config.sdl_protection, 0...1, "sdl_protection")
        let certificate = try string(config.sdl_certificate_path, "sdl_certificate_path")
        let key = try string(config.sdl_private_key_path, "sdl_private_key_path")
        guard let certificate else {
            if key != nil { throw .invalidArgument("\(what): config.sdl_private_key_path needs sdl_certificate_path") }
            return nil
        }
        guard let key else { throw .invalidArgument("\(what): config.sdl_certificate_path needs sdl_private_key_path") }
        guard hasHeadUnit else { throw .invalidArgument("\(what): config.sdl_certificate_path protects a head unit link; set sdl_host and sdl_port") }
        do {
            let library = try OpenSSLSecurityLibrary(certificateFile: certificate, privateKeyFile: key)
            return SDLSecurityConfiguration(libraries: [library],
                                            policy: config.sdl_protection == CARWINDOW_PROTECTION_PREFERRED ? .preferred : .required)
        } catch {
            throw .input("\(what): \(error.message)")
        }
    }

    static func string(_ pointer: UnsafePointer<CChar>?, _ field: String, required: Bool = false) throws(APIFailure) -> String? {
        guard let pointer else {
            if required { throw .invalidArgument("carwindow_session_create: config.\(field) is NULL but required") }
            return nil
        }
        let text = String(cString: pointer)
        if text.isEmpty {
            if required { throw .invalidArgument("carwindow_session_create: config.\(field) is empty but required") }
            return nil
        }
        return text
    }

    /// A style from a path or from JSON text (text starting with '{').
    static func style(_ text: String, _ what: String) throws(APIFailure) -> Style {
        do {
            if text.drop(while: \.isWhitespace).first == "{" {
                return try Style(data: Data(text.utf8))
            }
            return try Style(contentsOf: URL(fileURLWithPath: text))
        } catch {
            throw .input("\(what): the style could not be read: \(error); pass a MapLibre style .json path or its JSON text")
        }
    }

    static func checkCamera(_ camera: carwindow_camera, _ function: String) throws(APIFailure) -> Camera {
        let values = [camera.center.latitude, camera.center.longitude, camera.zoom, camera.bearing, camera.pitch]
        guard values.allSatisfy(\.isFinite) else {
            throw .invalidArgument("\(function): every camera value must be finite (got latitude \(camera.center.latitude), "
                + "longitude \(camera.center.longitude), zoom \(camera.zoom), bearing \(camera.bearing), pitch \(camera.pitch))")
        }
        guard abs(camera.center.latitude) <= 90, abs(camera.center.longitude) <= 180 else {
            throw .invalidArgument("\(function): the camera's centre must lie within latitude -90...90 and longitude -180...180 "
                + "(got \(camera.center.latitude), \(camera.center.longitude))")
        }
        guard (0...Camera.maximumZoom).contains(camera.zoom) else {
            throw .invalidArgument("\(function): zoom must be 0...\(Camera.maximumZoom) (got \(camera.zoom))")
        }
        guard (0...Camera.maximumPitch).contains(camera.pitch) else {
            throw .invalidArgument("\(function): pitch must be 0...\(Camera.maximumPitch) degrees (got \(camera.pitch))")
        }
        return Camera(center: GeoCoordinate(latitude: camera.center.latitude, longitude: camera.center.longitude),
                      zoom: camera.zoom, bearing: camera.bearing, pitch: camera.pitch)
    }

    static func checkRange<T: Comparable>(_ value: T, _ range: ClosedRange<T>, _ field: String,
                                          zeroAllowed: Bool = false) throws(APIFailure) where T: Numeric {
        if zeroAllowed && value == 0 { return }
        guard range.contains(value) else {
            throw .invalidArgument("carwindow_session_create: config.\(field) must be \(range.lowerBound)...\(range.upperBound)"
                + (zeroAllowed ? " or 0" : "") + " (got \(value))")
        }
    }

    /// The sizes the app draws, from the config's limits (0: none).
    static func supportedSizes(_ config: carwindow_session_config) throws(APIFailure) -> SupportedSizes {
        let limits = [config.min_width, config.min_height, config.max_width, config.max_height]
        guard limits.contains(where: { $0 != 0 }) else { return .any }
        guard limits.allSatisfy({ $0 <= 16384 }) else {
            throw .invalidArgument("carwindow_session_create: size limits must be 0...16384 pixels (got min \(config.min_width)x\(config.min_height), max \(config.max_width)x\(config.max_height))")
        }
        let largest = 16384
        let minimum = VideoSize(width: Int(config.min_width), height: Int(config.min_height))
        let maximum = VideoSize(width: config.max_width == 0 ? largest : Int(config.max_width),
                                height: config.max_height == 0 ? largest : Int(config.max_height))
        guard minimum.width <= maximum.width, minimum.height <= maximum.height else {
            throw .invalidArgument("carwindow_session_create: the smallest size \(minimum) exceeds the largest \(maximum)")
        }
        let range = SupportedSizeRange(minimumSize: minimum, maximumSize: maximum)
        return SupportedSizes(landscape: range, portrait: range)
    }

    /// The screen when there is no head unit: the capability JSON's, or width, height and scale.
    static func display(_ config: carwindow_session_config) throws(APIFailure) -> HeadUnitDisplay {
        if let json = try string(config.capability_json, "capability_json") {
            do {
                return try VideoStreamingCapability(json: Data(json.utf8)).headUnitDisplay
            } catch {
                throw .input("carwindow_session_create: config.capability_json is not a usable SDL VideoStreamingCapability: \(error)")
            }
        }
        try checkRange(config.width, 16...4096, "width")
        try checkRange(config.height, 16...4096, "height")
        return HeadUnitDisplay(size: VideoSize(width: Int(config.width), height: Int(config.height)), scale: config.scale,
                               preferredFramesPerSecond: config.frames_per_second > 0 ? Int(config.frames_per_second.rounded()) : nil,
                               maximumBitrate: config.bitrate > 0 ? Int(config.bitrate) : nil)
    }

    /// A host and port, both or neither.
    static func endpoint(_ host: UnsafePointer<CChar>?, _ port: UInt16, _ name: String) throws(APIFailure) -> (host: String, port: Int)? {
        guard let host = try string(host, "\(name)_host") else {
            if port != 0 { throw .invalidArgument("carwindow_session_create: config.\(name)_port is set but \(name)_host is NULL") }
            return nil
        }
        guard port != 0 else { throw .invalidArgument("carwindow_session_create: config.\(name)_port must be 1...65535 with \(name)_host") }
        return (host, Int(port))
    }
}
