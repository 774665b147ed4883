import COpenSSL

/// The first error OpenSSL queued during one call; the rest are discarded.
struct OpenSSLFailure {
    var library: Int32
    var reason: Int32
    var text: String

    /// Empties this thread's error queue and returns its oldest entry, which names the root cause.
    static func drain() -> OpenSSLFailure? {
        var first: OpenSSLFailure?
        while true {
            let code = ERR_get_error()
            guard code != 0 else { return first }
            if first == nil { first = OpenSSLFailure(code) }
        }
    }

    /// Clears errors left by unrelated calls on this thread, because `SSL_get_error`
    /// reads the queue and would otherwise blame this call for them.
    static func clear() {
        ERR_clear_error()
    }

    /// `" (OpenSSL: …)"` for the drained error, or nothing when the queue was empty.
    static func drainedSuffix() -> String {
        drain().map { " (OpenSSL: \($0.text))" } ?? ""
    }

    private init(_ code: UInt) {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        library = sdltls_err_lib(code)
        reason = sdltls_err_reason(code)
        text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
