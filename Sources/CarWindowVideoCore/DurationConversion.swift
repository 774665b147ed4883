extension Duration {
    /// The duration in seconds, for arithmetic on a clock's `Double` seconds; exact to well
    /// below a nanosecond for anything shorter than a century.
    @inlinable
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// The duration in milliseconds.
    @inlinable
    package var inMilliseconds: Double { inSeconds * 1000 }
}
