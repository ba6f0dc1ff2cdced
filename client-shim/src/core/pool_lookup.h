/* Finding the appliances of a pool (PROTOCOL.md "Placement in a pool"). */
#ifndef POOL_LOOKUP_H
#define POOL_LOOKUP_H

#include <stddef.h>

#define VMC_POOL_MAX_ENTRIES 64
#define VMC_POOL_ENDPOINT_MAX 256

/* Lists the endpoints (HOST:PORT) that the pool's appliances registered under <prefix>entry/ in etcd, asking
 * each URL of the comma-separated etcd_urls (http://HOST:PORT) in turn until one answers. Returns how many
 * were stored in out (0 is a valid answer: no live appliance), or -1 with the reason in why. */
int vmc_pool_entries(const char *etcd_urls, const char *prefix, char out[][VMC_POOL_ENDPOINT_MAX], int max,
                     char *why, size_t why_len);

/* Base64 (RFC 4648, with padding), as etcd's JSON gateway carries keys. encode: dst holds 4*ceil(n/3)+1.
 * decode: returns the decoded length, or -1 on a character outside the alphabet or a dst too small. */
void vmc_base64_encode(const unsigned char *src, size_t n, char *dst);
long vmc_base64_decode(const char *src, size_t n, unsigned char *dst, size_t dst_cap);

#endif
