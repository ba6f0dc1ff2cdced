#include "shim_config.h"

#include <ctype.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_BLOCK_SIZE (4u << 20) /* the block size the vmCUDA study chose */
#define MIN_BLOCK_SIZE (64u << 10)
#define MAX_BLOCK_SIZE (256u << 20)
#define DEFAULT_TCP_STREAMS 4 /* see BENCHMARKS.md "Striping one copy over several connections" */

static struct vmc_client_config config;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

/* An on/off switch: anything but 0, off or false is on. */
static int switched_on(const char *value) {
    return !(strcmp(value, "0") == 0 || strcmp(value, "off") == 0 || strcmp(value, "false") == 0);
}

/* "80G", "81920M", "85899345920": bytes, binary suffixes K/M/G/T. 0 when not a number. */
static uint64_t bytes_value(const char *value) {
    char *end;
    unsigned long long v = strtoull(value, &end, 10);
    switch (*end) {
    case 'k': case 'K': return (uint64_t)v << 10;
    case 'm': case 'M': return (uint64_t)v << 20;
    case 'g': case 'G': return (uint64_t)v << 30;
    case 't': case 'T': return (uint64_t)v << 40;
    case 0: return v;
    default: return 0;
    }
}

static void set(const char *key, const char *value) {
    if (strcmp(key, "appliance") == 0)
        snprintf(config.appliance, sizeof config.appliance, "%s", value);
    else if (strcmp(key, "cluster") == 0)
        snprintf(config.cluster, sizeof config.cluster, "%s", value);
    else if (strcmp(key, "cluster_prefix") == 0)
        snprintf(config.cluster_prefix, sizeof config.cluster_prefix, "%s", value);
    else if (strcmp(key, "host_id") == 0)
        snprintf(config.host_id, sizeof config.host_id, "%s", value);
    else if (strcmp(key, "gpu_model") == 0)
        snprintf(config.gpu_model, sizeof config.gpu_model, "%s", value);
    else if (strcmp(key, "gpu_memory") == 0) {
        config.gpu_memory = bytes_value(value);
        if (!config.gpu_memory && strcmp(value, "0") != 0)
            fprintf(stderr, "vmcuda: gpu_memory '%s' is not a size (e.g. 40G); asking for any\n", value);
    }
    else if (strcmp(key, "token") == 0)
        snprintf(config.token, sizeof config.token, "%s", value);
    else if (strcmp(key, "tls_ca") == 0)
        snprintf(config.tls_ca, sizeof config.tls_ca, "%s", value);
    else if (strcmp(key, "tls_verify_name") == 0)
        config.tls_verify_name = switched_on(value);
    else if (strcmp(key, "block_size") == 0) {
        char *end;
        unsigned long long v = strtoull(value, &end, 10);
        if (*end == 'k' || *end == 'K') v <<= 10;
        else if (*end == 'm' || *end == 'M') v <<= 20;
        if (v < MIN_BLOCK_SIZE || v > MAX_BLOCK_SIZE) {
            fprintf(stderr, "vmcuda: block_size %s is outside %u..%u bytes; using %u\n", value,
                    MIN_BLOCK_SIZE, MAX_BLOCK_SIZE, DEFAULT_BLOCK_SIZE);
            v = DEFAULT_BLOCK_SIZE;
        }
        config.block_size = (size_t)v;
    } else if (strcmp(key, "transport") == 0) {
        if (strcmp(value, "tcp") == 0)
            config.transport = VMC_TRANSPORT_TCP;
        else if (strcmp(value, "shm") == 0)
            config.transport = VMC_TRANSPORT_SHM;
        else if (strcmp(value, "ucx") == 0)
            config.transport = VMC_TRANSPORT_UCX;
        else if (strcmp(value, "auto") == 0)
            config.transport = VMC_TRANSPORT_AUTO;
        else
            fprintf(stderr, "vmcuda: transport '%s' is not one of auto, tcp, shm, ucx; using auto\n", value);
    } else if (strcmp(key, "handshake_timeout_s") == 0) {
        long v = strtol(value, NULL, 10);
        config.handshake_timeout_s = v > 0 && v <= 3600 ? v : 120;
    } else if (strcmp(key, "tcp_streams") == 0) {
        long v = strtol(value, NULL, 10);
        if (v < 1 || v > 8)
            fprintf(stderr, "vmcuda: tcp_streams %s is outside 1..8; using %d\n", value, DEFAULT_TCP_STREAMS);
        config.tcp_streams = v >= 1 && v <= 8 ? (uint32_t)v : DEFAULT_TCP_STREAMS;
    } else if (strcmp(key, "shm_region") == 0) {
        snprintf(config.shm_region, sizeof config.shm_region, "%s", value);
    } else if (strcmp(key, "pinned_in_region") == 0) {
        config.pinned_in_region = switched_on(value);
    } else if (strcmp(key, "calls_in_region") == 0) {
        config.calls_in_region = switched_on(value);
    } else if (strcmp(key, "gpus") == 0) {
        long v = strtol(value, NULL, 10);
        config.gpus = v > 0 && v < 1024 ? (uint32_t)v : 1;
    }
    /* Other keys belong to the vmcuda launcher or to later versions: ignored. */
}

