/* Reading an appliance's UCX worker address and packed rkey safely (ucx_blob_check.c). */
#ifndef VMC_UCX_BLOB_CHECK_H
#define VMC_UCX_BLOB_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "vmc_wire.h"

/* UCX reads a worker address or a packed rkey without being told its length: each is handed to it followed by
 * this many zero bytes, in the checking process and in the client alike, so that both read the same bytes and
 * neither reads past its copy (an rkey names at most 64 memory domains of at most 255 bytes each). */
#define VMC_UCX_BLOB_PAD (64u << 10)

/* A copy of `n` bytes followed by VMC_UCX_BLOB_PAD zero bytes (malloc'd), or NULL. */
uint8_t *vmc_ucx_padded_copy(const uint8_t *bytes, uint32_t n);

/* Has vmcuda-ucx-check (client-shim/tools/vmcuda_ucx_check.c) read the rkey and the address in a process of its
 * own, with this process's UCX settings, making its end point as the client will (`peer_mode`: asking for peer
 * error handling first, falling back without it where UCX refuses: transport_ucx.c connect_padded), and reach the
 * agent at that address within half of `timeout_ms`. 0 when it did so and lived; -1 with why set otherwise (it
 * refused them, died of them, did not reach the agent, took longer than `timeout_ms`, or could not be run). */
int vmc_ucx_check_blobs(const uint8_t *rkey, uint32_t rkey_len, const uint8_t *address, uint32_t address_len,
                        int peer_mode, int timeout_ms, char *why, size_t why_len);

#endif
