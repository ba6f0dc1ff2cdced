// Synchronous copies that vmcuda's co-located path may answer through the completion word (PROTOCOL.md "Completion
// word"): the client returns once the GPU has written the call's number after the copy, so a copy must never return
// before the work before it and the copy itself are done. Each copy here follows GPU work that writes what the copy
// must then see: kernels (after which vmcuda uses the word only where no kernel of the program can print, else it
// waits for the driver, which prints what kernels printed), and memsets and device-to-device copies after a
// device-wide synchronize (where it uses the word). Small copies from the device (the
// landing, up to 64 KiB, and just past it), copies to and from page-locked memory (in the shared region on the
// co-located path), a variable, a copy behind a long kernel (longer than anyone polls), several threads at once
// (each connection has its own word), a kernel's printf before a copy, copies while streams are captured (a new
// thread's too), and errors. Built three times: completion_ptds uses the per-thread default stream, and
// completion_quiet leaves out the one kernel that prints, so that no kernel of the program can print and vmcuda uses
// the word after kernel launches too.
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "vmc_check.h"

__device__ unsigned dev_counter;

__global__ void stamp(unsigned *p, size_t words, unsigned value, long long spin_cycles) {
    long long t0 = clock64();
    while (spin_cycles && clock64() - t0 < spin_cycles) {
    }
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x)
        p[i] = value + (unsigned)i;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        dev_counter = value;
}

__global__ void check_stamp(const unsigned *p, size_t words, unsigned value, unsigned *bad) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != value + (unsigned)i)
            atomicAdd(bad, 1u);
}

static size_t first_wrong(const unsigned *p, size_t words, unsigned value) {
    for (size_t i = 0; i < words; i++)
        if (p[i] != value + (unsigned)i)
            return i;
    return words;
}

// Small copies from the device, each right after a kernel that writes what it must read (the kernel spins a little
// so that the copy really waits for it).
static void small_copies_after_kernels(unsigned *dev, unsigned *host) {
    const size_t sizes[] = {4, 8, 100, 4096, 4100, 65536, 65536 + 4, 262144};
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t words = sizes[s] / 4;
        int wrong = 0;
        for (unsigned i = 1; i <= 300; i++) {
            unsigned value = s * 100000u + i * 7u;
            stamp<<<8, 128>>>(dev, words, value, 2000);
            CK(cudaGetLastError());
            CK(cudaMemcpy(host, dev, sizes[s], cudaMemcpyDeviceToHost));
            if (first_wrong(host, words, value) != words)
                wrong++;
        }
        char what[80];
        snprintf(what, sizeof what, "%zu-byte copies from the device after a kernel", sizes[s]);
        vmc_check(wrong == 0, what, "%d of 300 saw stale bytes", wrong);
    }
}

// Page-locked memory both ways: a kernel writes, the copy to the page-locked buffer must see it; the buffer goes
// back to another allocation, and a kernel checks it there.
static void pinned_copies_after_kernels(unsigned *dev, unsigned *dev2, unsigned *bad) {
    const size_t sizes[] = {4, 4096, 1u << 20, 4u << 20};
    unsigned *pinned = NULL;
    CK(cudaMallocHost((void **)&pinned, 4u << 20));
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t words = sizes[s] / 4;
        int wrong_back = 0, wrong_there = 0;
        for (unsigned i = 1; i <= 100; i++) {
            unsigned value = 0x40000000u + s * 100000u + i * 13u;
            stamp<<<64, 256>>>(dev, words, value, 2000);
            CK(cudaGetLastError());
            CK(cudaMemcpy(pinned, dev, sizes[s], cudaMemcpyDeviceToHost));
            if (first_wrong(pinned, words, value) != words)
                wrong_back++;
            for (size_t k = 0; k < words; k++)
                pinned[k] = value + 1 + (unsigned)k;
            CK(cudaMemcpy(dev2, pinned, sizes[s], cudaMemcpyHostToDevice));
            // overwrite the page-locked buffer at once: the copy must have read it already
            memset(pinned, 0, sizes[s]);
            CK(cudaMemset(bad, 0, sizeof *bad));
            check_stamp<<<64, 256>>>(dev2, words, value + 1, bad);
            unsigned n_bad = 0;
            CK(cudaMemcpy(&n_bad, bad, sizeof n_bad, cudaMemcpyDeviceToHost));
            if (n_bad)
                wrong_there++;
        }
        char what[80];
        snprintf(what, sizeof what, "%zu-byte page-locked copies after a kernel", sizes[s]);
        vmc_check(wrong_back == 0 && wrong_there == 0, what, "%d stale from the device, %d wrong on it, of 100",
                  wrong_back, wrong_there);
    }
    CK(cudaFreeHost(pinned));
}

