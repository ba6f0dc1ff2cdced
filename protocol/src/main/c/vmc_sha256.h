/* SHA-256 (FIPS 180-4): the identity of executables (HELLO) and of module images (the driver front end),
 * computed by the client and checked by the worker. Clients carry no crypto library. */
#ifndef VMC_SHA256_H
#define VMC_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct vmc_sha256 {
    uint32_t h[8];
    uint64_t total;
    uint8_t block[64];
    size_t fill;
};

void vmc_sha256_init(struct vmc_sha256 *s);
void vmc_sha256_update(struct vmc_sha256 *s, const void *data, size_t n);
void vmc_sha256_final(struct vmc_sha256 *s, uint8_t out[32]);

/* HMAC-SHA256 (RFC 2104) of the concatenation a || b: the HELLO's proof of the tenant token
 * (PROTOCOL.md "Session setup"). */
void vmc_hmac_sha256(const void *key, size_t key_len, const void *a, size_t a_len, const void *b, size_t b_len,
                     uint8_t out[32]);

#endif
