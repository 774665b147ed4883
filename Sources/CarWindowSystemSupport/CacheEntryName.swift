/// File names for disk cache entries: two 64-bit FNV-1a hashes of the entry's key with
/// different seeds. Caches keep the key inside the entry too, so a collision reads as a miss.
package enum CacheEntryName {
    /// The file name of the entry for `key`, ending in `.` and `fileExtension`.
    package static func of(_ key: String, fileExtension: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325, second: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in key.utf8 {
            first = (first ^ UInt64(byte)) &* 0x100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x100_0000_01b3 &+ 1
        }
        return String(first, radix: 16) + String(second, radix: 16) + "." + fileExtension
    }
}
