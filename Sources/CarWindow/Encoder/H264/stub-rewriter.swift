// TEMPORARY STUB (never committed): stands in for wip/h264bits' rewriter until that branch is merged.
// It returns the access unit unchanged, so the constrained-baseline / reorder tests stay disabled.
enum H264StreamRewriter {
    static func normalize(_ annexB: [UInt8], fullRange: Bool, framesPerSecond: Double) throws -> [UInt8] {
        annexB
    }
}
