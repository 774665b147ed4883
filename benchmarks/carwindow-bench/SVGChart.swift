import Foundation

/// A line chart written as SVG text: axes with tick labels, axis titles, a legend on the right.
/// Small on purpose: lines (optionally as steps), dashes, and nothing that needs a library.
struct LineChart: Sendable {
    struct Line: Sendable {
        var name: String
        var points: [(x: Double, y: Double)]
        var color: String
        var dash: String? = nil
        /// Lines without a name stay out of the legend (a band's second edge, for example).
        var inLegend: Bool { !name.isEmpty }
    }

    var title: String
    var xLabel: String
    var yLabel: String
    var lines: [Line] = []
    var width = 760.0
    var height = 420.0
    /// Forces the y axis to start at zero, as bitrates and shares read best from zero.
    var yFromZero = true

    static let palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"]

    func svg() -> String {
        let left = 70.0, right = 210.0, top = 40.0, bottom = 56.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let finite = lines.flatMap(\.points).filter { $0.x.isFinite && $0.y.isFinite }
        let xTicks = niceTicks(finite.map(\.x).min() ?? 0, finite.map(\.x).max() ?? 1)
        let yTicks = niceTicks(yFromZero ? min(0, finite.map(\.y).min() ?? 0) : (finite.map(\.y).min() ?? 0),
                               finite.map(\.y).max() ?? 1)
        let (x0, x1) = (xTicks.first ?? 0, xTicks.last ?? 1), (y0, y1) = (yTicks.first ?? 0, yTicks.last ?? 1)
        func px(_ x: Double) -> Double { left + (x - x0) / max(x1 - x0, .leastNonzeroMagnitude) * plotWidth }
        func py(_ y: Double) -> Double { top + plotHeight - (y - y0) / max(y1 - y0, .leastNonzeroMagnitude) * plotHeight }
        func n(_ value: Double) -> String { String(format: "%.1f", value) }

        var body = ""
        body += "<rect x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"white\"/>\n"
        body += text(title, x: left + plotWidth / 2, y: 22, anchor: "middle", size: 15, weight: "bold")
        // Grid and tick labels.
        for tick in yTicks {
            body += "<line x1=\"\(n(left))\" y1=\"\(n(py(tick)))\" x2=\"\(n(left + plotWidth))\" y2=\"\(n(py(tick)))\" stroke=\"#e0e0e0\"/>\n"
            body += text(tickLabel(tick, step: step(of: yTicks)), x: left - 8, y: py(tick) + 4, anchor: "end")
        }
        for tick in xTicks {
            body += "<line x1=\"\(n(px(tick)))\" y1=\"\(n(top))\" x2=\"\(n(px(tick)))\" y2=\"\(n(top + plotHeight))\" stroke=\"#f0f0f0\"/>\n"
            body += text(tickLabel(tick, step: step(of: xTicks)), x: px(tick), y: top + plotHeight + 18, anchor: "middle")
        }
        body += "<rect x=\"\(n(left))\" y=\"\(n(top))\" width=\"\(n(plotWidth))\" height=\"\(n(plotHeight))\" fill=\"none\" stroke=\"#333\"/>\n"
        body += text(xLabel, x: left + plotWidth / 2, y: height - 12, anchor: "middle", size: 13)
        body += "<text x=\"16\" y=\"\(n(top + plotHeight / 2))\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 16 \(n(top + plotHeight / 2)))\">\(escaped(yLabel))</text>\n"
        // Lines.
        for line in lines {
            let points = line.points.filter { $0.x.isFinite && $0.y.isFinite }.map { "\(n(px($0.x))),\(n(py($0.y)))" }
            guard !points.isEmpty else { continue }
            let dash = line.dash.map { " stroke-dasharray=\"\($0)\"" } ?? ""
            body += "<polyline fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"2\"\(dash) points=\"\(points.joined(separator: " "))\"/>\n"
        }
        // Legend.
        var legendY = top + 8
        for line in lines where line.inLegend {
            let dash = line.dash.map { " stroke-dasharray=\"\($0)\"" } ?? ""
            let x = left + plotWidth + 14
            body += "<line x1=\"\(n(x))\" y1=\"\(n(legendY))\" x2=\"\(n(x + 26))\" y2=\"\(n(legendY))\" stroke=\"\(line.color)\" stroke-width=\"2\"\(dash)/>\n"
            body += text(line.name, x: x + 32, y: legendY + 4, anchor: "start")
            legendY += 20
        }
        return """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(n(width))" height="\(n(height))" viewBox="0 0 \(n(width)) \(n(height))" font-family="sans-serif">
        \(body)</svg>

        """
    }

    private func text(_ string: String, x: Double, y: Double, anchor: String, size: Int = 11, weight: String = "normal") -> String {
        String(format: "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\"", x, y, size)
            + " font-weight=\"\(weight)\" text-anchor=\"\(anchor)\">" + escaped(string) + "</text>\n"
    }

