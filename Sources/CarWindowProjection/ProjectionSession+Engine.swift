import CarWindowMap
import CarWindowVideoCore

/// The engine's own picture (``ProjectedContent/engine(_:)``): when it changes, and the pixels
/// an engine that draws with anything hands over.
extension ProjectionSession {
    /// Tells the session the engine's picture changed, as a view's `setNeedsDisplay` does: the
    /// next picture is drawn at the stream's pace (at once when the last one is a frame
    /// interval old), then refinements and keep-alives follow as after any change.
    ///
    /// With the map this redraws it too (after a change the session cannot see, say).
    public func invalidate() {
        changed()
    }

    /// Asks for a picture at every frame interval while `continuous` (the engine animates), or
    /// only on ``invalidate()`` and the session's own reasons when not.
    public func setContinuousFrames(_ continuous: Bool) {
        guard continuous != continuousFrames else { return }
        continuousFrames = continuous
        if continuous { changed() }
    }

    /// Whether the engine asked for continuous frames.
    public var drawsContinuously: Bool { continuousFrames }

    /// Hands over the engine's next picture, drawn with anything, for a session whose content
    /// is ``EngineContent/pixels``. The latest pixels win: a picture handed over before the
    /// last one was drawn is dropped. They are uploaded once, on the render thread, when the
    /// next picture is drawn.
    ///
    /// - Throws: ``ProjectionSessionError/engineContent(_:)``:
    ///   ``EngineContentError/wrongContent(operation:content:)`` when the session shows other
    ///   content, ``EngineContentError/noStream`` before the session is connected, and the
    ///   errors of ``EnginePixels/validate(width:height:)`` when the pixels do not fit the
    ///   stream's size or their buffer. Nothing changes on screen then.
    public func pushPixels(_ pixels: EnginePixels) throws(ProjectionSessionError) {
        let size = try streamSizeForPixels()
        do {
            try pixels.validate(width: size.width, height: size.height)
        } catch {
            throw .engineContent(error)
        }
        pendingPixels = pixels
        hasEnginePixels = true
        changed()
    }

    /// ``pushPixels(_:)`` for pixels the session may not keep (a C caller's buffer): their rows
    /// are copied into storage the session reuses from push to push, so a steady stream of
    /// pushes allocates nothing.
    package func pushPixels(copying source: UnsafeRawBufferPointer, format: EnginePixels.Format, width: Int, height: Int,
                            bytesPerRow: Int) throws(ProjectionSessionError) {
        let size = try streamSizeForPixels()
        let needed: Int
        do {
            needed = try EnginePixels.rowsByteCount(width: width, height: height, bytesPerRow: bytesPerRow,
                                                    available: source.count, expectedWidth: size.width,
                                                    expectedHeight: size.height)
        } catch {
            throw .engineContent(error)
        }
        // Dropped first, so that the storage is this session's alone again (unless a draw is
        // uploading it right now, when writing copies it instead).
        pendingPixels = nil
        if pixelStorage.count != needed { pixelStorage = [UInt8](repeating: 0, count: needed) }
        pixelStorage.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<needed])) }
        pendingPixels = EnginePixels(format: format, width: width, height: height, bytesPerRow: bytesPerRow, bytes: pixelStorage)
        hasEnginePixels = true
        changed()
    }

    /// The stream size pixels must have, once the session is known to take pixels.
    private func streamSizeForPixels() throws(ProjectionSessionError) -> VideoSize {
        guard case .engine(.pixels) = configuration.content else {
            let shown = if case .engine(let content) = configuration.content { content.name } else { "the map" }
            throw .engineContent(.wrongContent(operation: "push pixels", content: shown))
        }
        guard let size = life.screen?.stream.encodedSize else { throw .engineContent(.noStream) }
        return size
    }
}
