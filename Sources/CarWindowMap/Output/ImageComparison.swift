/// How far two pictures of the same size are apart.
package struct ImageDifference: Sendable, CustomStringConvertible {
    /// Pixels where some channel differs by more than the tolerance.
    package var differingPixels: Int
    /// All pixels compared.
    package var totalPixels: Int
    /// The largest difference of any channel, 0...255.
    package var maximumChannelDifference: Int

    /// The share of differing pixels, 0...1.
    package var differingFraction: Double { totalPixels == 0 ? 0 : Double(differingPixels) / Double(totalPixels) }

    package var description: String {
        "\(differingPixels) of \(totalPixels) pixels differ (max channel difference \(maximumChannelDifference))"
    }
}

extension RGBAImage {
    /// Compares pixel by pixel; a pixel differs when any channel is more than `tolerance` apart.
    /// Nil when the sizes differ.
    package func difference(from other: RGBAImage, tolerance: Int) -> ImageDifference? {
        guard width == other.width, height == other.height else { return nil }
        var differing = 0, maximum = 0
        pixels.withUnsafeBufferPointer { a in
            other.pixels.withUnsafeBufferPointer { b in
                var i = 0
                while i < a.count {
                    var pixelMaximum = 0
                    for c in 0..<4 { pixelMaximum = max(pixelMaximum, abs(Int(a[i + c]) - Int(b[i + c]))) }
                    if pixelMaximum > tolerance { differing += 1 }
                    maximum = max(maximum, pixelMaximum)
                    i += 4
                }
            }
        }
        return ImageDifference(differingPixels: differing, totalPixels: width * height, maximumChannelDifference: maximum)
    }

    /// Mean structural similarity (SSIM) of the luma of both pictures over 8x8 windows with
    /// stride 4, in -1...1; nil when the sizes differ.
    package func structuralSimilarity(to other: RGBAImage) -> Double? {
        guard width == other.width, height == other.height, width >= 8, height >= 8 else { return nil }
        let a = luma, b = other.luma
        let c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255)
        var total = 0.0, windows = 0
        for y in stride(from: 0, through: height - 8, by: 4) {
            for x in stride(from: 0, through: width - 8, by: 4) {
                var sumA = 0.0, sumB = 0.0, sumAA = 0.0, sumBB = 0.0, sumAB = 0.0
                for dy in 0..<8 {
                    let row = (y + dy) * width + x
                    for dx in 0..<8 {
                        let va = a[row + dx], vb = b[row + dx]
                        sumA += va; sumB += vb; sumAA += va * va; sumBB += vb * vb; sumAB += va * vb
                    }
                }
                let n = 64.0
                let meanA = sumA / n, meanB = sumB / n
                let varA = sumAA / n - meanA * meanA, varB = sumBB / n - meanB * meanB
                let covariance = sumAB / n - meanA * meanB
                total += ((2 * meanA * meanB + c1) * (2 * covariance + c2))
                    / ((meanA * meanA + meanB * meanB + c1) * (varA + varB + c2))
                windows += 1
            }
        }
        return total / Double(windows)
    }

    /// BT.601 luma per pixel.
    var luma: [Double] {
        var result = [Double](repeating: 0, count: width * height)
        for i in 0..<(width * height) {
            let r = Double(pixels[i * 4]), g = Double(pixels[i * 4 + 1]), b = Double(pixels[i * 4 + 2])
            result[i] = 0.299 * r + 0.587 * g + 0.114 * b
        }
        return result
    }
}
