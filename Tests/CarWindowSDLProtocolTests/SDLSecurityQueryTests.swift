import Foundation
import Testing
@testable import CarWindowSDLProtocol

/// The security layer's queries as SDL-0317 lays them out, and what a hostile head unit can do with
/// their sizes.
struct SDLSecurityQueryTests {
    @Test func handshakeDataRoundTrips() throws {
        let records: [UInt8] = [0x16, 0x03, 0x01, 0x00, 0x02, 0xAB, 0xCD]
        let query = SDLSecurityQuery.handshake(records, kind: .response, sequenceNumber: 0x0102_0304)
        let bytes = query.encoded()
        #expect(Array(bytes.prefix(12)) == [0x10, 0x00, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 0])
        let decoded = try SDLSecurityQuery(decoding: bytes)
        #expect(decoded == query)
        #expect(decoded.binary == records)
        #expect(decoded.errorCode == nil)
    }

    @Test(arguments: SDLSecurityErrorCode.allCases)
    func errorNotificationsCarryTheirCodeTwice(code: SDLSecurityErrorCode) throws {
        let query = SDLSecurityQuery.error(code, text: "certificate \"x\" expired", sequenceNumber: 7)
        let decoded = try SDLSecurityQuery(decoding: query.encoded())
        #expect(decoded.kind == .notification)
        #expect(decoded.subject == .internalError)
        #expect(decoded.binary == [code.rawValue])
        #expect(decoded.errorCode == code)
        #expect(decoded.errorText == "certificate \"x\" expired")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(decoded.json)) as? [String: Any])
        #expect((object["id"] as? NSNumber)?.intValue == Int(code.rawValue))
    }

    /// SDL Core may send the code in the JSON alone; an unknown code is an internal error.
    @Test func errorCodeFallsBackToTheJSON() throws {
        let json = Array(#"{"id":10,"text":"bad"}"#.utf8)
        let query = SDLSecurityQuery(kind: .notification, subject: .internalError, sequenceNumber: 1, json: json)
        #expect(try SDLSecurityQuery(decoding: query.encoded()).errorCode == .invalidCertificate)
        let unknown = SDLSecurityQuery(kind: .notification, subject: .internalError, sequenceNumber: 1, binary: [0x42])
        #expect(try SDLSecurityQuery(decoding: unknown.encoded()).errorCode == .internalError)
        let garbage = SDLSecurityQuery(kind: .notification, subject: .internalError, sequenceNumber: 1, json: [0xFF, 0x00])
        #expect(try SDLSecurityQuery(decoding: garbage.encoded()).errorCode == .internalError)
    }

    @Test(arguments: [
        ([UInt8](), SDLSecurityErrorCode.invalidQuerySize),
        ([0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0], .invalidQuerySize),
        ([0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2], .invalidQuerySize),
        ([0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF], .invalidQuerySize),
        ([0x30, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0], .invalidQueryID),
        ([0x00, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0], .invalidQueryID),
        ([0x00, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0], .invalidQueryID),
    ])
    func malformedQueriesAreRefusedWithTheirCode(bytes: [UInt8], code: SDLSecurityErrorCode) {
        #expect(throws: SDLSecurityQueryError.self) { try SDLSecurityQuery(decoding: bytes) }
        do {
            _ = try SDLSecurityQuery(decoding: bytes)
        } catch {
            #expect(error.code == code)
            #expect(!error.reason.isEmpty)
        }
    }

    /// A JSON size past the cap is refused even when the bytes are there, so one query cannot
    /// make the JSON parser chew on megabytes.
    @Test func jsonBeyondTheCapIsRefused() {
        let json = [UInt8](repeating: 0x20, count: SDLSecurityQuery.maximumJSONSize + 1)
        let query = SDLSecurityQuery(kind: .notification, subject: .internalError, sequenceNumber: 0, json: json)
        #expect(throws: SDLSecurityQueryError.self) { try SDLSecurityQuery(decoding: query.encoded()) }
    }

    @Test func librariesAreChosenByMake() {
        struct Library: SDLSecurityLibrary {
            var vehicleMakes: Set<String>
            func makeSession(appID: String) throws(SDLSecurityError) -> any SDLSecuritySession {
                throw SDLSecurityError(.notSupported, "test library")
            }
        }
        #expect(Library(vehicleMakes: []).serves(make: nil))
        #expect(Library(vehicleMakes: []).serves(make: "Ford"))
        #expect(Library(vehicleMakes: ["Ford"]).serves(make: "FORD"))
        #expect(!Library(vehicleMakes: ["Ford"]).serves(make: "SDL"))
        #expect(!Library(vehicleMakes: ["Ford"]).serves(make: nil))
    }
}

/// The app's security stage without a TLS library at work: what it answers when it cannot help.
struct SDLAppSecurityStageTests {
    @Test func withoutALibraryHandshakesAreNotSupported() {
        var stage = SDLAppSecurityStage(library: nil, appID: "app")
        #expect(!stage.isAvailable)
        #expect(throws: SDLSecurityError.self) { try stage.prepare() }
        let actions = stage.receive(.handshake([0x16, 3, 1, 0, 0], kind: .request, sequenceNumber: 9))
        guard case .send(let reply)? = actions.first, actions.count == 1 else {
            Issue.record("expected one reply, got \(actions)")
            return
        }
        #expect(reply.errorCode == .notSupported && reply.sequenceNumber == 9)
    }

    @Test func anEncryptedFrameForAnUnprotectedServiceIsRefusedWithItsCode() {
        var stage = SDLAppSecurityStage(library: nil, appID: "app")
        let frame = SDLFrame(header: SDLFrameHeader(version: 5, isEncrypted: true, frameType: .single, serviceType: .video,
                                                    frameInfo: 0, sessionID: 1, dataSize: 3, messageID: 1), payload: [1, 2, 3])
        guard case .failure(let refusal) = stage.open(frame) else {
            Issue.record("an encrypted frame opened without a session")
            return
        }
        #expect(refusal.error.code == .serviceNotProtected)
        guard case .send(let reply)? = refusal.actions.first else {
            Issue.record("the head unit is not told")
            return
        }
        #expect(reply.errorCode == .serviceNotProtected)
    }

    /// A stale "not protected" error about frames in flight before a reset does not fail the
    /// handshake that follows; the head unit's other errors do.
    @Test func staleErrorsAfterAResetAreIgnored() {
        var stage = SDLAppSecurityStage(library: nil, appID: "app")
        #expect(stage.receive(.error(.serviceNotProtected, text: "late", sequenceNumber: 0)).isEmpty)
        #expect(stage.receive(.error(.decryptionFailed, text: "late", sequenceNumber: 0)).isEmpty)
        let actions = stage.receive(.error(.invalidCertificate, text: "bad", sequenceNumber: 2))
        guard case .failed(let error, let reported, let closed)? = actions.first else {
            Issue.record("expected a failure, got \(actions)")
            return
        }
        #expect(error.code == .invalidCertificate && reported && closed.isEmpty)
    }

    /// A failure names what it closed: what was protected must stop; what ran in the clear goes on.
    @Test func aFailureNamesTheServicesItClosed() {
        var stage = SDLAppSecurityStage(library: nil, appID: "app")
        stage.granted(.video)
        let actions = stage.receive(.error(.decryptionFailed, text: "a record did not decrypt", sequenceNumber: 0))
        guard case .failed(_, _, let closed)? = actions.first else {
            Issue.record("expected a failure, got \(actions)")
            return
        }
        #expect(closed == [.video])
        #expect(stage.protectedServices.isEmpty)
    }
}
