import Foundation

/// The whole run as written to results.json. `schemaVersion` changes whenever a field changes
/// meaning or disappears; added fields keep the version.
struct BenchResults: Codable, Sendable {
    static let currentSchemaVersion = 1
    var schemaVersion = currentSchemaVersion
    var tool = "carwindow-bench"
    /// ISO 8601, UTC.
    var startedAt: String
    var mode: String
    var arguments: [String]
    var machine: MachineDescription
    var sections: [SectionResult]
    /// RSS sampled over the whole run.
    var memory: MemorySummary?
    var wallSeconds: Double
    var passed: Bool
}

/// What one section measured.
struct SectionResult: Codable, Sendable {
    var name: String
    /// One entry per size (or per view): its figures and raw series.
    var cases: [CaseResult] = []
    var checks: [Check] = []
    var notes: [String] = []
    /// Chart files written for this section, relative to the output folder.
    var charts: [String] = []
    /// Filled in by the harness.
    var wallSeconds = 0.0
    var process: ProcessUsage?

    /// Tables for people (stdout and results.md); not part of the JSON.
    var tables: [TextTable] = []
    /// Charts to write, named without extension; not part of the JSON.
    var chartDocuments: [(name: String, svg: String)] = []

    init(name: String) { self.name = name }

    enum CodingKeys: String, CodingKey {
        case name, cases, checks, notes, charts, wallSeconds, process
    }
}

/// Figures and series of one size or view.
struct CaseResult: Codable, Sendable {
    var label: String
    var figures: [Figure] = []
    var series: [Series] = []

    init(label: String) { self.label = label }

    mutating func add(_ name: String, _ value: Double, _ unit: String, better: Figure.Better? = nil) {
        figures.append(Figure(name: name, value: value, unit: unit, better: better))
    }

    func value(_ name: String) -> Double? { figures.first { $0.name == name }?.value }
}

/// One named number with its unit.
struct Figure: Codable, Sendable {
    enum Better: String, Codable, Sendable { case lower, higher }
    var name: String
    /// nil when the measurement was not finite (the harness then fails the run).
    var value: Double?
    var unit: String
    var better: Better?
}

/// Raw values behind the figures (frame times, bitrate windows), for charts and later analysis.
struct Series: Codable, Sendable {
    var name: String
    var unit: String
    var values: [Double]
}

/// A sanity check: passed, failed (the run exits non-zero) or skipped (with the reason); or a
/// speed goal, met or missed.
///
/// A goal that rests on the wall clock (a latency, a start-up time, a timer's gap) is reported but
/// never fails the run: on a shared or loaded machine those figures move with the load, and a
/// verdict that moves with the load would make CI flaky. Its figure is in the results either way.
struct Check: Codable, Sendable {
    enum Status: String, Codable, Sendable { case pass, fail, skip, met, missed }
    var name: String
    var status: Status
    var detail: String

    static func expect(_ condition: Bool, _ name: String, _ detail: String) -> Check {
        Check(name: name, status: condition ? .pass : .fail, detail: detail)
    }

    static func skip(_ name: String, _ reason: String) -> Check { Check(name: name, status: .skip, detail: reason) }

    /// A wall-clock goal: `met` or `missed`, never a failure.
    static func goal(_ reached: Bool, _ name: String, _ detail: String) -> Check {
        Check(name: name, status: reached ? .met : .missed, detail: detail)
    }
}

/// A table for people.
struct TextTable: Sendable {
    var title: String
    var header: [String]
    var rows: [[String]] = []

    /// Padded columns for a terminal.
    var plainText: String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        func line(_ row: [String]) -> String {
            widths.indices.map { (row.indices.contains($0) ? row[$0] : "").padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: " | ")
        }
        var text = "\(title)\n\(line(header))\n"
        text += widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-") + "\n"
        for row in rows { text += line(row) + "\n" }
        return text
    }

    /// A GitHub-flavoured Markdown table.
    var markdown: String {
        func line(_ row: [String]) -> String {
            "| " + header.indices.map { row.indices.contains($0) ? row[$0].replacingOccurrences(of: "|", with: "\\|") : "" }
                .joined(separator: " | ") + " |"
        }
        return "### \(title)\n\n\(line(header))\n|" + String(repeating: "---|", count: header.count) + "\n"
            + rows.map(line).joined(separator: "\n") + "\n"
    }
}

/// Formats a number for tables; "-" when missing.
func formatted(_ value: Double?, _ format: String = "%.2f") -> String {
    guard let value, value.isFinite else { return "-" }
    return String(format: format, value)
}
