import Foundation

/// Writes results.json and results.md.
enum Report {
    static func write(_ results: BenchResults, tables: [TextTable], to out: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(results).write(to: out.appendingPathComponent("results.json"))
        try markdown(results, tables: tables).write(to: out.appendingPathComponent("results.md"), atomically: true, encoding: .utf8)
    }

    static func markdown(_ results: BenchResults, tables: [TextTable]) -> String {
        var text = "# carwindow-bench (\(results.mode)), \(results.startedAt)\n\n"
        text += results.machine.lines.map { "- \($0)\n" }.joined() + "\n"
        text += tables.map(\.markdown).joined(separator: "\n") + "\n"
        var process = TextTable(title: "Process", header: ["section", "wall s", "CPU %", "children CPU %", "peak RSS MiB"])
        for section in results.sections {
            process.rows.append([section.name, formatted(section.wallSeconds, "%.1f"), formatted(section.process?.cpuPercent, "%.0f"),
                                 formatted(section.process?.childrenCPUPercent, "%.0f"), formatted(section.process?.peakRSSMiB, "%.0f")])
        }
        text += process.markdown + "\n"
        let charts = results.sections.flatMap(\.charts)
        if !charts.isEmpty { text += "### Charts\n\n" + charts.map { "![\($0)](\($0))\n" }.joined() + "\n" }
        let notes = results.sections.flatMap(\.notes)
        if !notes.isEmpty { text += "### Notes\n\n" + Set(notes).sorted().map { "- \($0)\n" }.joined() + "\n" }
        text += "### Checks\n\n" + results.sections.flatMap(\.checks)
            .map { "- \($0.status.rawValue.uppercased()) \($0.name): \($0.detail)\n" }.joined()
        return text
    }
}
