/* A shared library that exists only on the client (next to the program, found through its $ORIGIN run path),
 * needed by client_libs/outer.c: the appliance lacks both and gets them from the client, this one in a second
 * round (PROTOCOL.md "Client libraries"). Its constructor says where it was loaded: on the appliance the
 * worker (VMCUDA_SESSION_ID is set there only) loads it too, and says so in the session's worker.log. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void loaded(void) {
    if (getenv("VMCUDA_SESSION_ID"))
        fprintf(stderr, "client_libs: libvmctest_inner.so loaded in the worker\n");
}

int vmctest_inner_value(void) {
    return 41;
}
