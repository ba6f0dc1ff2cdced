/* The call pipe (protocol/src/main/c/vmc_pipe.c) between two real processes, as the client and its worker
 * use it: byte streams both ways across the rings' wrap, a writer that fills the ring and sleeps until the
 * reader frees room, a peer that exits (seen through the life line), a peer that speaks on the socket
 * instead (the worker ending the session), headers a hostile peer scribbled on, and the completion area (the
 * word the GPU writes for the worker, the landing of small copies). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "vmc_pipe.h"

#define CAPACITY (64u << 10)
#define POLL_NS 20000L

struct pair {
    void *base;
    size_t size;
    int sock[2];
};

static void make_pair(struct pair *p) {
    p->size = vmc_pipe_file_bytes(CAPACITY);
    p->base = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p->base == MAP_FAILED || socketpair(AF_UNIX, SOCK_STREAM, 0, p->sock) != 0 ||
        vmc_pipe_format(p->base, p->size, CAPACITY) != 0) {
        perror("test setup");
        exit(2);
    }
}

static void free_pair(struct pair *p) {
    munmap(p->base, p->size);
    if (p->sock[0] >= 0)
        close(p->sock[0]);
    if (p->sock[1] >= 0)
        close(p->sock[1]);
}

static void fill(uint8_t *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* Forks the peer (the worker's side, running `peer` and exiting with its status) and opens the client's
 * view of the pipe in this process. */
static pid_t start_peer(struct pair *pr, struct vmc_pipe *client, int (*peer)(struct pair *, struct vmc_pipe *)) {
    pid_t child = fork();
    if (child == 0) {
        struct vmc_pipe p;
        const char *why;
        close(pr->sock[0]);
        if (vmc_pipe_open(&p, pr->base, pr->size, 0, pr->sock[1], &why) != 0)
            _exit(3);
        _exit(peer(pr, &p));
    }
    close(pr->sock[1]);
    pr->sock[1] = -1;
    const char *why = NULL;
    CHECK(vmc_pipe_open(client, pr->base, pr->size, 1, pr->sock[0], &why) == 0, "client opens the pipe: %s", why);
    return child;
}

/* The worker's side: echoes length-prefixed messages until the client closes, after a slow start when
 * `slow_start` (the client fills the ring meanwhile and must sleep for room). */
static int slow_start;

static int echo_peer(struct pair *pr, struct vmc_pipe *p) {
    (void)pr;
    if (slow_start)
        usleep(200 * 1000);
    uint8_t *buf = malloc(1u << 20);
    for (;;) {
        uint32_t n;
        if (vmc_pipe_read(p, &n, sizeof n, POLL_NS) != 0)
            return errno == 0 ? 0 : 4; /* the client closed: done */
        if (n > (1u << 20) || vmc_pipe_read(p, buf, n, POLL_NS) != 0)
            return 4;
        if (vmc_pipe_write(p, &n, sizeof n) != 0 || vmc_pipe_write(p, buf, n) != 0)
            return 5;
    }
}

static void test_echo(int slow) {
    struct pair pr;
    struct vmc_pipe p;
    make_pair(&pr);
    slow_start = slow;
    pid_t child = start_peer(&pr, &p, echo_peer);
    static const uint32_t sizes[] = {1, 4, 17, 4096, 65535, 65536, 65537, 200000, 3, 1u << 20, 12345, 8};
    uint8_t *out = malloc(1u << 20), *in = malloc(1u << 20);
    int same = 1;
    for (size_t r = 0; r < sizeof sizes / sizeof sizes[0]; r++) {
        uint32_t n = sizes[r], back = 0;
        fill(out, n, (unsigned)r);
        /* the whole message is written before its echo is read: one larger than the ring makes the writer
         * wait (asleep) until the peer has read enough of it */
        CHECK(vmc_pipe_write(&p, &n, sizeof n) == 0 && vmc_pipe_write(&p, out, n) == 0, "write of %u bytes", n);
        CHECK(vmc_pipe_read(&p, &back, sizeof back, POLL_NS) == 0 && back == n, "echoed length %u for %u", back, n);
        CHECK(vmc_pipe_read(&p, in, n, POLL_NS) == 0, "read of %u echoed bytes", n);
        same &= memcmp(in, out, n) == 0;
    }
    CHECK(same, "every echoed message equals what was sent");
    close(pr.sock[0]); /* the client goes: the peer sees it on its life line */
    pr.sock[0] = -1;
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the echoing peer saw the client go (status %d)", status);
    free(out);
    free(in);
    free_pair(&pr);
}

