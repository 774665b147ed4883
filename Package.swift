// swift-tools-version: 6.2
import PackageDescription

/// Our own targets treat every warning as an error; dependencies are left alone.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error), .enableUpcomingFeature("MemberImportVisibility")]

/// scripts/fuzz.sh sets CARWINDOW_FUZZING to the path of libFuzzer's driver library (compiler-rt's
/// fuzzer_no_main): the libraries and the fuzz targets are then compiled with libFuzzer's coverage
/// and AddressSanitizer, and the fuzz executable links the driver. Per target rather than with
/// -Xswiftc, because the shader tool that runs during the build must not get them.
let fuzzerLibrary = Context.environment["CARWINDOW_FUZZING"]
let fuzzing = fuzzerLibrary != nil
let fuzzInstrumented: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []
let fuzzLinking: [LinkerSetting] = fuzzerLibrary.map {
    [.unsafeFlags(["-sanitize=address", "-Xlinker", $0]), .linkedLibrary("stdc++")]
} ?? []
let library = strict + fuzzInstrumented

func system(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let logging = Target.Dependency.product(name: "Logging", package: "swift-log")
let systemPackage = Target.Dependency.product(name: "SystemPackage", package: "swift-system")
let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")

/// The test target of library target `name`: Tests/<name>Tests, with the shared test support.
func tests(_ name: String, _ more: [Target.Dependency] = []) -> Target {
    .testTarget(name: "\(name)Tests", dependencies: [.target(name: name), "CarWindowTestSupport"] + more, swiftSettings: strict)
}

// The data flow, each target depending only on those above it:
//   Geo (tiles, camera) -> Style -> Map (geometry, text, GL, drawing, NV12 conversion)
//   Geo, Style -> RemoteTiles (tiles on servers, disk cache, a style's own sources)
//   VideoCore (frames, access units, sinks' protocol, render thread) -> Map, H264
//   H264 (OpenH264, VA-API, bitstream) -> Sinks (files, RTP) -> Projection (session) -> SDL
//   SDLProtocol (frames, BSON, RPC, security; no I/O) sits below: VideoCore -> SDLProtocol -> SDL
//   SDLTesting (head-unit simulator) and Simulation (routes, simulated drives) are for tools.
let package = Package(
    name: "CarWindow",
    products: [
        .library(name: "CarWindow", targets: ["CarWindow"]),
        .library(name: "CarWindowGeo", targets: ["CarWindowGeo"]),
        .library(name: "CarWindowStyle", targets: ["CarWindowStyle"]),
        .library(name: "CarWindowMap", targets: ["CarWindowMap"]),
        .library(name: "CarWindowRemoteTiles", targets: ["CarWindowRemoteTiles"]),
        .library(name: "CarWindowH264", targets: ["CarWindowH264"]),
        .library(name: "CarWindowSinks", targets: ["CarWindowSinks"]),
        .library(name: "CarWindowProjection", targets: ["CarWindowProjection"]),
        .library(name: "CarWindowSDLProtocol", targets: ["CarWindowSDLProtocol"]),
        .library(name: "CarWindowSDLSecurity", targets: ["CarWindowSDLSecurity"]),
        .library(name: "CarWindowSDL", targets: ["CarWindowSDL"]),
        .library(name: "CarWindowSDLTesting", targets: ["CarWindowSDLTesting"]),
        // The C API (Sources/CCarWindow/include/carwindow.h) as libCarWindowC.so, soname
        // libcarwindow.so.0; scripts/c-api.sh stages it with the header and a pkg-config file.
        .library(name: "CarWindowC", type: .dynamic, targets: ["CarWindowCAPI"]),
        .executable(name: "carwindow", targets: ["carwindow"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // `swift package generate-documentation` (scripts/docs.sh); a command plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        system("CEGL", pkgConfig: "egl", apt: ["libegl-dev"]),
        system("CGLES", pkgConfig: "glesv2", apt: ["libgles-dev"]),
        system("CGBM", pkgConfig: "gbm", apt: ["libgbm-dev"]),
        system("CFreeType", pkgConfig: "freetype2", apt: ["libfreetype-dev"]),
        system("CZlib", pkgConfig: "zlib", apt: ["zlib1g-dev"]),
        system("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
        system("CPNG", pkgConfig: "libpng", apt: ["libpng-dev"]),
        system("COpenH264", pkgConfig: "openh264", apt: ["libopenh264-dev"]),
        system("CVA", pkgConfig: "libva-drm", apt: ["libva-dev"]),

        // Turns the GLSL files under shaders/ into Swift string constants at build time,
        // so the renderer carries its shaders and needs no files at run time.
        .executableTarget(name: "carwindow-embed-shaders", path: "Sources/carwindow-embed-shaders",
                          swiftSettings: strict),
        .plugin(name: "EmbedShadersPlugin", capability: .buildTool(),
                dependencies: ["carwindow-embed-shaders"], path: "Sources/EmbedShadersPlugin"),

        .target(name: "CarWindowGeo", dependencies: ["CarWindowSystemSupport", "CZlib", "CSQLite", logging], swiftSettings: library),
        .target(name: "CarWindowStyle", dependencies: ["CarWindowGeo", "CarWindowSystemSupport", logging], swiftSettings: library),
        // Locks, system calls and error names every layer shares; no product: not for engines.
        .target(name: "CarWindowSystemSupport", dependencies: [systemPackage], swiftSettings: library),
        .target(name: "CarWindowVideoCore", dependencies: ["CarWindowSystemSupport", systemPackage], swiftSettings: library),
        .target(name: "CarWindowMap",
                dependencies: ["CarWindowGeo", "CarWindowStyle", "CarWindowVideoCore", "CarWindowSystemSupport",
                               "CEGL", "CGLES", "CGBM", "CFreeType", "CPNG", logging],
                swiftSettings: library, plugins: ["EmbedShadersPlugin"]),
        // Tile sources on servers (URL templates, TileJSON, PMTiles in byte ranges) with a disk
        // cache, and opening the sources a style names; FoundationNetworking (libcurl).
        .target(name: "CarWindowRemoteTiles", dependencies: ["CarWindowGeo", "CarWindowStyle", "CarWindowSystemSupport", logging],
                swiftSettings: library),
        .target(name: "CarWindowH264", dependencies: ["CarWindowVideoCore", "CarWindowSystemSupport", "COpenH264", "CVA", logging],
                swiftSettings: library),
        .target(name: "CarWindowSinks",
                dependencies: ["CarWindowVideoCore", "CarWindowH264", "CarWindowSystemSupport", systemPackage, logging],
                swiftSettings: library),
        .target(name: "CarWindowProjection",
                dependencies: ["CarWindowGeo", "CarWindowStyle", "CarWindowVideoCore", "CarWindowMap",
                               "CarWindowH264", "CarWindowSinks", "CarWindowSystemSupport", logging],
                swiftSettings: library),
        // SmartDeviceLink's protocol without I/O: frames, BSON, RPC codecs, the security layer.
        // Below everything that draws or encodes.
        .target(name: "CarWindowSDLProtocol", dependencies: ["CarWindowVideoCore", "CarWindowSystemSupport", logging],
                swiftSettings: library),
        // The default security library: TLS and DTLS on OpenSSL 3 over memory BIOs, the app's
        // side (server) and the head unit's (client, for the in-repo head unit).
        system("COpenSSL", pkgConfig: "openssl", apt: ["libssl-dev"]),
        .target(name: "CarWindowSDLSecurity", dependencies: ["CarWindowSDLProtocol", "COpenSSL"], swiftSettings: library),
        .target(name: "CarWindowSDL",
                dependencies: ["CarWindowSDLProtocol", "CarWindowVideoCore", "CarWindowMap", "CarWindowStyle", "CarWindowSinks",
                               "CarWindowSystemSupport", "CarWindowProjection", systemPackage, logging],
                swiftSettings: library),
        .target(name: "CarWindowSDLTesting",
                dependencies: ["CarWindowVideoCore", "CarWindowSinks", "CarWindowProjection", "CarWindowSDLProtocol",
                               "CarWindowSDLSecurity", "CarWindowSDL", "CarWindowSystemSupport", logging],
                swiftSettings: library),
        .target(name: "CarWindowSimulation",
                dependencies: ["CarWindowGeo", "CarWindowStyle", "CarWindowVideoCore", "CarWindowMap",
                               "CarWindowProjection", "CarWindowSystemSupport"],
                swiftSettings: library),
        // The umbrella: `import CarWindow` brings every engine-facing module.
        .target(name: "CarWindow",
                dependencies: ["CarWindowGeo", "CarWindowStyle", "CarWindowVideoCore", "CarWindowMap", "CarWindowRemoteTiles",
                               "CarWindowH264", "CarWindowSinks", "CarWindowProjection", "CarWindowSDLProtocol",
                               "CarWindowSDLSecurity", "CarWindowSDL"],
                swiftSettings: library),

        // The C API: the header as a C module (so the Swift side uses its very types), and its
        // functions, exported with @_cdecl; only carwindow_* leaves the library.
        .target(name: "CCarWindow", path: "Sources/CCarWindow"),
        .target(name: "CarWindowCAPI",
                dependencies: ["CCarWindow", "CarWindow", "CarWindowSinks", "CarWindowSystemSupport", logging],
                exclude: ["carwindow.map"],
                swiftSettings: library,
                linkerSettings: [.unsafeFlags(["-Xlinker", "-soname=libcarwindow.so.0", "-Xlinker",
                                               "--version-script=\(Context.packageDirectory)/Sources/CarWindowCAPI/carwindow.map"])]),

        .executableTarget(
            name: "carwindow",
            dependencies: ["CarWindow", "CarWindowH264", "CarWindowSinks", "CarWindowSystemSupport", "CarWindowSimulation", "CarWindowSDLTesting", argumentParser,
                           logging, systemPackage],
            swiftSettings: strict
        ),
        // Figures for people, not tests: `swift run -c release carwindow-bench`.
        .executableTarget(
            name: "carwindow-bench",
            dependencies: ["CarWindow", "CarWindowMap", "CarWindowSystemSupport", "CarWindowSimulation", "CarWindowSDLProtocol", "CarWindowSDLSecurity",
                           "CarWindowSDLTesting", "CGLES", "CEGL", argumentParser],
            path: "benchmarks/carwindow-bench",
            swiftSettings: strict
        ),
        // Fuzz targets for the readers of untrusted input. scripts/fuzz.sh builds this with
        // libFuzzer and AddressSanitizer; the plain build is a replayer for crash inputs:
        // `swift run carwindow-fuzz sdl-stream Fuzz/corpus/sdl-stream/some-input`.
        .systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        .executableTarget(
            name: "carwindow-fuzz",
            dependencies: ["CarWindow", "CarWindowSystemSupport", "CarWindowSimulation", "CarWindowSDLProtocol", "CarWindowSDLSecurity", "CarWindowSDLTesting", "CLibFuzzer", logging],
            path: "Fuzz/carwindow-fuzz",
            swiftSettings: strict + fuzzInstrumented + (fuzzing ? [.define("CARWINDOW_FUZZING")] : []),
            linkerSettings: fuzzLinking
        ),
        // Tests: one target per library target, each building against that target and what it
        // depends on. Their shared helpers (paths of the bundled data and of Tests/Fixtures and
        // Tests/Golden, which lie outside every target; ffmpeg as the independent decoder;
        // recording sinks and session set-up) are a plain target, not a test target.
        .target(name: "CarWindowTestSupport",
                dependencies: ["CarWindowSystemSupport", "CarWindowGeo", "CarWindowStyle", "CarWindowVideoCore", "CarWindowMap",
                               "CarWindowH264", "CarWindowSinks", "CarWindowProjection", logging],
                path: "Tests/CarWindowTestSupport", swiftSettings: strict),
        tests("CarWindowGeo"),
        tests("CarWindowVideoCore"),
        tests("CarWindowStyle", [logging]),
        tests("CarWindowMap", ["CEGL", "CGLES", "CFreeType", "CZlib", logging]),
        tests("CarWindowRemoteTiles", ["CarWindowMap"]),
        tests("CarWindowH264", ["CVA"]),
        tests("CarWindowSinks", [systemPackage]),
        tests("CarWindowProjection", ["CGLES", logging]),
        tests("CarWindowSDLProtocol"),
        tests("CarWindowSDLSecurity", ["CarWindowSDLProtocol"]),
        tests("CarWindowSDL", ["CarWindowSDLProtocol", "CarWindowSDLTesting", systemPackage, logging]),
        tests("CarWindowSimulation"),
        // The umbrella: programs written against `import CarWindow` alone.
        tests("CarWindow", ["CarWindowSDLTesting"]),
        // The command-line tests run the built `carwindow` next to the test bundle.
        .testTarget(name: "CarWindowCommandLineTests", dependencies: ["carwindow", "CarWindowSinks", "CarWindowSDLProtocol", "CarWindowSDL", "CarWindowSDLTesting", "CarWindowTestSupport"],
                    swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
