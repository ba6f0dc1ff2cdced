/* Shared libraries of this program that the appliance lacks (PROTOCOL.md "Client libraries"). */
#ifndef VMC_SHIM_LIBRARIES_H
#define VMC_SHIM_LIBRARIES_H

#include <stddef.h>
#include <stdint.h>

struct vmc_client_library {
    char name[256];  /* the name the appliance asked for (a DT_NEEDED entry) */
    char path[4096]; /* where the dynamic linker loaded it from in this process; "" when it is not loaded */
    uint64_t size;   /* 0 when not found */
    uint8_t sha256[32];
};

/* Finds each of `names` (one per line) among the objects loaded into this process and hashes its file.
 * Returns how many entries it filled (in the order asked; a name not found has size 0), or -1 with why. */
int vmc_find_libraries(const char *names, struct vmc_client_library *out, int max, char *why, size_t why_len);

/* The SHA-256 and size of the file at `path` (the executable's too); 0, or -1 with errno. */
int vmc_file_sha256(const char *path, uint64_t *size, uint8_t sha[32]);

/* The entry named `name` of the `n` found, or NULL. */
const struct vmc_client_library *vmc_library_named(const struct vmc_client_library *libs, int n, const char *name);

#endif
