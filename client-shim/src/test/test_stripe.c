/* Striping a large copy over several connections (shim_stripe.c): the stripes must cover the copy
 * exactly once, run on different threads at once, wait first for the caller's default stream, report
 * the first error in address order, and a stripe whose helper thread cannot join the session must be
 * moved by the caller instead. The session, the config and vmc_sync_default_stream are the shim's
 * collaborators and are stood in for here; the "device" is a host buffer. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "shim_config.h"
#include "shim_session.h"
#include "shim_stripe.h"

static struct vmc_client_config config = {.tcp_streams = 4, .gpus = 1};
const struct vmc_client_config *vmc_client_config(void) { return &config; }

static struct vmc_conn a_connection;
static pthread_t refusing_thread; /* vmc_thread_conn fails on this thread (when set) */
static int refuse_helpers;
struct vmc_conn *vmc_thread_conn(cudaError_t *err) {
    if (refuse_helpers && !pthread_equal(pthread_self(), refusing_thread)) {
        *err = cudaErrorDevicesUnavailable;
        return NULL;
    }
    return &a_connection;
}

static cudaStream_t synced_stream = (cudaStream_t)(uintptr_t)0xdead;
static int syncs;
cudaError_t vmc_sync_default_stream(unsigned mode) {
    cudaStream_t stream = (mode & 2u) ? cudaStreamPerThread : 0;
    synced_stream = stream;
    syncs++;
    return cudaSuccess;
}

static uint8_t *device_memory; /* "device address" d is device_memory + d */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t seen_threads[16];
static int n_seen, n_moves;
static size_t smallest_move = SIZE_MAX;
static uint64_t failing_offset = UINT64_MAX; /* the stripe containing it fails */

static void note_thread(void) {
    pthread_mutex_lock(&seen_lock);
    int known = 0;
    for (int i = 0; i < n_seen; i++)
        known |= pthread_equal(seen_threads[i], pthread_self());
    if (!known && n_seen < 16)
        seen_threads[n_seen++] = pthread_self();
    n_moves++;
    pthread_mutex_unlock(&seen_lock);
}

static void note_size(size_t n) {
    pthread_mutex_lock(&seen_lock);
    if (n < smallest_move)
        smallest_move = n;
    pthread_mutex_unlock(&seen_lock);
}

static cudaError_t move_to_device(uint8_t *host, uint64_t device, size_t n, unsigned mode) {
    (void)mode;
    note_thread();
    note_size(n);
    if (failing_offset >= device && failing_offset < device + n)
        return device == 0 ? cudaErrorInvalidValue : cudaErrorIllegalAddress;
    memcpy(device_memory + device, host, n);
    return cudaSuccess;
}

static void reset(void) {
    n_seen = n_moves = syncs = 0;
    smallest_move = SIZE_MAX;
    failing_offset = UINT64_MAX;
}

static void one_copy(size_t count, unsigned ways) {
    uint8_t *host = malloc(count);
    for (size_t i = 0; i < count; i++)
        host[i] = (uint8_t)(i * 2654435761u >> 13);
    memset(device_memory, 0xee, count + 4096);
    reset();
    cudaError_t st = vmc_striped_copy(ways, host, 0, count, 0, move_to_device);
    CHECK(st == cudaSuccess, "striped copy of %zu bytes in %u ways: %d", count, ways, (int)st);
    CHECK(memcmp(device_memory, host, count) == 0, "striped copy of %zu bytes in %u ways differs", count, ways);
    CHECK(device_memory[count] == 0xee, "striped copy of %zu bytes wrote past its end", count);
    CHECK(syncs == 1 && synced_stream == 0, "the legacy default stream was not synchronized first");
    CHECK(n_moves <= (int)ways && n_seen == n_moves, "%u ways: %d stripes on %d threads", ways, n_moves, n_seen);
    free(host);
}