static void variable_after_kernels(unsigned *dev) {
    int wrong = 0;
    for (unsigned i = 1; i <= 200; i++) {
        stamp<<<1, 32>>>(dev, 1, 0x70000000u + i, 1000);
        unsigned v = 0;
        CK(cudaMemcpyFromSymbol(&v, dev_counter, sizeof v));
        if (v != 0x70000000u + i)
            wrong++;
    }
    vmc_check(wrong == 0, "a variable read after the kernel that wrote it", "%d of 200 stale", wrong);
}

// A copy behind a kernel that runs far longer than the client polls for the word: it must still wait for it.
static void copy_behind_long_kernel(unsigned *dev, unsigned *host) {
    int clock_khz = 0;
    CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    long long cycles = (long long)clock_khz * 200; // about 200 ms
    stamp<<<1, 32>>>(dev, 16, 0x5a5a0000u, cycles);
    CK(cudaGetLastError());
    CK(cudaMemcpy(host, dev, 64, cudaMemcpyDeviceToHost));
    vmc_check(first_wrong(host, 16, 0x5a5a0000u) == 16, "a small copy behind a 200 ms kernel", "saw the kernel's bytes");
}

// GPU work that is not a kernel, after a device-wide synchronize: each copy must see what the memset before it wrote.
static void copies_behind_memsets(unsigned char *dev, unsigned char *dev2, unsigned char *host) {
    const size_t sizes[] = {4, 4096, 65536, 1u << 20};
    unsigned char *pinned = NULL;
    CK(cudaMallocHost((void **)&pinned, 1u << 20));
    CK(cudaDeviceSynchronize());
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        int wrong = 0;
        for (unsigned i = 1; i <= 200; i++) {
            unsigned char v = (unsigned char)(i * 37 + s), w = (unsigned char)(v + 1), x = (unsigned char)(v + 2);
            // a memset read back into pageable and into page-locked memory
            CK(cudaMemsetAsync(dev, v, n));
            CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
            CK(cudaMemsetAsync(dev, w, n));
            CK(cudaMemcpy(pinned, dev, n, cudaMemcpyDeviceToHost));
            size_t k = 0;
            while (k < n && host[k] == v && pinned[k] == w)
                k++;
            // a large memset, then a device-to-device copy of its end, read back
            CK(cudaMemsetAsync(dev2, x, 64u << 20));
            CK(cudaMemcpyAsync(dev, dev2 + (64u << 20) - n, n, cudaMemcpyDeviceToDevice));
            CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
            size_t m = 0;
            while (m < n && host[m] == x)
                m++;
            // page-locked bytes to the device, the buffer overwritten at once: the copy must have read them already
            memset(pinned, v, n);
            CK(cudaMemcpy(dev, pinned, n, cudaMemcpyHostToDevice));
            memset(pinned, 0, n);
            CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
            size_t q = 0;
            while (q < n && host[q] == v)
                q++;
            if (k != n || m != n || q != n)
                wrong++;
        }
        char what[96];
        snprintf(what, sizeof what, "%zu-byte copies behind memsets and device copies", n);
        vmc_check(wrong == 0, what, "%d of 200 rounds saw stale bytes", wrong);
    }
    CK(cudaFreeHost(pinned));
}

#ifndef COMPLETION_QUIET
__global__ void say(int i) { printf("kernel line %d\n", i); }

