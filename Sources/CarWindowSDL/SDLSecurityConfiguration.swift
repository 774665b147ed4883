import CarWindowSDLProtocol

/// How an ``SDLConnection`` protects its streams with SDL's security layer (TLS inside the SDL
/// protocol): production head units of several car makers start a navigation app's video only
/// when it is protected.
///
/// Give the libraries the app ships: a car maker's own, or `OpenSSLSecurityLibrary` with the
/// app's certificate and key. The first whose vehicle makes include the head unit's make (from
/// RegisterAppInterface) protects the connection.
public struct SDLSecurityConfiguration: Sendable {
    /// The security libraries, most specific first.
    public var libraries: [any SDLSecurityLibrary]
    /// Whether video (and audio) may go unprotected when protection cannot be had.
    public var policy: SDLProtectionPolicy
    /// The services started protected: video, and audio when listed.
    public var services: Set<SDLServiceType>
    /// How long a protected StartService may wait for the handshake and the head unit's answer.
    /// SDL Core postpones a handshake until its HMI has said the time, so this is longer than
    /// ``SDLConnection/Configuration/requestTimeout``.
    public var handshakeTimeout: Duration

    /// Protection with `libraries`; by default video and audio, required, within 30 s.
    public init(libraries: [any SDLSecurityLibrary], policy: SDLProtectionPolicy = .required,
                services: Set<SDLServiceType> = [.video, .audio], handshakeTimeout: Duration = .seconds(30)) {
        self.libraries = libraries
        self.policy = policy
        self.services = services
        self.handshakeTimeout = handshakeTimeout
    }

    /// The first library that serves head units of `make`.
    package func library(forMake make: String?) -> (any SDLSecurityLibrary)? {
        libraries.first { $0.serves(make: make) }
    }
}

/// What to do when a service cannot be protected, as sdl_ios's `maximumDesiredEncryption`.
public enum SDLProtectionPolicy: Sendable, Equatable {
    /// Never stream unprotected: a head unit without security, a failed handshake or no library
    /// for the make fails the start with ``SDLConnectionError/protectionUnavailable(_:_:)``.
    case required
    /// Protect where the head unit can; otherwise stream in the clear, with a warning.
    case preferred
}
