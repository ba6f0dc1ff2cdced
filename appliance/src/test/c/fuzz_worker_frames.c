/* Feeds the worker's frame reader and dispatcher random and mutated frames over a socket pair, as a
 * hostile or broken client would: valid headers with random payloads for every call id, bad magic,
 * unknown types, lengths of 0, 2^31 and 2^32-1, truncated frames. The worker must answer or close
 * the connection, never crash, hang or allocate what the client asks for. Built with ASan/UBSan.
 * On a machine without a GPU (and without NVIDIA's driver) every CUDA call fails early, so random
 * pointers are never touched.
 * Usage: fuzz_worker_frames CASES [SEED] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vmc_api.h"
#include "vmc_drv_api.h"
#include "worker.h"

static uint64_t rng;
static uint32_t next_u32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static uint32_t ids[4096];
static int n_ids;

struct served {
    int fd;
};

static void *serve(void *arg) {
    struct vmc_w_client_link link = {.fd = ((struct served *)arg)->fd};
    vmc_w_serve(&link, 0);
    return NULL;
}

static void *drain(void *arg) {
    int fd = *(int *)arg;
    char buf[65536];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    return NULL;
}

static void send_frame(int fd, uint32_t magic, uint16_t type, uint16_t flags, uint32_t id, uint32_t len,
                       const uint8_t *payload, uint32_t payload_len) {
    uint8_t h[VMC_HEADER_BYTES];
    vmc_encode_header(h, type, flags, id, len);
    memcpy(h, &magic, 4);
    (void)vmc_write_full(fd, h, sizeof h);
    if (payload_len)
        (void)vmc_write_full(fd, payload, payload_len);
}

int main(int argc, char **argv) {
    long cases = argc > 1 ? atol(argv[1]) : 10000;
    rng = argc > 2 ? strtoull(argv[2], NULL, 10) : 0x9e3779b97f4a7c15ull;
    printf("fuzz_worker_frames: %ld cases, seed %llu\n", cases, (unsigned long long)rng);
    /* the runtime's ids and the driver's (whose calls here find no NVIDIA driver, or none of the images,
     * handles and kernels they name) */
    for (uint32_t id = 0; id < 4096; id++)
        if (vmc_api_name(id) || vmc_drv_api_name(id))
            ids[n_ids++] = id;
    static const uint32_t nasty_lengths[] = {0, 1, 7, 8, 0x7fffffffu, 0x80000000u, 0xffffffffu, VMC_MAX_CALL_PAYLOAD,
                                             VMC_MAX_CALL_PAYLOAD + 1};
    uint8_t payload[512];
    long done = 0;
    while (done < cases) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
            return 2;
        struct served s = {sv[1]};
        pthread_t server, reader;
        pthread_create(&server, NULL, serve, &s);
        pthread_create(&reader, NULL, drain, &sv[0]);
        /* A burst of frames on one connection; most bursts end early when the worker closes. */
        int burst = 1 + (int)(next_u32() % 16);
        for (int i = 0; i < burst && done < cases; i++, done++) {
            uint32_t plen = next_u32() % sizeof payload;
            for (uint32_t k = 0; k < plen; k++)
                payload[k] = (uint8_t)next_u32();
            /* Small integers in the payload make valid-looking indices, counts and flags likelier. */
            if (plen >= 8 && next_u32() % 2)
                memset(payload + (next_u32() % (plen - 7)), 0, 7);
            uint32_t id = ids[next_u32() % n_ids];
            uint16_t flags = (uint16_t)(next_u32() % 3 == 0 ? VMC_FLAG_ASYNC : 0);
            /* a quarter carry a call number (PROTOCOL.md "Calls from several threads"): 0, 1 or 2, so that
             * at most one call ever waits for a missing number (2 s), or too short a payload to hold one */
            if (next_u32() % 4 == 0) {
                flags |= VMC_FLAG_ORDERED;
                if (plen >= 8) {
                    memset(payload, 0, 8);
                    payload[0] = (uint8_t)(next_u32() % 3);
                }
            }
            switch (next_u32() % 8) {
            case 0: /* bad magic */
                send_frame(sv[0], next_u32(), VMC_CALL, flags, id, plen, payload, plen);
                break;
            case 1: /* unknown or wrong-direction type */
                send_frame(sv[0], VMC_MAGIC, (uint16_t)(next_u32() % 20), flags, id, plen, payload, plen);
                break;
            case 2: /* a length the payload does not have */
                send_frame(sv[0], VMC_MAGIC, VMC_CALL, flags, id,
                           nasty_lengths[next_u32() % (sizeof nasty_lengths / sizeof nasty_lengths[0])], payload, plen);
                break;
            case 3: /* truncated header */
                (void)vmc_write_full(sv[0], payload, next_u32() % VMC_HEADER_BYTES);
                break;
            case 4: /* unknown call id */
                send_frame(sv[0], VMC_MAGIC, VMC_CALL, flags, next_u32(), plen, payload, plen);
                break;
            default: /* a well-formed CALL with random arguments */
                send_frame(sv[0], VMC_MAGIC, VMC_CALL, flags, id, plen, payload, plen);
                break;
            }
        }
        shutdown(sv[0], SHUT_WR);
        pthread_join(server, NULL); /* the worker closes its end when the stream ends */
        pthread_join(reader, NULL);
        close(sv[0]);
    }
    printf("fuzz_worker_frames: %ld passed, 0 failed\n", done);
    return 0;
}
