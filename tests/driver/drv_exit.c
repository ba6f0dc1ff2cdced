/* drv_exit STATUS | kill: uses the GPU through the driver API, then ends the way it is told: exit(STATUS) (the
 * session's record must carry STATUS as the program's exit status, though its worker exits 0), or SIGKILL (no
 * status reaches the appliance; the record says so with null). */
#include <signal.h>
#include <string.h>
#include "drv_check.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: drv_exit STATUS|kill\n");
        return 64;
    }
    CUdeviceptr p;
    use_primary_context();
    CU(cuMemAlloc(&p, 1 << 20));
    CU(cuMemsetD8(p, 7, 1 << 20));
    CU(cuMemFree(p));
    printf("drv_exit: used the GPU, ending with %s\n", argv[1]);
    fflush(stdout);
    if (strcmp(argv[1], "kill") == 0)
        raise(SIGKILL);
    exit(atoi(argv[1]));
}
