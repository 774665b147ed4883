import ArgumentParser
import CarWindow

/// Checks of numeric options: every argument is untrusted, so NaN, infinities, negative and
/// absurd values are refused with one line naming the option and what it accepts.
enum OptionCheck {
    /// `code` (when given) must be a language code ``LabelLanguage`` reads.
    static func labelLanguage(_ code: String?) throws -> LabelLanguage? {
        guard let code else { return nil }
        guard let language = LabelLanguage(code) else {
            throw ValidationError("--label-language must be a language code such as sv, SV-SE or zh-TW (two or three letters, then optionally a region or script); got '\(code)'")
        }
        return language
    }

    /// `value` must be a finite number in `range`.
    static func number(_ value: Double, _ option: String, in range: ClosedRange<Double>, unit: String = "") throws {
        guard value.isFinite, range.contains(value) else {
            throw ValidationError("\(option) must be a number in \(format(range.lowerBound))...\(format(range.upperBound))\(unit); got \(format(value))")
        }
    }

    /// `value`, when given, must be a finite number in `range`.
    static func number(_ value: Double?, _ option: String, in range: ClosedRange<Double>, unit: String = "") throws {
        if let value { try number(value, option, in: range, unit: unit) }
    }

    /// `value` must be in `range`.
    static func integer(_ value: Int, _ option: String, in range: ClosedRange<Int>, unit: String = "") throws {
        guard range.contains(value) else {
            throw ValidationError("\(option) must be in \(range.lowerBound)...\(range.upperBound)\(unit); got \(value)")
        }
    }

    /// `value`, when given, must be in `range`.
    static func integer(_ value: Int?, _ option: String, in range: ClosedRange<Int>, unit: String = "") throws {
        if let value { try integer(value, option, in: range, unit: unit) }
    }

    /// An encoder thread count as written: `auto`, or a count in ``EncoderThreads/allowed``.
    static func encoderThreads(_ text: String, _ option: String) throws -> EncoderThreads {
        if text == "auto" { return .automatic }
        let allowed = EncoderThreads.allowed
        guard let count = Int(text), allowed.contains(count) else {
            throw ValidationError("\(option) must be auto or a count in \(allowed.lowerBound)...\(allowed.upperBound); got '\(text)'")
        }
        return .fixed(count)
    }

    /// `value` as a user wrote it: 2 rather than 2.0.
    static func text(_ value: Double) -> String { format(value) }

    private static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        return String(value)
    }
}
