internal import CZlib
import Foundation

/// Why compressed data could not be inflated.
public enum GzipError: Error, Equatable, Sendable, CustomStringConvertible {
    /// zlib rejected the stream; the message is zlib's own.
    case corrupt(String)
    /// The stream ended before its end marker.
    case truncated
    /// The inflated data would exceed the limit the caller set, which protects against
    /// decompression bombs.
    case exceedsLimit(Int)

    /// What went wrong and what to do about it, for logs and error messages.
    public var description: String {
        switch self {
        case .corrupt(let message):
            "Compressed data is corrupt (zlib: \(message)); the file is damaged, re-create or re-download it."
        case .truncated:
            "Compressed data ends early; the file is truncated, re-create or re-download it."
        case .exceedsLimit(let limit):
            "Compressed data inflates to more than \(limit) bytes, which is refused as unreasonable for a tile."
        }
    }
}

/// Gzip and zlib inflation for tiles and archive directories, which are commonly stored compressed.
package enum Gzip {
    /// The default ceiling on inflated sizes: far above any real vector tile (a few MiB at most),
    /// low enough that a crafted file cannot exhaust memory.
    package static let defaultLimit = 64 << 20

    /// Whether `data` starts with the gzip magic bytes 1f 8b.
    package static func isCompressed(_ data: Data) -> Bool {
        data.count >= 2 && data[data.startIndex] == 0x1F && data[data.startIndex + 1] == 0x8B
    }

    /// Inflates a gzip or zlib stream (detected from its header) into at most `limit` bytes.
    package static func decompress(_ data: Data, limit: Int = defaultLimit) throws(GzipError) -> Data {
        var stream = z_stream()
        // 15 window bits plus 32 asks zlib to detect a gzip or zlib header by itself.
        guard inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw .corrupt("inflateInit2 failed")
        }
        defer { inflateEnd(&stream) }

        let chunkSize = 64 << 10
        var output = Data()
        // A guess from the input size, capped so that the guess itself cannot be large.
        output.reserveCapacity(min(limit, min(data.count * 4, 4 << 20)))
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var status: Int32 = Z_OK

        let result: Result<Void, GzipError> = data.withUnsafeBytes { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            return chunk.withUnsafeMutableBufferPointer { buffer in
                repeat {
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(chunkSize)
                    status = inflate(&stream, Z_NO_FLUSH)
                    switch status {
                    case Z_OK, Z_STREAM_END:
                        break
                    case Z_BUF_ERROR:
                        // No progress possible: the input ran out before the stream's end.
                        return .failure(.truncated)
                    default:
                        let message = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                        return .failure(.corrupt(message))
                    }
                    let produced = chunkSize - Int(stream.avail_out)
                    guard output.count + produced <= limit else { return .failure(.exceedsLimit(limit)) }
                    output.append(buffer.baseAddress!, count: produced)
                    if status != Z_STREAM_END && stream.avail_in == 0 && stream.avail_out != 0 {
                        return .failure(.truncated)
                    }
                } while status != Z_STREAM_END
                return .success(())
            }
        }
        try result.get()
        return output
    }
}
