import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport
import Foundation

/// SSIM between our frames and MapLibre Native's for a set of views (needs the peer).
///
/// MapLibre draws fill-extrusion walls even when looking straight down; CarWindow draws buildings
/// flat there, as a navigation map should. So pitch-0 views are also compared with MapLibre given
/// the same style minus its extrusion layers, and both figures are reported.
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
                              header: ["view", "SSIM", "SSIM, MapLibre flat buildings at pitch 0"])
        var raw: [Double] = [], matched: [Double] = []
        for view in AgreementView.all {
            let renderer = try await context.makeRenderer(style: view.style, size: FrameSize(width: 800, height: 480),
                                                          camera: view.camera)
            await renderer.setOverlays(MapOverlays(showsControls: false))
            _ = await renderer.renderWhenLoaded()
            let ours = await renderer.readPixels()
            try ours.writePNG(to: context.out.appendingPathComponent("\(view.name)-carwindow.png"))
            let theirs = try peer.render(view, style: context.style(view.style), suffix: "maplibre")
            let ssim = ours.structuralSimilarity(to: theirs) ?? .nan
            var flatSSIM = ssim
            if view.camera.pitch == 0 {
                let flatStyle = try withoutExtrusions(context.style(view.style), in: context.out)
                flatSSIM = ours.structuralSimilarity(to: try peer.render(view, style: flatStyle, suffix: "maplibre-flat")) ?? .nan
            }
            raw.append(ssim)
            matched.append(flatSSIM)
            var entry = CaseResult(label: view.name)
            entry.add("ssim", ssim, "ssim", better: .higher)
            entry.add("ssim_flat_buildings_at_pitch_0", flatSSIM, "ssim", better: .higher)
            result.cases.append(entry)
            table.rows.append([view.name, formatted(ssim, "%.4f"), view.camera.pitch == 0 ? formatted(flatSSIM, "%.4f") : "(same)"])
        }
        var mean = CaseResult(label: "mean")
        mean.add("ssim", raw.reduce(0, +) / Double(max(raw.count, 1)), "ssim", better: .higher)
        mean.add("ssim_flat_buildings_at_pitch_0", matched.reduce(0, +) / Double(max(matched.count, 1)), "ssim", better: .higher)
        table.rows.append(["mean", formatted(mean.value("ssim"), "%.4f"), formatted(mean.value("ssim_flat_buildings_at_pitch_0"), "%.4f")])
        result.cases.append(mean)
        result.tables.append(table)
        return result
    }
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
}

/// A copy of the style with its fill-extrusion layers hidden.
func withoutExtrusions(_ style: URL, in folder: URL) throws -> URL {
    guard var json = try JSONSerialization.jsonObject(with: Data(contentsOf: style)) as? [String: Any],
          let layers = json["layers"] as? [[String: Any]] else { throw BenchError("cannot read the style \(style.path)") }
    json["layers"] = layers.map { layer -> [String: Any] in
        guard layer["type"] as? String == "fill-extrusion" else { return layer }
        var hidden = layer
        var layout = layer["layout"] as? [String: Any] ?? [:]
        layout["visibility"] = "none"
        hidden["layout"] = layout
        return hidden
    }
    // The copy lives elsewhere: a relative sprite path is made absolute so both renderers still
    // find the style's icons.
    if let sprite = json["sprite"] as? String, !sprite.contains("://"), !sprite.hasPrefix("/") {
        json["sprite"] = style.deletingLastPathComponent().appendingPathComponent(sprite).standardizedFileURL.path
    }
    let file = folder.appendingPathComponent(style.deletingPathExtension().lastPathComponent + "-flat-buildings.json")
    try JSONSerialization.data(withJSONObject: json).write(to: file)
    return file
}
