import Foundation
import Logging
import CarWindowVideoCore

/// What a head unit's screen offers the video: the size of its video area, how many of its
/// pixels one video pixel covers, and what its decoder and link can take.
///
/// A session chooses its stream from this (``chooseStreamResolution(for:)``): the encoded size is
/// ``size`` divided by ``effectiveScale``, and the encoder runs at ``preferredFramesPerSecond``
/// and within ``maximumBitrate``. SmartDeviceLink's `VideoStreamingCapability` is one source of
/// these values (the SDL link converts it); an engine can also fill them in by hand.
///
/// Every field is optional because a head unit may leave out what it does not know, and a
/// resize may carry only what changed; ``filling(from:)`` restores the rest.
public struct HeadUnitDisplay: Sendable, Equatable {
    /// The size of the head unit's video area in its own pixels; touches arrive in this space.
    public var size: VideoSize?
    /// Display pixels per video pixel, as given; read ``effectiveScale`` instead.
    public var scale: Double?
    /// The physical diagonal of the screen in inches.
    public var diagonalInches: Double?
    /// The frame rate the head unit wants; the stream follows it unless the app asks for less.
    public var preferredFramesPerSecond: Int?
    /// The most the head unit's link and decoder take, in bits per second.
    public var maximumBitrate: Int?
    /// Other layouts the head unit can show, in its order of preference; each may have
    /// alternatives of its own.
    public var alternatives: [HeadUnitDisplay]?

    /// A display from its fields; all absent by default.
    public init(size: VideoSize? = nil, scale: Double? = nil, diagonalInches: Double? = nil,
                preferredFramesPerSecond: Int? = nil, maximumBitrate: Int? = nil,
                alternatives: [HeadUnitDisplay]? = nil) {
        self.size = size
        self.scale = scale
        self.diagonalInches = diagonalInches
        self.preferredFramesPerSecond = preferredFramesPerSecond
        self.maximumBitrate = maximumBitrate
        self.alternatives = alternatives
    }

    /// The allowed range of ``scale``.
    public static let scaleRange: ClosedRange<Double> = 1...10

    /// ``scale`` clamped to ``scaleRange``: a missing or non-finite scale means 1, so a broken
    /// head unit yields a full-size stream rather than a zero-size one.
    public var effectiveScale: Double {
        guard let scale, scale.isFinite else { return 1 }
        return min(max(scale, Self.scaleRange.lowerBound), Self.scaleRange.upperBound)
    }

    /// This update with every missing field taken from `current`, as a resize needs: a head unit
    /// may send only the fields that changed.
    public func filling(from current: HeadUnitDisplay) -> HeadUnitDisplay {
        HeadUnitDisplay(
            size: size ?? current.size,
            scale: scale ?? current.scale,
            diagonalInches: diagonalInches ?? current.diagonalInches,
            preferredFramesPerSecond: preferredFramesPerSecond ?? current.preferredFramesPerSecond,
            maximumBitrate: maximumBitrate ?? current.maximumBitrate,
            alternatives: alternatives ?? current.alternatives)
    }

    /// This display and all its alternatives, depth-first in the head unit's order, each
    /// without alternatives.
    ///
    /// An alternative is another layout of the same screen and link, so it inherits the
    /// stream-wide fields it leaves out (bitrate, frame rate, diagonal); its size and scale are
    /// its own.
    public var allModes: [HeadUnitDisplay] {
        var result: [HeadUnitDisplay] = []
        appendFlattened(to: &result, inheriting: nil)
        return result
    }

    private func appendFlattened(to result: inout [HeadUnitDisplay], inheriting parent: HeadUnitDisplay?) {
        var own = self
        own.alternatives = nil
        if let parent {
            own.maximumBitrate = own.maximumBitrate ?? parent.maximumBitrate
            own.preferredFramesPerSecond = own.preferredFramesPerSecond ?? parent.preferredFramesPerSecond
            own.diagonalInches = own.diagonalInches ?? parent.diagonalInches
        }
        result.append(own)
        for alternative in alternatives ?? [] {
            alternative.appendFlattened(to: &result, inheriting: own)
        }
    }
}