static int exit_soon(struct pair *pr, struct vmc_pipe *p) {
    (void)pr, (void)p;
    usleep(50 * 1000);
    return 0; /* exiting closes its end of the life line */
}

/* The worker dies (or exits) while the client waits for its answer: the client's read ends, as a closed
 * socket's would, instead of sleeping forever on a pipe nobody will write. */
static void test_peer_gone(void) {
    struct pair pr;
    struct vmc_pipe p;
    make_pair(&pr);
    pid_t child = start_peer(&pr, &p, exit_soon);
    uint8_t b[16];
    errno = 12345;
    int rc = vmc_pipe_read(&p, b, sizeof b, POLL_NS);
    CHECK(rc == -1 && errno == 0, "read after the peer exited: -1 with errno 0 (got %d, errno %d)", rc, errno);
    waitpid(child, NULL, 0);
    /* a writer facing a full ring that nobody drains ends the same way */
    uint8_t *big = calloc(1, CAPACITY * 2);
    rc = vmc_pipe_write(&p, big, CAPACITY * 2);
    CHECK(rc == -1, "write into a full ring after the peer exited fails (got %d)", rc);
    free(big);
    free_pair(&pr);
}

static void tick(int sig) { (void)sig; }

/* The same while signals keep interrupting the sleep (a profiler's timer, a framework's SIGALRM): each
 * interruption restarts the futex's wait, but the life line is looked at by the clock. */
static void test_peer_gone_under_signals(void) {
    struct pair pr;
    struct vmc_pipe p;
    make_pair(&pr);
    pid_t child = start_peer(&pr, &p, exit_soon);
    struct sigaction sa = {0};
    sa.sa_handler = tick; /* no SA_RESTART: the futex returns EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every_5ms = {{0, 5000}, {0, 5000}};
    setitimer(ITIMER_REAL, &every_5ms, NULL);
    uint8_t b[16];
    errno = 12345;
    int rc = vmc_pipe_read(&p, b, sizeof b, POLL_NS);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    CHECK(rc == -1 && errno == 0, "a dead peer is noticed under a 200 Hz timer signal (got %d, errno %d)", rc, errno);
    waitpid(child, NULL, 0);
    free_pair(&pr);
}

static int last_word_on_socket(struct pair *pr, struct vmc_pipe *p) {
    if (vmc_pipe_write(p, "last", 4) != 0 || write(pr->sock[1], "ERR", 3) != 3)
        return 3;
    pause(); /* alive: the socket, not a death, must be what the reader sees */
    return 0;
}

/* The worker ends the session: what it wrote in the pipe comes first, then the reader is sent to the socket. */
static void test_socket_speaks(void) {
    struct pair pr;
    struct vmc_pipe p;
    make_pair(&pr);
    pid_t child = start_peer(&pr, &p, last_word_on_socket);
    char b[4];
    usleep(50 * 1000); /* both written before the reader looks */
    CHECK(vmc_pipe_read(&p, b, 4, POLL_NS) == 0 && memcmp(b, "last", 4) == 0, "the pipe's bytes come first");
    CHECK(vmc_pipe_read(&p, b, 3, POLL_NS) == 1, "then the reader is told to read the socket");
    CHECK(read(pr.sock[0], b, 3) == 3 && memcmp(b, "ERR", 3) == 0, "where the peer's last word is");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    free_pair(&pr);
}

/* A hostile peer scribbles on the shared header: this side fails cleanly and never touches memory outside
 * the rings (ASan would say). */
static void test_scribbles(void) {
    struct pair pr;
    make_pair(&pr);
    struct vmc_pipe_header *h = pr.base;
    struct vmc_pipe p;
    const char *why = NULL;
    h->magic = 0;
    CHECK(vmc_pipe_open(&p, pr.base, pr.size, 0, pr.sock[1], &why) == -1 && why, "a bad magic is refused");
    vmc_pipe_format(pr.base, pr.size, CAPACITY);
    h->capacity = CAPACITY * 2;
    CHECK(vmc_pipe_open(&p, pr.base, pr.size, 0, pr.sock[1], &why) == -1, "a capacity beyond the file is refused");
    h->capacity = CAPACITY + 1;
    CHECK(vmc_pipe_open(&p, pr.base, pr.size - 2 + 2, 0, pr.sock[1], &why) == -1, "a capacity not a power of two is refused");
    vmc_pipe_format(pr.base, pr.size, CAPACITY);
    CHECK(vmc_pipe_open(&p, pr.base, pr.size, 0, pr.sock[1], &why) == 0, "a good header opens");
    uint8_t b[8];
    h->to_worker.head = (uint64_t)CAPACITY * 3; /* claims more unread bytes than the ring holds */
    errno = 0;
    CHECK(vmc_pipe_read(&p, b, sizeof b, POLL_NS) == -1 && errno == EPROTO, "an impossible head is a broken stream");
    h->to_worker.head = 0;
    h->to_client.tail = 100; /* claims to have read bytes never written */
    /* the peer's position is looked at when this side's copy shows too little room: then it breaks the stream */
    uint8_t *ring_full = calloc(1, CAPACITY);
    CHECK(vmc_pipe_write(&p, b, sizeof b) == 0, "a write that fits the room last seen does not look");
    errno = 0;
    CHECK(vmc_pipe_write(&p, ring_full, CAPACITY) == -1 && errno == EPROTO, "an impossible tail is a broken stream");
    free(ring_full);
    CHECK(vmc_pipe_readable(&p) == 0, "nothing readable");
    free_pair(&pr);
}

