import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// SSIM between our frames and MapLibre Native's for a set of views (needs the peer).
struct AgreementSection: BenchmarkSection {
    let name = "agreement"
    let summary = "SSIM of our frames against MapLibre Native's for flat, rotated and pitched views (800x480)"
    var runsInQuickMode: Bool { false }

    func run(_ context: BenchContext) async throws -> SectionResult {
        var result = SectionResult(name: name)
        guard let peer = context.peer else {
            let reason = context.peerSkipReason ?? "MapLibre Native peer skipped"
            result.notes.append(reason)
            result.checks.append(.skip("agreement: SSIM against MapLibre Native", reason))
            return result
        }
        var table = TextTable(title: "Visual agreement with MapLibre Native at 800x480 (SSIM of luma)",
                              header: ["view", "SSIM"])
        // Our two styles, then each style given with --agreement-style over the same tiles.
        var groups: [(name: String, cases: [(view: AgreementView, ours: URL, theirs: URL)])] = [
            ("", AgreementView.all.map { ($0, context.style($0.style), context.style($0.style)) }),
        ]
        for style in context.agreementStyles {
            let name = style.deletingPathExtension().lastPathComponent
            let theirs = try peerStyle(for: style, in: context.out, tiles: context.tiles, glyphs: peer.glyphs)
            groups.append((name, AgreementView.otherStyle(named: name).map { ($0, style, theirs) }))
        }
        for group in groups {
            var raw: [Double] = []
            for (view, ourStyle, theirStyle) in group.cases {
                let renderer = try await context.makeRenderer(style: ourStyle, size: FrameSize(width: 800, height: 480),
                                                              camera: view.camera)
                await renderer.setOverlays(MapOverlays(showsControls: false))
                _ = await renderer.renderWhenLoaded()
                let ours = await renderer.readPixels()
                try ours.writePNG(to: context.out.appendingPathComponent("\(view.name)-carwindow.png"))
                let theirs = try peer.render(view, style: theirStyle, suffix: "maplibre")
                try sideBySide(ours, theirs).writePNG(to: context.out.appendingPathComponent("\(view.name)-pair.png"))
                let ssim = ours.structuralSimilarity(to: theirs) ?? .nan
                raw.append(ssim)
                var entry = CaseResult(label: view.name)
                entry.add("ssim", ssim, "ssim", better: .higher)
                result.cases.append(entry)
                table.rows.append([view.name, formatted(ssim, "%.4f")])
            }
            let label = group.name.isEmpty ? "mean" : "mean \(group.name)"
            var mean = CaseResult(label: label)
            mean.add("ssim", raw.reduce(0, +) / Double(max(raw.count, 1)), "ssim", better: .higher)
            table.rows.append([label, formatted(mean.value("ssim"), "%.4f")])
            result.cases.append(mean)
        }
        result.notes.append("each view's pictures side by side (CarWindow left, MapLibre Native right): <view>-pair.png in \(context.out.path)")
        result.tables.append(table)
        return result
    }
}

/// `left` and `right` next to each other, for a look.
func sideBySide(_ left: RGBAImage, _ right: RGBAImage) -> RGBAImage {
    let height = max(left.height, right.height), width = left.width + right.width
    var pixels = [UInt8](repeating: 255, count: width * height * 4)
    for (image, x0) in [(left, 0), (right, left.width)] {
        for y in 0..<image.height {
            let source = y * image.width * 4, target = (y * width + x0) * 4
            pixels.replaceSubrange(target..<(target + image.width * 4), with: image.pixels[source..<(source + image.width * 4)])
        }
    }
    return RGBAImage(width: width, height: height, pixels: pixels)
}

