/*
 * TEST FIXTURE, not the product: a stand-in for libvmcuda-worker.so so that the daemon's hand-off can be
 * tested without the real worker library. The ELF rewriter redirects the executable's
 * __libc_start_main import to vmcuda_worker_start_main; this stub just forwards to glibc, so the
 * fixture's own main() runs (the real library runs its serve loop instead).
 */
typedef int (*main_fn)(int, char **, char **);

extern int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end);

int vmcuda_worker_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                             void (*rtld_fini)(void), void *stack_end)
{
    return __libc_start_main(main, argc, argv, init, fini, rtld_fini, stack_end);
}
