internal import CVA
import Glibc
import CarWindowVideoCore

/// Reading the planes of a VA surface exported with `vaExportSurfaceHandle`.
extension DMABufPlanes {
    /// Reads a `vaExportSurfaceHandle` result (separate layers); closes its descriptors and
    /// throws when it is not a two-layer R8 + GR88 export.
    init(descriptor: VADRMPRIMESurfaceDescriptor) throws(EncoderError) {
        var descriptor = descriptor
        // A Result, not a typed-throws closure: those crash Swift 6.3's IR generation here.
        let result = withUnsafeBytes(of: &descriptor) { raw -> Result<DMABufPlanes, EncoderError> in
            do throws(EncoderError) {
                return .success(try DMABufPlanes(descriptorBytes: raw))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// Byte offsets inside `VADRMPRIMESurfaceDescriptor`: Swift cannot import its arrays of
    /// anonymous structs, so they are read by offset (checked against the C compiler in tests).
    enum DescriptorLayout {
        static let width = 4, height = 8, objectCount = 12
        static let objects = 16, objectStride = 16, objectModifier = 8
        static let layerCount = 80, layers = 84, layerStride = 56
        static let layerObjectIndex = 8, layerOffset = 24, layerPitch = 40
        static let size = 312
    }

    /// Reads the descriptor from its bytes.
    init(descriptorBytes raw: UnsafeRawBufferPointer) throws(EncoderError) {
        typealias Layout = DescriptorLayout
        guard raw.count >= Layout.size else {
            throw .backendUnavailable(.vaapi, "the surface descriptor is \(raw.count) bytes, expected \(Layout.size)")
        }
        func word(_ offset: Int) -> UInt32 { raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
        let objectCount = min(Int(word(Layout.objectCount)), 4)
        let objects: [(fd: Int32, modifier: UInt64)] = (0..<objectCount).map { index in
            let base = Layout.objects + index * Layout.objectStride
            return (raw.loadUnaligned(fromByteOffset: base, as: Int32.self),
                    raw.loadUnaligned(fromByteOffset: base + Layout.objectModifier, as: UInt64.self))
        }
        let exported = Array(Set(objects.map(\.fd))).sorted()
        let layerCount = Int(word(Layout.layerCount))
        let width = Int(word(Layout.width)), height = Int(word(Layout.height))
        func plane(_ index: Int, format: UInt32, divisor: Int) -> DMABufPlane? {
            guard index < min(layerCount, 4) else { return nil }
            let base = Layout.layers + index * Layout.layerStride
            guard word(base) == format, word(base + 4) == 1 else { return nil }
            let objectIndex = Int(word(base + Layout.layerObjectIndex))
            guard objectIndex < objects.count else { return nil }
            return DMABufPlane(drmFourCC: format, width: width / divisor, height: height / divisor,
                               fileDescriptor: objects[objectIndex].fd, offset: Int(word(base + Layout.layerOffset)),
                               pitch: Int(word(base + Layout.layerPitch)), modifier: objects[objectIndex].modifier)
        }
        guard layerCount == 2, let luma = plane(0, format: DRMFormat.r8, divisor: 1),
              let chroma = plane(1, format: DRMFormat.gr88, divisor: 2) else {
            for descriptor in exported where descriptor >= 0 { close(descriptor) }
            let formats = (0..<min(layerCount, 4)).map { String(word(Layout.layers + $0 * Layout.layerStride), radix: 16) }
            throw .backendUnavailable(.vaapi, "the exported surface is not two layers R8 + GR88 (\(layerCount) layers, fourccs \(formats)); zero copy is off, upload frames instead")
        }
        self.init(luma: luma, chroma: chroma, fileDescriptors: exported)
    }
}