/// A copy of another style for MapLibre Native over the bundled tiles: its vector sources take
/// the tiles' zoom levels (a style made for a tile server names a TileJSON that says them, and
/// without them MapLibre asks for levels the archive lacks and draws nothing), its sprite path is
/// made absolute, and font stacks the glyph folder lacks become Noto Sans Regular or Bold, the
/// fonts both renderers have.
func peerStyle(for style: URL, in folder: URL, tiles: URL, glyphs: String) throws -> URL {
    guard var json = try JSONSerialization.jsonObject(with: Data(contentsOf: style)) as? [String: Any],
          let layers = json["layers"] as? [[String: Any]] else { throw BenchError("cannot read the style \(style.path)") }
    let source = try openTileSource(at: tiles)
    if var sources = json["sources"] as? [String: [String: Any]] {
        for (id, var entry) in sources where entry["type"] as? String == "vector" {
            entry["minzoom"] = source.minZoom
            entry["maxzoom"] = source.maxZoom
            sources[id] = entry
        }
        json["sources"] = sources
    }
    if let sprite = json["sprite"] as? String, !sprite.contains("://"), !sprite.hasPrefix("/") {
        json["sprite"] = style.deletingLastPathComponent().appendingPathComponent(sprite).standardizedFileURL.path
    }
    let available = Set((try? FileManager.default.contentsOfDirectory(atPath: glyphs)) ?? [])
    json["layers"] = layers.map { layer -> [String: Any] in
        guard var layout = layer["layout"] as? [String: Any], let stack = layout["text-font"] as? [String],
              !stack.contains(where: available.contains) else { return layer }
        var changed = layer
        layout["text-font"] = [stack.contains { $0.contains("Bold") } ? "Noto Sans Bold" : "Noto Sans Regular"]
        changed["layout"] = layout
        return changed
    }
    let file = folder.appendingPathComponent(style.deletingPathExtension().lastPathComponent + "-maplibre.json")
    try JSONSerialization.data(withJSONObject: json).write(to: file)
    return file
}

/// Views both renderers draw for the SSIM comparison.
struct AgreementView: Sendable {
    var name: String
    var style: String
    var camera: Camera

    static let all: [AgreementView] = [
        AgreementView(name: "day-flat-z15", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1705, longitude: 24.9440), zoom: 15)),
        AgreementView(name: "day-flat-z16", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16)),
        AgreementView(name: "day-rotated-z16", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1720, longitude: 24.9460), zoom: 16, bearing: -40)),
        AgreementView(name: "day-pitched-z16", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16, bearing: 30, pitch: 45)),
        AgreementView(name: "day-pitched-z17", style: "day", camera: Camera(center: GeoCoordinate(latitude: 60.1690, longitude: 24.9450), zoom: 17, bearing: 60, pitch: 55)),
        AgreementView(name: "night-flat-z16", style: "night", camera: Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16)),
        AgreementView(name: "night-pitched-z16", style: "night", camera: Camera(center: GeoCoordinate(latitude: 60.1720, longitude: 24.9440), zoom: 16, bearing: -30, pitch: 50)),
    ]

    /// The views another style (`--agreement-style`) is compared in: flat from z14 to z16,
    /// rotated, pitched, and a wider z13 view.
    static func otherStyle(named name: String) -> [AgreementView] {
        let views: [(String, Camera)] = [
            ("flat-z14", Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 14)),
            ("flat-z15", Camera(center: GeoCoordinate(latitude: 60.1705, longitude: 24.9440), zoom: 15)),
            ("flat-z16", Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16)),
            ("rotated-z16", Camera(center: GeoCoordinate(latitude: 60.1720, longitude: 24.9460), zoom: 16, bearing: -40)),
            ("pitched-z16", Camera(center: GeoCoordinate(latitude: 60.1699, longitude: 24.9415), zoom: 16, bearing: 30, pitch: 45)),
            ("pitched-z17", Camera(center: GeoCoordinate(latitude: 60.1690, longitude: 24.9450), zoom: 17, bearing: 60, pitch: 55)),
            ("flat-z13", Camera(center: GeoCoordinate(latitude: 60.1716, longitude: 24.9443), zoom: 13)),
        ]
        return views.map { AgreementView(name: "\(name)-\($0.0)", style: name, camera: $0.1) }
    }
}
