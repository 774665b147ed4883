// Draws one view of the bundled Helsinki map into a PNG, the way an engine that links only
// CarWindowMap would: open tiles, read a style, load fonts, make a headless GL context and a
// renderer, wait for the tiles, read the pixels back.
//
// usage: map-snapshot [OUT.png] [ASSETS-FOLDER]   (defaults: snapshot.png, ../../assets)
import CarWindowMap
import Foundation

let arguments = CommandLine.arguments.dropFirst()
let output = URL(fileURLWithPath: arguments.first ?? "snapshot.png")
let assets = URL(fileURLWithPath: arguments.dropFirst().first ?? "../../assets", isDirectory: true)

do {
    let tiles = try PMTilesSource(url: assets.appendingPathComponent("helsinki.pmtiles"))
    let style = try Style(contentsOf: assets.appendingPathComponent("styles/day.json"))
    let fonts = try FontLibrary(directory: assets.appendingPathComponent("fonts", isDirectory: true))
    let context = try await RenderContext()
    let renderer = try await MapRenderer(
        context: context, width: 640, height: 384, style: style, tiles: tiles, fonts: fonts,
        camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 15.5, bearing: 30))
    let report = await renderer.renderWhenLoaded()
    let image = await renderer.readPixels()
    await context.shutdown()
    try image.writePNG(to: output)
    print("\(output.path): \(image.width)x\(image.height), \(report.tilesDrawn) tiles, \(report.labels) labels")
} catch {
    FileHandle.standardError.write(Data("map-snapshot: \(error)\n".utf8))
    exit(1)
}