// What a kernel printed comes out before what the program prints after a copy that waited for it, as natively.
static void printf_before_copies(unsigned *dev, unsigned *host) {
    unsigned *pinned = NULL;
    CK(cudaMallocHost((void **)&pinned, 64));
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < 3; i++) {
        say<<<1, 1>>>(i);
        CK(cudaMemcpy(host, dev, 4, cudaMemcpyDeviceToHost));
        printf("host line after a small copy %d\n", i);
        say<<<1, 1>>>(10 + i);
        CK(cudaMemcpy(pinned, dev, 64, cudaMemcpyDeviceToHost));
        printf("host line after a page-locked copy %d\n", 10 + i);
    }
    fflush(stdout);
    CK(cudaFreeHost(pinned));
}
#endif

// Synchronous copies while another (non-blocking) stream is being captured, in each capture mode: natively they
// succeed and the capture goes on. First with a memset captured (no kernel launched since a device-wide synchronize),
// then with a kernel.
static void copies_while_capturing(unsigned *dev, unsigned *host) {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *pinned = NULL, *other = NULL;
    CK(cudaMallocHost((void **)&pinned, 4096));
    CK(cudaMalloc((void **)&other, 4096));
    const cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                                           cudaStreamCaptureModeRelaxed};
    const char *names[] = {"global", "thread-local", "relaxed"};
    for (int with_kernel = 0; with_kernel < 2; with_kernel++)
        for (int m = 0; m < 3; m++) {
            CK(cudaDeviceSynchronize());
            CK(cudaStreamBeginCapture(s, modes[m]));
            if (with_kernel)
                stamp<<<1, 32, 0, s>>>(other, 16, 5, 0);
            else
                CK(cudaMemsetAsync(other, 1, 4096, s));
            cudaError_t to_pinned = cudaMemcpy(pinned, dev, 4096, cudaMemcpyDeviceToHost);
            cudaError_t from_pinned = cudaMemcpy(dev, pinned, 4096, cudaMemcpyHostToDevice);
            cudaError_t small = cudaMemcpy(host, dev, 64, cudaMemcpyDeviceToHost);
            cudaGraph_t g = NULL;
            cudaError_t end = cudaStreamEndCapture(s, &g);
            printf("while a stream is captured (%s, %s): copies %s %s %s, capture ends %s\n", names[m],
                   with_kernel ? "a kernel" : "a memset", cudaGetErrorName(to_pinned), cudaGetErrorName(from_pinned),
                   cudaGetErrorName(small), cudaGetErrorName(end));
            if (g)
                CK(cudaGraphDestroy(g));
            (void)cudaGetLastError();
        }
    CK(cudaFree(other));
    CK(cudaFreeHost(pinned));
    CK(cudaStreamDestroy(s));
}

// A thread that starts while another thread captures a stream in the global mode: its first copies (which make its
// connection, its staging and its ring on the appliance) and its end (which lets them go there) must not end that
// capture, as natively nothing does. The pause before the capture ends leaves the appliance time to close the
// thread's connection first, which is where pinned memory is given back.
struct capture_guest {
    unsigned *dev;
    unsigned char *host;
    cudaError_t status[4];
};

static void *copies_of_a_new_thread(void *arg) {
    struct capture_guest *g = (struct capture_guest *)arg;
    g->status[0] = cudaMemcpy(g->host, g->dev, 64, cudaMemcpyDeviceToHost);
    g->status[1] = cudaMemcpy(g->host, g->dev, 1u << 20, cudaMemcpyDeviceToHost);
    g->status[2] = cudaMemcpy(g->dev, g->host, 64, cudaMemcpyHostToDevice);
    g->status[3] = cudaMemcpy(g->dev, g->host, 1u << 20, cudaMemcpyHostToDevice);
    return NULL;
}

static void new_thread_while_capturing(unsigned *dev) {
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *other = NULL;
    CK(cudaMalloc((void **)&other, 4096));
    struct capture_guest g = {dev, (unsigned char *)malloc(1u << 20), {cudaSuccess}};
    memset(g.host, 7, 1u << 20);
    CK(cudaDeviceSynchronize());
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaMemsetAsync(other, 1, 4096, s));
    pthread_t t;
    pthread_create(&t, NULL, copies_of_a_new_thread, &g);
    pthread_join(t, NULL);
    usleep(200 * 1000);
    cudaGraph_t graph = NULL;
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    printf("a new thread's first copies while another captures (global): %s %s %s %s, capture ends %s\n",
           cudaGetErrorName(g.status[0]), cudaGetErrorName(g.status[1]), cudaGetErrorName(g.status[2]),
           cudaGetErrorName(g.status[3]), cudaGetErrorName(end));
    if (graph)
        CK(cudaGraphDestroy(graph));
    (void)cudaGetLastError();
    free(g.host);
    CK(cudaFree(other));
    CK(cudaStreamDestroy(s));
}

