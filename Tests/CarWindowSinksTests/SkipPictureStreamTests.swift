import Foundation
import Testing
@testable import CarWindowSystemSupport
@testable import CarWindowVideoCore
@testable import CarWindowH264
@testable import CarWindowSinks
@testable import CarWindowTestSupport

/// Hand-made all-skip keep-alive pictures inside a real OpenH264 stream, checked by ffmpeg:
/// every picture decodes without a complaint, a skip picture repeats the previous picture
/// exactly, and the encoder's later pictures (renumbered) decode exactly as without the skips.
@Suite struct SkipPictureStreamTests {
    static let width = 320, height = 192

    /// Ten pictures of a moving map-like scene; picture 8 is an IDR.
    static func encoderUnits() throws -> [AccessUnit] {
        let encoder = try OpenH264Encoder(settings: EncoderSettings(width: width, height: height, bitrate: 400_000))
        return try (0..<10).map { index in
            try encoder.encode(MapLikeFrames.frame(width: width, height: height, index: index, texture: 12),
                               presentationTime: .seconds(Double(index) / 15), forceIDR: index == 8)
        }
    }

    static func lumaPictures(_ units: [AccessUnit]) throws -> (pictures: [Data], errors: String) {
        let (planes, errors) = try FFmpegTool.decodeLuma(units.flatMap(\.data), width: width, height: height)
        let size = width * height
        let pictures = stride(from: 0, to: planes.count, by: size).map { planes[$0..<min($0 + size, planes.count)] }
        return (pictures.map { Data($0) }, errors)
    }

    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"))
    func skipPicturesRepeatThePictureAndTheEncoderStreamStaysExact() throws {
        let original = try Self.encoderUnits()
        var follower = SkipPictureStream()
        var stream: [AccessUnit] = []
        // Which original picture each picture of the new stream shows.
        var shows: [Int] = []
        for (index, unit) in original.enumerated() {
            stream.append(follower.pass(unit))
            shows.append(index)
            let skips = index == 4 ? 3 : index == 7 ? 2 : index == 8 ? 1 : 0
            for _ in 0..<skips {
                let made = follower.skipPicture(presentationTime: .zero, frameNumber: 0)
                let skip = try #require(made)
                #expect(skip.data.count < 32, "a skip picture is a few bytes: \(skip.data.count)")
                stream.append(skip)
                shows.append(index)
            }
        }
        let reference = try Self.lumaPictures(original)
        let withSkips = try Self.lumaPictures(stream)
        #expect(reference.errors.isEmpty)
        #expect(withSkips.errors.isEmpty, "ffmpeg: \(withSkips.errors)")
        #expect(withSkips.pictures.count == stream.count)
        for (position, source) in shows.enumerated() where position < withSkips.pictures.count {
            #expect(withSkips.pictures[position] == reference.pictures[source],
                    "picture \(position) should repeat original picture \(source) exactly")
        }
    }

    /// Each unit passed carries its first slice's QP, as ffmpeg's trace_headers reads it:
    /// 26 + pic_init_qp_minus26 + slice_qp_delta. A sliced stream (three threads) too, and at a
    /// bitrate so low that the quantiser reaches the top of its range.
    @Test(.enabled(if: FFmpegTool.isAvailable, "ffmpeg/ffprobe not installed (apt-get install ffmpeg)"),
          arguments: [(1, 400_000), (3, 20_000)])
    func passedUnitsCarryTheirSliceQuantizer(threads: Int, bitrate: Int) throws {
        var settings = EncoderSettings(width: Self.width, height: 3 * 64, bitrate: bitrate)
        settings.threads = .fixed(threads)
        let encoder = try OpenH264Encoder(settings: settings)
        var follower = SkipPictureStream()
        let units = try (0..<12).map { index in
            follower.pass(try encoder.encode(MapLikeFrames.frame(width: Self.width, height: 3 * 64, index: index, texture: 12),
                                             presentationTime: .seconds(Double(index) / 15), forceIDR: index == 8))
        }
        let sections = try FFmpegTool.traceHeaders(units.flatMap(\.data))
        func field(_ section: (title: String, fields: [(String, Int)]), _ name: String) -> Int? {
            section.fields.first { $0.0 == name }?.1
        }
        let initial = try #require(sections.first { $0.title == "Picture Parameter Set" }.flatMap { field($0, "pic_init_qp_minus26") })
        // The first slice of each picture: first_mb_in_slice 0.
        let traced = sections.filter { $0.title.contains("Slice Header") && field($0, "first_mb_in_slice") == 0 }
            .compactMap { field($0, "slice_qp_delta").map { 26 + initial + $0 } }
        #expect(traced.count == units.count)
        #expect(units.map(\.quantizer) == traced.map(Optional.some), "trace_headers says \(traced)")
        if bitrate < 100_000 { #expect(traced.contains { $0 >= 45 }, "QP \(traced)") }
    }

    @Test func aStreamItCannotFollowGivesNoSkipPicture() throws {
        var follower = SkipPictureStream()
        let first = follower.skipPicture(presentationTime: .zero, frameNumber: 0)
        #expect(first == nil, "nothing seen yet")
        // A P picture without its IDR and parameter sets cannot be followed.
        let units = try Self.encoderUnits()
        _ = follower.pass(units[1])
        let second = follower.skipPicture(presentationTime: .zero, frameNumber: 0)
        #expect(second == nil)
        _ = follower.pass(units[0])
        #expect(follower.canSkip)
    }
}
