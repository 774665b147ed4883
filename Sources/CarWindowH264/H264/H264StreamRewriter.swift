/// Rewrites the parameter sets of another encoder's stream (OpenH264's) into what a head unit
/// wants to see, leaving every other byte alone.
enum H264StreamRewriter {
    /// Re-emits the Annex-B access unit with every SPS rewritten: constraint_set0/1 set
    /// (constrained baseline), VUI with video_signal_type (`fullRange`, BT.601 colour), timing for
    /// `framesPerSecond` and a low-delay bitstream_restriction (no reordering, a DPB of
    /// max(1, max_num_ref_frames)). Existing VUI fields (aspect ratio, HRD) are kept. Other NAL
    /// units are copied byte for byte; output uses 4-byte start codes.
    ///
    /// Throws when an SPS cannot be parsed or is not baseline (profile 66): claiming constrained
    /// baseline for another profile would be false.
    static func normalize(_ annexB: [UInt8], fullRange: Bool, framesPerSecond: Double) throws(H264BitstreamError) -> [UInt8] {
        var units: [[UInt8]] = []
        for range in NALUnit.ranges(in: annexB) {
            let unit = annexB[range]
            guard NALUnitType(rawValue: unit[unit.startIndex]) == .sequenceParameterSet else {
                units.append(Array(unit))
                continue
            }
            var sps = try SequenceParameterSet(parsing: unit)
            guard sps.profileIDC == 66 else {
                throw .unsupported("profile_idc \(sps.profileIDC); only baseline (66) streams can be marked constrained baseline")
            }
            sps.constraintFlags[0] = true
            sps.constraintFlags[1] = true
            var vui = sps.vui ?? VUIParameters()
            vui.videoSignalType = VUIParameters.VideoSignalType(
                videoFormat: vui.videoSignalType?.videoFormat ?? 5, fullRange: fullRange, colourDescription: .bt601)
            vui.timing = .forFrameRate(framesPerSecond)
            vui.bitstreamRestriction = .lowDelay(maxNumRefFrames: sps.maxNumRefFrames)
            sps.vui = vui
            let referenceIDC = (unit[unit.startIndex] >> 5) & 3
            units.append(NALUnit.make(type: .sequenceParameterSet, referenceIDC: referenceIDC, rbsp: sps.rbsp()))
        }
        return NALUnit.annexB(units)
    }

    /// The NAL unit types of an Annex-B stream in order.
    static func nalTypes(_ annexB: [UInt8]) -> [NALUnitType] {
        NALUnit.ranges(in: annexB).map { NALUnitType(rawValue: annexB[$0.lowerBound]) }
    }

    /// Whether the stream holds an IDR slice: the check that a requested keyframe came out.
    static func containsIDR(_ annexB: [UInt8]) -> Bool {
        nalTypes(annexB).contains(.idrSlice)
    }
}
