/* The worker library: internal interfaces between its parts. */
#ifndef WORKER_H
#define WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "vmc_io.h"
#include "worker_call.h"

/* ---- registrations recorded while the application's constructors ran (worker_entry.c) ---- */
uint32_t vmc_w_kernel_count(void);
const void *vmc_w_kernel_host_fun(uint32_t index);   /* NULL if out of range */
const char *vmc_w_kernel_name(uint32_t index);
uint32_t vmc_w_var_count(void);
const void *vmc_w_var_host_var(uint32_t index);
const char *vmc_w_var_name(uint32_t index);
size_t vmc_w_var_size(uint32_t index);

/* ---- one client connection (worker_serve.c) ---- */
#define VMC_W_STAGING_BUFFERS 4

struct vmc_wconn {
    int fd;
    int primary;
    cudaError_t async_error;       /* first error of an async call since the last REPLY */
    struct vmc_out reply;          /* the REPLY being built */
    uint8_t *payload;              /* CALL payload buffer (VMC_MAX_CALL_PAYLOAD) */
    /* Pinned staging for bulk copies (worker_memcpy.c), allocated on first use. */
    size_t block_size;
    int staging_state;             /* 0 = not tried, 1 = pinned, -1 = unavailable (pageable fallback) */
    unsigned staging_epoch;        /* see vmc_w_staging_invalidate */
    void *staging[VMC_W_STAGING_BUFFERS];
    void *fallback;                /* pageable block buffer when pinned memory is unavailable */
};

/* Serves one connection until the client closes it. */
void vmc_w_serve(int fd, int primary);
/* Sends the pending REPLY (with any captured output before it). Returns 0 or -1 if the peer is gone. */
int vmc_w_send_reply(struct vmc_wconn *c, uint32_t id);
void vmc_w_release_conn(struct vmc_wconn *c);

/* ---- hand-written operations ---- */
enum vmc_w_result vmc_w_memcpy_host_to_device(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_memcpy_device_to_host(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_memcpy_on_device(struct vmc_wcall *wc);
/* Every staging buffer died with its context (cudaDeviceReset): allocate new ones before the next copy. */
void vmc_w_staging_invalidate(void);
enum vmc_w_result vmc_w_kernel_param_layout(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_launch_kernel(struct vmc_wcall *wc);
enum vmc_w_result vmc_w_launch_kernel_ex(struct vmc_wcall *wc);

/* ---- captured stdout/stderr (worker_output.c) ---- */
int vmc_w_output_start(void);
/* Sends everything the process wrote so far as OUTPUT frames. Returns 0 or -1. */
int vmc_w_output_flush(int fd);

/* ---- the daemon link (worker_daemon.c) ---- */
int vmc_w_daemon_connect(void);            /* returns 0 or -1 (reason logged) */
int vmc_w_daemon_receive_client(void);     /* next client fd handed over by the daemon, or -1 */
void vmc_w_daemon_start_threads(void);     /* JOIN listener + stats reporter */
void vmc_w_daemon_bye(int status);
void vmc_w_count_call(void);
void vmc_w_count_h2d(uint64_t bytes);
void vmc_w_count_d2h(uint64_t bytes);

/* ---- diagnostics go to the session log (the worker's original stderr), never to the client ---- */
void vmc_w_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
