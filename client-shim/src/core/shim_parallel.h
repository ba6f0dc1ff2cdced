/* A small pool of helper threads that run the parts of one piece of work at the same time as the
 * calling thread: large memcpys into and out of the shared-memory ring (shim_copy.c) and large copies
 * striped over several TCP connections (shim_stripe.c). The helpers live as long as the process; a
 * helper that makes CUDA calls gets its own connection to the worker, like any application thread. */
#ifndef SHIM_PARALLEL_H
#define SHIM_PARALLEL_H

/* Runs fn(arg, part, ways) for part = 0 .. ways-1 and returns ways once every part has returned:
 * part 0 on the calling thread, the others on helpers. ways = min(want, 1 + helpers); it is 1 (the
 * caller alone) when want <= 1, there are no helpers, or they are busy with another caller's work.
 * The pool has VMCUDA_COPY_THREADS - 1 helpers (default 3), at most one per core beyond the caller's. */
unsigned vmc_parallel(unsigned want, void (*fn)(void *arg, unsigned part, unsigned ways), void *arg);

/* Ways vmc_parallel could give right now if it were not busy (starts the helpers). */
unsigned vmc_parallel_capacity(void);

#endif