/* Reading in place: bytes that lie whole before the ring's wrap are shown where they are and stay unread until
 * skipped; bytes that wrap, or not all there yet, are not shown, and a plain read still gets them right. */
static void test_peek(void) {
    struct pair pr;
    make_pair(&pr);
    struct vmc_pipe client, worker;
    const char *why = NULL;
    CHECK(vmc_pipe_open(&client, pr.base, pr.size, 1, pr.sock[0], &why) == 0 &&
              vmc_pipe_open(&worker, pr.base, pr.size, 0, pr.sock[1], &why) == 0, "both views open");
    uint8_t *out = malloc(CAPACITY), *in = malloc(CAPACITY);
    const void *at = NULL;
    fill(out, 100, 1);
    CHECK(vmc_pipe_write(&client, out, 100) == 0, "100 bytes written");
    CHECK(vmc_pipe_peek(&worker, 100, POLL_NS, &at) == 0 && at && memcmp(at, out, 100) == 0, "peek shows them in place");
    CHECK(vmc_pipe_readable(&worker) == 100, "and leaves them unread");
    CHECK(vmc_pipe_peek(&worker, 101, POLL_NS, &at) == 0 && !at, "more than is there is not shown");
    vmc_pipe_skip(&worker, 100);
    CHECK(vmc_pipe_readable(&worker) == 0, "skip reads them");
    fill(out, CAPACITY - 200, 2); /* up to 100 bytes before the wrap */
    CHECK(vmc_pipe_write(&client, out, CAPACITY - 200) == 0 && vmc_pipe_read(&worker, in, CAPACITY - 200, POLL_NS) == 0,
          "the ring filled up to 100 bytes before its end");
    fill(out, 300, 3);
    CHECK(vmc_pipe_write(&client, out, 300) == 0, "300 bytes written across the wrap");
    CHECK(vmc_pipe_peek(&worker, 300, POLL_NS, &at) == 0 && !at, "bytes across the wrap are not shown");
    CHECK(vmc_pipe_peek(&worker, 100, POLL_NS, &at) == 0 && at && memcmp(at, out, 100) == 0, "the part before it is");
    CHECK(vmc_pipe_read(&worker, in, 300, POLL_NS) == 0 && memcmp(in, out, 300) == 0, "a read gets all 300 right");
    /* where an answer ends, and whether the peer has read that far */
    CHECK(vmc_pipe_write(&worker, out, 40) == 0, "an answer of 40 bytes written");
    uint64_t answered = vmc_pipe_written(&worker);
    CHECK(answered == 40 && !vmc_pipe_peer_has_read(&worker, answered), "not yet read by the peer");
    CHECK(vmc_pipe_read(&client, in, 39, POLL_NS) == 0 && !vmc_pipe_peer_has_read(&worker, answered), "39 of 40 is not all");
    CHECK(vmc_pipe_read(&client, in, 1, POLL_NS) == 0 && vmc_pipe_peer_has_read(&worker, answered), "read to its end");
    /* a producer asleep on a full ring (its flag up) is woken by the next read, however small: its futex word moves */
    CHECK(vmc_pipe_write(&client, out, 64) == 0, "64 bytes written");
    struct vmc_pipe_header *h = pr.base;
    __atomic_store_n(&h->to_worker.producer_sleeping, 1, __ATOMIC_SEQ_CST);
    uint32_t seq = __atomic_load_n(&h->to_worker.space_seq, __ATOMIC_SEQ_CST);
    CHECK(vmc_pipe_read(&worker, in, 8, POLL_NS) == 0 && __atomic_load_n(&h->to_worker.space_seq, __ATOMIC_SEQ_CST) != seq,
          "a read of 8 bytes wakes a sleeping producer");
    __atomic_store_n(&h->to_worker.producer_sleeping, 0, __ATOMIC_SEQ_CST);
    seq = __atomic_load_n(&h->to_worker.space_seq, __ATOMIC_SEQ_CST);
    CHECK(vmc_pipe_read(&worker, in, 8, POLL_NS) == 0 && __atomic_load_n(&h->to_worker.space_seq, __ATOMIC_SEQ_CST) == seq,
          "and none is woken when none sleeps");
    free(out);
    free(in);
    free_pair(&pr);
}

