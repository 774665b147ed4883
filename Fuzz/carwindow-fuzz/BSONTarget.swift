import CarWindow
import CarWindowSDLTesting
import CarWindowSimulation
import CarWindowSystemSupport

/// A control payload from the head unit: decoded as BSON, then read as the RPC and video
/// StartServiceACKs and a StartServiceNAK are read.
enum BSONTarget {
    static func run(_ bytes: [UInt8]) {
        _ = SDLServiceRejection(nak: bytes).description
        guard let document = try? BSONDocument(decoding: bytes) else { return }
        // Re-encoding what was read must give bytes that read back to the same bytes (arrays
        // are re-keyed "0", "1"... on the first pass, so compare from the second).
        guard let encoded = try? document.encoded() else {
            fatalError("a decoded BSON document cannot be encoded again")
        }
        guard let reread = try? BSONDocument(decoding: encoded), let reencoded = try? reread.encoded(),
              reencoded == encoded else {
            fatalError("BSON does not survive encoding and decoding")
        }
        read(document)
    }

    /// Reads `document` as each control payload the connection reads.
    static func read(_ document: BSONDocument) {
        let session = SDLSessionInfo(ack: document, sessionID: 1)
        _ = SDLConnectionMachine.negotiatedMTU(session.mtu, otherwise: SDLConnectionMachine.defaultMTU)
        let asked = SDLVideoServiceParameters(resolution: ImageResolution(width: 800, height: 480), format: .h264Raw)
        let granted = asked.acknowledged(by: document)
        _ = SDLConnectionMachine.negotiatedMTU(granted.mtu, otherwise: SDLConnectionMachine.defaultMTU)
        _ = try? granted.startServiceDocument.encoded()
    }
}