static void read_file(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno != ENOENT)
            config.config_unreadable = errno;
        return;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *s = trim(line);
        if (!*s || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            continue;
        *eq = 0;
        set(trim(s), trim(eq + 1));
    }
    fclose(f);
}

static void load(void) {
    config.block_size = DEFAULT_BLOCK_SIZE;
    config.gpus = 1;
    config.handshake_timeout_s = 120;
    config.tcp_streams = DEFAULT_TCP_STREAMS;
    /* on since GPU runs 20-21 of 2026-11-23: the project's programs, both builds, and PyTorch's probes gave
     * native output with it; pinned copies reach 0.96-0.99 of native from 64 MiB instead of about half */
    config.pinned_in_region = 1;
    config.calls_in_region = 1;
    config.tls_verify_name = 1;
    snprintf(config.cluster_prefix, sizeof config.cluster_prefix, "/vmcuda/");
    const char *path = getenv("VMCUDA_CONFIG");
    snprintf(config.config_path, sizeof config.config_path, "%s", path && *path ? path : "/etc/vmcuda/client.conf");
    read_file(config.config_path);
    static const char *const env_keys[][2] = {
        {"VMCUDA_APPLIANCE", "appliance"}, {"VMCUDA_TOKEN", "token"},
        {"VMCUDA_BLOCK_SIZE", "block_size"}, {"VMCUDA_GPUS", "gpus"}, {"VMCUDA_TRANSPORT", "transport"},
        {"VMCUDA_HANDSHAKE_TIMEOUT", "handshake_timeout_s"}, {"VMCUDA_TCP_STREAMS", "tcp_streams"},
        {"VMCUDA_SHM_REGION", "shm_region"}, {"VMCUDA_PINNED_IN_REGION", "pinned_in_region"},
        {"VMCUDA_CALLS_IN_REGION", "calls_in_region"}, {"VMCUDA_CLUSTER", "cluster"},
        {"VMCUDA_CLUSTER_PREFIX", "cluster_prefix"}, {"VMCUDA_HOST_ID", "host_id"}, {"VMCUDA_GPU_MODEL", "gpu_model"},
        {"VMCUDA_GPU_MEMORY", "gpu_memory"}, {"VMCUDA_TLS_CA", "tls_ca"}, {"VMCUDA_TLS_VERIFY_NAME", "tls_verify_name"}};
    for (size_t i = 0; i < sizeof env_keys / sizeof env_keys[0]; i++) {
        const char *v = getenv(env_keys[i][0]);
        if (v && *v)
            set(env_keys[i][1], v);
    }
    /* The environment overrides the file: an appliance named there means that appliance, not the file's pool
     * (and a pool named there, not the file's appliance). In one place both: the pool. */
    const char *appliance_env = getenv("VMCUDA_APPLIANCE"), *cluster_env = getenv("VMCUDA_CLUSTER");
    if (appliance_env && *appliance_env && !(cluster_env && *cluster_env))
        config.cluster[0] = 0;
    if (!config.host_id[0]) {
        FILE *f = fopen("/etc/machine-id", "re");
        if (f) {
            if (fgets(config.host_id, sizeof config.host_id, f))
                config.host_id[strcspn(config.host_id, "\r\n")] = 0;
            fclose(f);
        }
        if (!config.host_id[0])
            gethostname(config.host_id, sizeof config.host_id - 1);
    }
}

void vmc_client_config_use_appliance(const char *endpoint) {
    snprintf(config.appliance, sizeof config.appliance, "%s", endpoint);
}

const struct vmc_client_config *vmc_client_config(void) {
    pthread_once(&once, load);
    return &config;
}
