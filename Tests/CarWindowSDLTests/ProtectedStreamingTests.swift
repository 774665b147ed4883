import Foundation
import Testing
@testable import CarWindowVideoCore
@testable import CarWindowMap
@testable import CarWindowProjection
@testable import CarWindowSDLProtocol
@testable import CarWindowSDLSecurity
@testable import CarWindowSDL
@testable import CarWindowSDLTesting
@testable import CarWindowTestSupport

/// Protected video (TLS inside SDL) from a projection session into the in-repo head unit running
/// SDL's security layer as SDL Core does: the head unit as TLS client, video forced protected.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ProtectedStreamingTests {
    static let capability = SDLProjectionLinkTests.capability

    static func headUnitSecurity(_ transport: OpenSSLHeadUnitSession.Transport = .tls,
                                 certificates: TestCertificates) -> HeadUnitSimulator.Security {
        HeadUnitSimulator.Security(transport: transport, trustedCAsPEM: certificates.ca.certificate, verifyApp: true,
                                   forceProtected: [.video])
    }

    static func appSecurity(_ pair: TestCertificates.Pair, policy: SDLProtectionPolicy = .required) throws -> SDLSecurityConfiguration {
        SDLSecurityConfiguration(libraries: [try OpenSSLSecurityLibrary(certificatePEM: pair.certificate, privateKeyPEM: pair.key)],
                                 policy: policy, handshakeTimeout: hangGuard)
    }

    static func rig(headUnit security: HeadUnitSimulator.Security?,
                    app appSecurity: SDLSecurityConfiguration?) async throws -> SDLProjectionLinkTests.Rig {
        try await SDLProjectionLinkTests.rig(capability: capability, security: appSecurity) { $0.security = security }
    }

    @Test(arguments: [OpenSSLHeadUnitSession.Transport.tls, .dtls])
    func protectedVideoStreamsAndDecodes(transport: OpenSSLHeadUnitSession.Transport) async throws {
        let certificates = try TestCertificates.load()
        let rig = try await Self.rig(headUnit: Self.headUnitSecurity(transport, certificates: certificates),
                                     app: try Self.appSecurity(certificates.app))
        let streamed = await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= 15 })
        try #require(streamed)
        let snapshot = await rig.simulator.snapshot()
        #expect(snapshot.handshakes == 1)
        #expect(snapshot.securityProtocol == (transport == .tls ? "TLSv1.3" : "DTLSv1.2"))
        #expect(snapshot.protectedServices == [.video])
        #expect(await rig.link.connection.protectedServices == [.video])
        #expect(snapshot.decryptedFrames >= snapshot.videoUnitCount, "every video frame came encrypted")
        #expect(snapshot.plainFramesOnProtectedServices == 0)
        #expect(snapshot.securityErrorsSent.isEmpty && snapshot.securityErrorsReceived.isEmpty)
        // What the head unit decrypted is the stream: ffmpeg decodes every picture.
        let sizes = try SessionFixtures.frameSizes(of: snapshot.videoUnits.flatMap { $0 })
        #expect(sizes.count == snapshot.videoUnits.count && Set(sizes) == ["320,192"])
        // RPCs stay in the clear and still work: haptic rectangles arrived.
        #expect(await eventually { await !rig.simulator.snapshot().hapticData.isEmpty })
        await rig.close()
    }

    /// Verification on and an app certificate from another CA: a clear error, and no video at all.
    @Test func aCertificateTheHeadUnitDoesNotTrustGetsNoVideo() async throws {
        let certificates = try TestCertificates.load()
        let rig = try await Self.rig(headUnit: Self.headUnitSecurity(certificates: certificates),
                                     app: try Self.appSecurity(certificates.otherApp))
        #expect(await eventually { await rig.link.videoFailure != nil })
        let failure = try #require(await rig.link.videoFailure)
        guard case .protectionUnavailable(.video, let reason) = failure else {
            Issue.record("expected protectionUnavailable, got \(failure)")
            await rig.close()
            return
        }
        #expect(reason.contains("invalidCertificate") || reason.contains("certificate"), "\(reason)")
        let snapshot = await rig.simulator.snapshot()
        #expect(snapshot.videoUnitCount == 0 && snapshot.decryptedFrames == 0)
        #expect(snapshot.securityErrorsSent.map(\.code) == [.invalidCertificate])
        await rig.close()
    }

    @Test func anExpiredCertificateIsSaidToBeExpired() async throws {
        let certificates = try TestCertificates.load()
        let rig = try await Self.rig(headUnit: Self.headUnitSecurity(certificates: certificates),
                                     app: try Self.appSecurity(certificates.expiredApp))
        #expect(await eventually { await rig.link.videoFailure != nil })
        #expect(await rig.simulator.snapshot().securityErrorsSent.map(\.code) == [.expiredCertificate])
        #expect(await rig.simulator.snapshot().videoUnitCount == 0)
        await rig.close()
    }

    /// A head unit without a security layer ACKs the protected start unprotected: refused when
    /// protection is required, streamed with a warning when it is only preferred.
    @Test(arguments: [SDLProtectionPolicy.required, .preferred])
    func aHeadUnitWithoutSecurity(policy: SDLProtectionPolicy) async throws {
        let certificates = try TestCertificates.load()
        let rig = try await Self.rig(headUnit: nil, app: try Self.appSecurity(certificates.app, policy: policy))
        switch policy {
        case .required:
            #expect(await eventually { await rig.link.videoFailure != nil })
            if case .protectionUnavailable(.video, let reason)? = await rig.link.videoFailure {
                #expect(reason.contains("no security layer"))
            } else {
                Issue.record("expected protectionUnavailable, got \(String(describing: await rig.link.videoFailure))")
            }
            // What opened unprotected was ended again, before any picture went out.
            #expect(await eventually { await rig.simulator.snapshot().videoEndCount == 1 })
            #expect(await rig.simulator.snapshot().videoUnitCount == 0)
        case .preferred:
            let streamed = await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= 5 })
            #expect(streamed)
            #expect(await rig.link.connection.protectedServices.isEmpty)
        }
        await rig.close()
    }

    /// An app with no security configured, against a head unit that forces video protected, is
    /// refused with the head unit's reason.
    @Test func anUnprotectedAppIsRefusedByAForcingHeadUnit() async throws {
        let certificates = try TestCertificates.load()
        let rig = try await Self.rig(headUnit: Self.headUnitSecurity(certificates: certificates), app: nil)
        #expect(await eventually { await rig.link.videoFailure != nil })
        #expect("\(try #require(await rig.link.videoFailure))".contains("must be protected"))
        #expect(await rig.simulator.snapshot().videoUnitCount == 0)
        await rig.close()
    }

    /// SDL-0207: the policy marks SendHapticData encryption_required. The app protects its RPC
    /// service (a second StartService with the E bit) and sends the haptic rectangles encrypted,
    /// whether the policy says so in advance or the head unit answers ENCRYPTION_NEEDED.
    @Test(arguments: [true, false])
    func rpcsThePolicyWantsEncryptedGoEncrypted(announced: Bool) async throws {
        let certificates = try TestCertificates.load()
        var security = Self.headUnitSecurity(certificates: certificates)
        security.encryptedRPCs = [.sendHapticData]
        security.announcesEncryption = announced
        let rig = try await Self.rig(headUnit: security, app: try Self.appSecurity(certificates.app))
        let sent = await SessionFixtures.drive(rig.session, until: { await !rig.simulator.snapshot().hapticData.isEmpty })
        #expect(sent)
        let snapshot = await rig.simulator.snapshot()
        #expect(snapshot.encryptedRequests.contains(.sendHapticData))
        #expect(snapshot.protectedServices.isSuperset(of: [.rpc, .video]))
        #expect(snapshot.handshakes == 1, "one TLS session protects every service of the connection")
        #expect(snapshot.plainFramesOnProtectedServices == 0)
        #expect(announced ? snapshot.encryptionNeeded.isEmpty : snapshot.encryptionNeeded == [.sendHapticData])
        // Other RPCs stay in the clear, and the video still decodes.
        #expect(!snapshot.encryptedRequests.contains(.getSystemCapability))
        #expect(await rig.link.connection.protectedServices.contains(.rpc))
        await rig.close()
    }

    /// An app with no certificate cannot send what the policy wants encrypted. Told in advance, it
    /// sends nothing; learning it from ENCRYPTION_NEEDED, nothing of it goes out encrypted or is held.
    @Test(arguments: [true, false])
    func withoutSecurityARequiredEncryptionIsRefusedNotSentInTheClear(announced: Bool) async throws {
        let certificates = try TestCertificates.load()
        var security = Self.headUnitSecurity(certificates: certificates)
        security.forceProtected = []
        security.encryptedRPCs = [.sendHapticData]
        security.announcesEncryption = announced
        let rig = try await Self.rig(headUnit: security, app: nil)
        _ = await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= 10 })
        if !announced {
            #expect(await eventually { await !rig.simulator.snapshot().encryptionNeeded.isEmpty }, "the app tried its rectangles")
        }
        let snapshot = await rig.simulator.snapshot()
        #expect(snapshot.hapticData.isEmpty)
        #expect(snapshot.encryptedRequests.isEmpty)
        if announced {
            #expect(snapshot.encryptionNeeded.isEmpty, "told in advance, no unencrypted attempt reached the head unit")
        } else {
            #expect(!snapshot.encryptionNeeded.isEmpty && snapshot.encryptionNeeded.allSatisfy { $0 == .sendHapticData })
        }
        await rig.close()
    }

    /// The head unit reports an error mid-stream and resets, as SDL Core does: the app resets too,
    /// starts video again with a new handshake, and the stream goes on decodable.
    @Test func afterASecurityErrorTheVideoComesBackWithANewHandshake() async throws {
        let certificates = try TestCertificates.load()
        let rig = try await Self.rig(headUnit: Self.headUnitSecurity(certificates: certificates),
                                     app: try Self.appSecurity(certificates.app))
        try #require(await SessionFixtures.drive(rig.session, until: { await rig.simulator.snapshot().videoUnitCount >= 5 }))
        let before = await rig.simulator.snapshot().videoUnitCount
        await rig.simulator.sendSecurityError(.decryptionFailed, text: "test: a record did not decrypt")
        let resumed = await SessionFixtures.drive(rig.session, until: {
            let snapshot = await rig.simulator.snapshot()
            return snapshot.handshakes >= 2 && snapshot.videoUnitCount >= before + 10
        })
        let snapshot = await rig.simulator.snapshot()
        let linkFailure = await rig.link.videoFailure, sessionState = await rig.session.state
        #expect(resumed, "handshakes \(snapshot.handshakes), units \(snapshot.videoUnitCount) after \(before), video \(String(describing: snapshot.video)), requests \(snapshot.videoRequests.count), errors sent \(snapshot.securityErrorsSent), received \(snapshot.securityErrorsReceived), link failure \(String(describing: linkFailure)), session \(sessionState)")
        #expect(snapshot.protectedServices.contains(.video))
        #expect(snapshot.plainFramesOnProtectedServices == 0)
        #expect(snapshot.videoWhileNotAllowed == 0, "no video between the reset and the new start")
        let after = Array(snapshot.videoUnits[before...])
        #expect(try SessionFixtures.frameSizes(of: after.flatMap { $0 }).count == after.count, "the new stream starts with an IDR")
        await rig.close()
    }
}
