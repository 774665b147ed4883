// swift-tools-version: 6.2
import PackageDescription

// A navigation engine that only wants pictures of the map: it depends on the renderer product
// alone, so it builds and links without OpenH264, libva or anything of the video stream.
let package = Package(
    name: "map-snapshot",
    dependencies: [.package(name: "CarWindow", path: "../..")],
    targets: [
        .executableTarget(
            name: "map-snapshot",
            dependencies: [.product(name: "CarWindowMap", package: "CarWindow")],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ],
    swiftLanguageModes: [.v6]
)
