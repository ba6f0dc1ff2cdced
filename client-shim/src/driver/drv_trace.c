/* VMCUDA_TRACE (drv_trace.h): the level is read once; each reported call is one line on stderr. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "drv_errors.h"
#include "drv_trace.h"

static enum vmc_drv_trace_level level;
static pthread_once_t level_once = PTHREAD_ONCE_INIT;

static void read_level(void) {
    const char *v = getenv("VMCUDA_TRACE");
    if (!v || !*v || strcmp(v, "0") == 0)
        level = VMC_TRACE_OFF;
    else if (strcmp(v, "all") == 0)
        level = VMC_TRACE_ALL;
    else
        level = VMC_TRACE_ERRORS; /* "errors", "1" or anything else */
}

enum vmc_drv_trace_level vmc_drv_trace_level(void) {
    pthread_once(&level_once, read_level);
    return level;
}

static const char *result_name(int result) {
    for (unsigned i = 0; i < vmc_drv_error_name_count; i++)
        if (vmc_drv_error_names[i].code == result)
            return vmc_drv_error_names[i].name;
    return "(unknown CUresult)";
}

void vmc_drv_trace_result(const char *symbol, int result) {
    enum vmc_drv_trace_level l = vmc_drv_trace_level();
    if (l == VMC_TRACE_ALL || (l == VMC_TRACE_ERRORS && result != 0))
        fprintf(stderr, "vmcuda trace: %s -> %s (%d)\n", symbol, result_name(result), result);
}
