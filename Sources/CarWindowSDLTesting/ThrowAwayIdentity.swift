/// A certificate and key for the benchmarks and the fuzz targets' protected links: P-256,
/// self-signed, valid until 2126, published here and so protecting nothing. Never give it to a
/// head unit in a car; tests make their own with the `openssl` command.
package enum ThrowAwayIdentity {
    /// The certificate (PEM).
    package static let certificatePEM = Array("""
-----BEGIN CERTIFICATE-----
MIIBqDCCAU2gAwIBAgIUFlQFGACIZgIoW9pX4t0Xq2XI0a8wCgYIKoZIzj0EAwIw
KDEXMBUGA1UEAwwOY2Fyd2luZG93LWZ1enoxDTALBgNVBAUTBGZ1enowIBcNMjYx
MTI3MTExOTIzWhgPMjEyNjExMDMxMTE5MjNaMCgxFzAVBgNVBAMMDmNhcndpbmRv
dy1mdXp6MQ0wCwYDVQQFEwRmdXp6MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE
5kUadOUoHb2LdO7kuTsAM/7u4yhuoOjE8jRMTeSsz438ODMrbNBFAE0KM+uSqm6U
qn61mNvj2vwtTvWLKkNbFqNTMFEwHQYDVR0OBBYEFMDJuydx8HhbTFkqI8DvWXWq
pVMpMB8GA1UdIwQYMBaAFMDJuydx8HhbTFkqI8DvWXWqpVMpMA8GA1UdEwEB/wQF
MAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhALSlN+2ERfniPKTdAtxQscZFmTq4aaKk
aEu815UV9RdzAiEA6f2TW4Q0JYWrdfe6FUeET6+HiDioehPs8W/XTw87cjM=
-----END CERTIFICATE-----
""".utf8)

    /// Its private key (PEM).
    package static let privateKeyPEM = Array("""
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgZAkQLoFHVZSC+IvB
papJeK/1Mj5QcRb14h65idriCgmhRANCAATmRRp05SgdvYt07uS5OwAz/u7jKG6g
6MTyNExN5KzPjfw4Myts0EUATQoz65KqbpSqfrWY2+Pa/C1O9YsqQ1sW
-----END PRIVATE KEY-----
""".utf8)
}