struct thread_job {
    unsigned index;
    unsigned *dev;
    int wrong;
    cudaError_t error;
};

// Each thread's last CUDA call is such a copy: its connection closes with that answer taken from the word.
static void *thread_loop(void *arg) {
    struct thread_job *job = (struct thread_job *)arg;
    unsigned host[64];
    for (unsigned i = 1; i <= 500 && job->error == cudaSuccess; i++) {
        unsigned value = (job->index << 24) + i * 64u;
        stamp<<<1, 64>>>(job->dev, 64, value, 500);
        job->error = cudaMemcpy(host, job->dev, sizeof host, cudaMemcpyDeviceToHost);
        if (job->error == cudaSuccess && first_wrong(host, 64, value) != 64)
            job->wrong++;
    }
    return NULL;
}

static void threads_at_once(void) {
    pthread_t t[4];
    struct thread_job jobs[4];
    for (unsigned i = 0; i < 4; i++) {
        jobs[i] = (struct thread_job){i + 1, NULL, 0, cudaSuccess};
        CK(cudaMalloc((void **)&jobs[i].dev, 64 * sizeof(unsigned)));
    }
    for (unsigned i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, thread_loop, &jobs[i]);
    int wrong = 0, errors = 0;
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        wrong += jobs[i].wrong;
        errors += jobs[i].error != cudaSuccess;
        CK(cudaFree(jobs[i].dev));
    }
    vmc_check(wrong == 0 && errors == 0, "4 threads copying after their own kernels", "%d stale, %d errors", wrong, errors);
}

static void errors(unsigned *host) {
    unsigned *gone = NULL;
    CK(cudaMalloc((void **)&gone, 4096));
    CK(cudaFree(gone));
    memset(host, 0x11, 64);
    cudaError_t e = cudaMemcpy(host, gone, 64, cudaMemcpyDeviceToHost);
    printf("a small copy from freed memory: %s\n", cudaGetErrorName(e));
    vmc_check(host[0] == 0x11111111u, "a failed copy", "left the destination as it was");
    printf("the last error after it: %s\n", cudaGetErrorName(cudaGetLastError()));
    e = cudaMemcpy(host, (char *)gone + 1, 64, cudaMemcpyDeviceToHost);
    printf("and from a misaligned freed address: %s\n", cudaGetErrorName(e));
    printf("the last error then: %s\n", cudaGetErrorName(cudaGetLastError()));
}

int main() {
    unsigned *dev = NULL, *dev2 = NULL, *bad = NULL;
    unsigned *host = (unsigned *)malloc(4u << 20);
    CK(cudaMalloc((void **)&dev, 4u << 20));
    CK(cudaMalloc((void **)&dev2, 4u << 20));
    CK(cudaMalloc((void **)&bad, sizeof *bad));
    unsigned *big = NULL;
    CK(cudaMalloc((void **)&big, 64u << 20));
    small_copies_after_kernels(dev, host);
    pinned_copies_after_kernels(dev, dev2, bad);
    variable_after_kernels(dev);
    copy_behind_long_kernel(dev, host);
    copies_behind_memsets((unsigned char *)dev, (unsigned char *)big, (unsigned char *)host);
#ifndef COMPLETION_QUIET
    printf_before_copies(dev, host);
#endif
    copies_while_capturing(dev, host);
    new_thread_while_capturing(dev);
    threads_at_once();
    errors(host);
    CK(cudaFree(big));
    CK(cudaFree(bad));
    CK(cudaFree(dev2));
    CK(cudaFree(dev));
    // the program's last CUDA call is a small copy from the device
    unsigned last = 0;
    CK(cudaMemcpyFromSymbol(&last, dev_counter, sizeof last));
    printf("last value written by a kernel: %s\n", last ? "nonzero" : "zero");
    free(host);
    printf(vmc_failures ? "FAIL\n" : "PASS\n");
    return vmc_failures ? VMC_EXIT_CHECK_FAILED : 0;
}