int main(void) {
    device_memory = malloc((256u << 20) + 4096);
    refusing_thread = pthread_self();

    /* how many stripes */
    struct vmc_stripe_policy stream = vmc_stream_stripe_policy();
    CHECK(stream.min == (4u << 20) && stream.piece == (1u << 20), "the byte stream stripes from 4 MiB in 1 MiB stripes");
    CHECK(vmc_stripe_ways((4u << 20) - 1, stream) == 1, "a copy below the threshold is striped");
    CHECK(vmc_stripe_ways(4u << 20, stream) == 4, "4 MiB: %u stripes, expected 4 (1 MiB each)", vmc_stripe_ways(4u << 20, stream));
    CHECK(vmc_stripe_ways(1u << 30, stream) == 4, "1 GiB with tcp_streams 4: %u", vmc_stripe_ways(1u << 30, stream));
    config.tcp_streams = 8;
    CHECK(vmc_stripe_ways(6u << 20, stream) == 6, "6 MiB with tcp_streams 8: %u stripes, expected 6", vmc_stripe_ways(6u << 20, stream));
    config.tcp_streams = 4;
    /* a ring's transport has a policy of its own (UCX: from 512 KiB in stripes of 256 KiB or more) */
    struct vmc_stripe_policy ring = {512u << 10, 256u << 10};
    CHECK(vmc_stripe_ways(512u << 10, ring) == 2, "512 KiB: %u stripes, expected 2", vmc_stripe_ways(512u << 10, ring));
    CHECK(vmc_stripe_ways(1u << 20, ring) == 4, "1 MiB: %u stripes, expected 4", vmc_stripe_ways(1u << 20, ring));
    CHECK(vmc_stripe_ways((512u << 10) - 1, ring) == 1, "below a ring's threshold it is striped");
    CHECK(vmc_stripe_ways(1u << 30, (struct vmc_stripe_policy){0, 0}) == 1, "a ring that never stripes is striped");
    config.gpus = 2;
    CHECK(vmc_stripe_ways(1u << 30, stream) == 1, "a multi-GPU session is striped");
    config.gpus = 1;
    config.tcp_streams = 1;
    CHECK(vmc_stripe_ways(1u << 30, stream) == 1, "tcp_streams 1 stripes");
    config.tcp_streams = 4;

    /* exact coverage, sizes that do not divide evenly, on several threads at once */
    one_copy(32u << 20, 4);
    one_copy((64u << 20) + 12345, 4);
    one_copy((96u << 20) + 1, 3);
    one_copy((40u << 20) + 7, 2);
    /* no stripe shorter than the policy's piece: a UCX ring's stripes of 256 KiB still go through the ring */
    struct vmc_stripe_policy ucx = {512u << 10, 256u << 10};
    size_t odd[] = {(1u << 20) + 100, (768u << 10) + 100, (512u << 10) + 4095, (5u << 20) - 1};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        unsigned ways = vmc_stripe_ways(odd[i], ucx);
        one_copy(odd[i], ways);
        CHECK(ways > 1 && smallest_move >= ucx.piece, "%zu bytes in %u ways: a stripe of %zu bytes", odd[i], ways, smallest_move);
    }
    CHECK(n_seen == 2, "two stripes ran on %d threads", n_seen);

    /* per-thread default stream: that one is synchronized first */
    uint8_t *host = calloc(1, 64u << 20);
    reset();
    vmc_striped_copy(4, host, 0, 64u << 20, 2u /* COPY_PER_THREAD */, move_to_device);
    CHECK(syncs == 1 && synced_stream == cudaStreamPerThread, "the per-thread stream was not synchronized first");

    /* the first error in address order wins */
    reset();
    failing_offset = (48u << 20) + 5; /* in the 4th stripe of 4 */
    cudaError_t st = vmc_striped_copy(4, host, 0, 64u << 20, 0, move_to_device);
    CHECK(st == cudaErrorIllegalAddress, "error of the 4th stripe: %d", (int)st);
    reset();
    failing_offset = 0; /* first stripe fails with another error than the others */
    st = vmc_striped_copy(4, host, 0, 64u << 20, 0, move_to_device);
    CHECK(st == cudaErrorInvalidValue, "error of the 1st stripe: %d", (int)st);

    /* helpers that cannot join: the caller moves their stripes, then striping stops */
    refuse_helpers = 1;
    for (size_t i = 0; i < (64u << 20); i++)
        host[i] = (uint8_t)i;
    reset();
    st = vmc_striped_copy(4, host, 0, 64u << 20, 0, move_to_device);
    CHECK(st == cudaSuccess && memcmp(device_memory, host, 64u << 20) == 0, "stripes of refused helpers were lost");
    CHECK(n_seen == 1 && pthread_equal(seen_threads[0], pthread_self()), "refused stripes not moved by the caller");
    CHECK(vmc_stripe_ways(1u << 30, vmc_stream_stripe_policy()) == 1, "striping goes on after a helper could not join");

    free(host);
    free(device_memory);
    return check_summary("test_stripe");
}
