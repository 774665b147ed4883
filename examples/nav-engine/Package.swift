// swift-tools-version: 6.2
import PackageDescription

// A navigation engine that projects its map into a car's head unit over SmartDeviceLink: it
// depends on the SmartDeviceLink link and the session and map beneath it, and on nothing it does
// not use (no tiles from servers, no TLS security library).
let package = Package(
    name: "nav-engine",
    dependencies: [.package(name: "CarWindow", path: "../..")],
    targets: [
        .executableTarget(
            name: "nav-engine",
            dependencies: [
                .product(name: "CarWindowMap", package: "CarWindow"),
                .product(name: "CarWindowProjection", package: "CarWindow"),
                .product(name: "CarWindowSDL", package: "CarWindow"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
