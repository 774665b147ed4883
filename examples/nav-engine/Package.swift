// swift-tools-version: 6.2
import PackageDescription

// A navigation engine that projects its map into a car's head unit over SmartDeviceLink: it
// depends on the SmartDeviceLink link and the session and map beneath it, and on nothing it does
// not use (no tiles from servers, no TLS security library).
let package = Package(
    name: "nav-engine",
    dependencies: [.package(name: "CarWindow", path: "../..")],
    targets: [
        // The engine draws a layer of the map with its own OpenGL ES (Debian's libgles-dev).
        .systemLibrary(name: "CGLESv2", pkgConfig: "glesv2"),
        .executableTarget(
            name: "nav-engine",
            dependencies: [
                "CGLESv2",
                .product(name: "CarWindowMap", package: "CarWindow"),
                .product(name: "CarWindowProjection", package: "CarWindow"),
                .product(name: "CarWindowSDL", package: "CarWindow"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