/* The worker's side of the completion word: the GPU's write is a store into the shared file, here by the peer. */
static int completion_peer(struct pair *pr, struct vmc_pipe *p) {
    (void)pr;
    uint8_t go;
    if (vmc_pipe_read(p, &go, 1, POLL_NS) != 0)
        return 10;
    memset(p->landing, 0xab, VMC_PIPE_LANDING_BYTES); /* a small copy's bytes, then its completion */
    __atomic_store_n(&p->completion->done, 41u, __ATOMIC_RELEASE); /* another call's number: not the awaited one */
    usleep(20 * 1000);
    __atomic_store_n(&p->completion->done, 42u, __ATOMIC_RELEASE);
    /* the client marks what it took; then the REPLY comes through the pipe as usual */
    for (int i = 0; i < 2000 && vmc_pipe_seen(p) != 42u; i++)
        usleep(1000);
    uint8_t answer = vmc_pipe_seen(p) == 42u ? 7 : 8;
    if (vmc_pipe_write(p, &answer, 1) != 0)
        return 11;
    /* next call: the answer comes through the pipe before any word */
    if (vmc_pipe_read(p, &go, 1, POLL_NS) != 0)
        return 12;
    answer = 9;
    return vmc_pipe_write(p, &answer, 1) != 0 ? 13 : 0;
}

static void test_completion_word(void) {
    struct pair pr;
    make_pair(&pr);
    struct vmc_pipe client;
    pid_t child = start_peer(&pr, &client, completion_peer);
    uint8_t *base = pr.base, *area_at = vmc_pipe_completion_area(&client);
    CHECK((size_t)(area_at - base) % 4096 == 0, "the completion area starts on a page (the GPU registers whole pages)");
    CHECK(client.landing + VMC_PIPE_LANDING_BYTES <= area_at + VMC_PIPE_COMPLETION_BYTES, "the landing lies inside the area");
    CHECK(area_at + VMC_PIPE_COMPLETION_BYTES <= client.tx_data && area_at + VMC_PIPE_COMPLETION_BYTES <= client.rx_data,
          "the rings come after the area");
    CHECK(client.tx_data + client.capacity <= base + pr.size && client.rx_data + client.capacity <= base + pr.size,
          "the rings end inside the file");
    CHECK(__atomic_load_n(&client.completion->done, __ATOMIC_ACQUIRE) == 0, "a fresh pipe's word is 0 (never a call's number)");
    CHECK(vmc_pipe_poll_done(&client, 42u, POLL_NS) == 0, "nothing written: the poll gives up after its time");
    uint8_t go = 1, answer = 0;
    CHECK(vmc_pipe_write(&client, &go, 1) == 0, "call sent");
    int done = 0;
    for (int i = 0; i < 1000 && !done; i++) /* each poll is short: the peer writes after 20 ms */
        done = vmc_pipe_poll_done(&client, 42u, 1000L * 1000) == 1;
    CHECK(done, "the word saying this call's number ends the wait (another number does not)");
    CHECK(client.landing[0] == 0xab && client.landing[VMC_PIPE_LANDING_BYTES - 1] == 0xab,
          "the bytes written before the word are there");
    vmc_pipe_mark_seen(&client, 42u);
    CHECK(vmc_pipe_read(&client, &answer, 1, POLL_NS) == 0 && answer == 7, "the worker sees what the client took, then answers");
    CHECK(vmc_pipe_write(&client, &go, 1) == 0, "second call sent");
    int rc = 2;
    for (int i = 0; i < 1000 && rc == 2; i++)
        if (vmc_pipe_readable(&client))
            rc = vmc_pipe_poll_done(&client, 43u, POLL_NS);
        else
            usleep(1000);
    CHECK(rc == 0, "an answer in the pipe ends the wait without the word");
    CHECK(vmc_pipe_read(&client, &answer, 1, POLL_NS) == 0 && answer == 9, "and is read as usual");
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the peer's side worked (status %d)", status);
    free_pair(&pr);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    test_echo(0);
    test_echo(1);
    test_peer_gone();
    test_peer_gone_under_signals();
    test_socket_speaks();
    test_scribbles();
    test_peek();
    test_completion_word();
    return check_summary("test_pipe");
}
