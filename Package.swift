// swift-tools-version: 6.2
import PackageDescription

/// Our own targets treat every warning as an error; dependencies are left alone.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

/// scripts/fuzz.sh sets CARWINDOW_FUZZING to the path of libFuzzer's driver library (compiler-rt's
/// fuzzer_no_main): the library and the fuzz targets are then compiled with libFuzzer's coverage
/// and AddressSanitizer, and the fuzz executable links the driver. Per target rather than with
/// -Xswiftc, because the shader tool that runs during the build must not get them.
let fuzzerLibrary = Context.environment["CARWINDOW_FUZZING"]
let fuzzing = fuzzerLibrary != nil
let fuzzInstrumented: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"])] : []
let fuzzLinking: [LinkerSetting] = fuzzerLibrary.map {
    [.unsafeFlags(["-sanitize=address", "-Xlinker", $0]), .linkedLibrary("stdc++")]
} ?? []

func system(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "CarWindow",
    products: [
        .library(name: "CarWindow", targets: ["CarWindow"]),
        .executable(name: "carwindow", targets: ["carwindow"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
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
        // so the library carries its shaders and needs no files at run time.
        .executableTarget(name: "carwindow-embed-shaders", path: "Sources/carwindow-embed-shaders",
                          swiftSettings: strict),
        .plugin(name: "EmbedShadersPlugin", capability: .buildTool(),
                dependencies: ["carwindow-embed-shaders"], path: "Sources/EmbedShadersPlugin"),

        .target(
            name: "CarWindow",
            dependencies: [
                "CEGL", "CGLES", "CGBM", "CFreeType", "CZlib", "CSQLite", "CPNG", "COpenH264", "CVA",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: strict + fuzzInstrumented,
            plugins: ["EmbedShadersPlugin"]
        ),
        .executableTarget(
            name: "carwindow",
            dependencies: ["CarWindow", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: strict
        ),
        // Figures for people, not tests: `swift run -c release carwindow-bench`.
        .executableTarget(
            name: "carwindow-bench",
            dependencies: ["CarWindow", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "benchmarks/carwindow-bench",
            swiftSettings: strict
        ),
        // Fuzz targets for the readers of untrusted input. scripts/fuzz.sh builds this with
        // libFuzzer and AddressSanitizer; the plain build is a replayer for crash inputs:
        // `swift run carwindow-fuzz sdl-stream Fuzz/corpus/sdl-stream/some-input`.
        .systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        .executableTarget(
            name: "carwindow-fuzz",
            dependencies: ["CarWindow", "CLibFuzzer", .product(name: "Logging", package: "swift-log")],
            path: "Fuzz/carwindow-fuzz",
            swiftSettings: strict + fuzzInstrumented + (fuzzing ? [.define("CARWINDOW_FUZZING")] : []),
            linkerSettings: fuzzLinking
        ),
        // The command-line tests run the built `carwindow` next to the test bundle.
        .testTarget(name: "CarWindowTests",
                    dependencies: ["CarWindow", "carwindow", .product(name: "SystemPackage", package: "swift-system")],
                    exclude: ["Fixtures", "Golden"],
                    swiftSettings: strict),
    ],
    swiftLanguageModes: [.v6]
)
