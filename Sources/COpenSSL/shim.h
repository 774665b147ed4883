#ifndef SDLTLS_SHIM_H
#define SDLTLS_SHIM_H

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

// Swift cannot import function-like macros or 64-bit option constants built
// from macros, so each one gets a one-line function here and nothing more.

static inline long sdltls_bio_pending(BIO *bio) { return (long)BIO_pending(bio); }

static inline void sdltls_bio_set_mem_eof_return(BIO *bio, int value) {
    BIO_set_mem_eof_return(bio, value);
}

static inline int sdltls_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int sdltls_ctx_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

static inline void sdltls_ctx_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    (void)SSL_CTX_set_session_cache_mode(ctx, mode);
}

static inline int sdltls_ctx_add1_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return (int)SSL_CTX_add1_chain_cert(ctx, cert);
}

static inline int sdltls_dtls_set_link_mtu(SSL *ssl, long mtu) {
    return (int)DTLS_set_link_mtu(ssl, mtu);
}

static inline uint64_t sdltls_op_no_query_mtu(void) { return SSL_OP_NO_QUERY_MTU; }
static inline uint64_t sdltls_op_no_ticket(void) { return SSL_OP_NO_TICKET; }
static inline uint64_t sdltls_op_no_renegotiation(void) { return SSL_OP_NO_RENEGOTIATION; }

static inline int sdltls_err_lib(unsigned long code) { return ERR_GET_LIB(code); }
static inline int sdltls_err_reason(unsigned long code) { return ERR_GET_REASON(code); }

// SDL carries DTLS over a reliable transport (TCP, USB, Bluetooth), so a
// retransmission never helps; the timer only has to be long enough never to fire
// while the peer is merely slow.
static inline unsigned int sdltls_dtls_slow_timer(SSL *ssl, unsigned int previous_us) {
    (void)ssl;
    (void)previous_us;
    return 60u * 1000u * 1000u;
}

static inline void sdltls_dtls_use_slow_timer(SSL *ssl) {
    DTLS_set_timer_cb(ssl, sdltls_dtls_slow_timer);
}

#endif