    private func step(of ticks: [Double]) -> Double { ticks.count > 1 ? ticks[1] - ticks[0] : 1 }
}

/// Tick positions 1, 2 or 5 x 10^k apart that cover `low...high` with about `count` intervals.
func niceTicks(_ low: Double, _ high: Double, count: Int = 5) -> [Double] {
    guard low.isFinite, high.isFinite else { return [0, 1] }
    var (low, high) = (min(low, high), max(low, high))
    if high - low < 1e-12 {
        let pad = abs(low) > 1e-12 ? abs(low) * 0.1 : 1
        (low, high) = (low - pad, high + pad)
    }
    let raw = (high - low) / Double(max(count, 1))
    let magnitude = pow(10, floor(log10(raw)))
    let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw * (1 - 1e-9) } ?? 10 * magnitude
    let first = floor(low / step + 1e-9), last = ceil(high / step - 1e-9)
    return stride(from: first, through: last, by: 1).map { ($0 * step * 1e9).rounded() / 1e9 }
}

/// A tick label with as many decimals as the step needs.
func tickLabel(_ value: Double, step: Double) -> String {
    let decimals = step >= 1 ? 0 : min(Int(ceil(-log10(step) - 1e-9)), 6)
    let label = String(format: "%.\(decimals)f", value)
    return label == "-0" ? "0" : label
}

/// Text made safe for SVG content and attributes.
func escaped(_ string: String) -> String {
    string.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
}

/// Points of an empirical CDF drawn as steps: share of values at or below x.
func cdfPoints(_ values: [Double]) -> [(x: Double, y: Double)] {
    let sorted = values.filter(\.isFinite).sorted()
    let count = Double(sorted.count)
    return sorted.enumerated().flatMap { index, value in
        [(x: value, y: Double(index) / count), (x: value, y: Double(index + 1) / count)]
    }
}

/// Steps for per-window values: window k spans k...k+1 seconds.
func windowSteps(_ values: [Double], scale: Double = 1) -> [(x: Double, y: Double)] {
    values.enumerated().flatMap { index, value in
        [(x: Double(index), y: value * scale), (x: Double(index + 1), y: value * scale)]
    }
}

/// Horizontal bars split into coloured parts (phases of a whole), with a legend of the parts.
struct StackedBarChart: Sendable {
    var title: String
    var unit: String
    var bars: [(label: String, parts: [(name: String, value: Double)])] = []

    func svg() -> String {
        let left = 100.0, right = 220.0, top = 44.0, barHeight = 28.0, gap = 14.0, width = 820.0
        let plotWidth = width - left - right
        let height = top + Double(bars.count) * (barHeight + gap) + 40
        let longest = bars.map { $0.parts.map(\.value).filter(\.isFinite).reduce(0, +) }.max() ?? 1
        let scale = plotWidth / max(longest, .leastNonzeroMagnitude)
        func n(_ value: Double) -> String { String(format: "%.1f", value) }
        var body = "<rect x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"white\"/>\n"
        body += "<text x=\"\(n(left + plotWidth / 2))\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">\(escaped(title))</text>\n"
        var names: [String] = []
        for (row, bar) in bars.enumerated() {
            let y = top + Double(row) * (barHeight + gap)
            body += "<text x=\"\(n(left - 8))\" y=\"\(n(y + barHeight * 0.65))\" text-anchor=\"end\" font-size=\"12\">\(escaped(bar.label))</text>\n"
            var x = left
            for part in bar.parts where part.value.isFinite && part.value > 0 {
                if !names.contains(part.name) { names.append(part.name) }
                let color = LineChart.palette[(names.firstIndex(of: part.name) ?? 0) % LineChart.palette.count]
                body += "<rect x=\"\(n(x))\" y=\"\(n(y))\" width=\"\(n(part.value * scale))\" height=\"\(n(barHeight))\" fill=\"\(color)\"><title>\(escaped(part.name)): \(n(part.value)) \(escaped(unit))</title></rect>\n"
                x += part.value * scale
            }
            let total = bar.parts.map(\.value).filter(\.isFinite).reduce(0, +)
            body += "<text x=\"\(n(x + 6))\" y=\"\(n(y + barHeight * 0.65))\" font-size=\"12\">\(n(total)) \(escaped(unit))</text>\n"
        }
        for (index, name) in names.enumerated() {
            let y = top + Double(index) * 20
            let color = LineChart.palette[index % LineChart.palette.count]
            body += "<rect x=\"\(n(width - right + 60))\" y=\"\(n(y))\" width=\"12\" height=\"12\" fill=\"\(color)\"/>\n"
            body += "<text x=\"\(n(width - right + 78))\" y=\"\(n(y + 10))\" font-size=\"12\">\(escaped(name))</text>\n"
        }
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(width))\" height=\"\(n(height))\" font-family=\"sans-serif\">\n\(body)</svg>\n"
    }
}
