/* Modules and libraries (cuModuleLoad*, cuLibraryLoad*): the image is found in this process's memory or
 * file, sized from its own header (fat binary, ELF cubin, PTX text), and sent by content: its SHA-256
 * first, the bytes only when the worker does not hold them yet (PROTOCOL.md "Driver front end"). Each
 * content is sent at most once per session: a library that loads the same image for every context, or
 * the runtime's lazy loading, costs one hash and one small call. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drv.h"
#include "drv_call.h"
#include "drv_image_hash.h"
#include "drv_jit.h"
#include "vmc_drv_api.h"
#include "vmc_drv_internal.h"
#include "vmc_drv_wire.h"

#define FATBIN_MAGIC 0xba55ed50u
#define MAX_IMAGE ((size_t)4 << 30)

struct fatbin_header {
    uint32_t magic;
    uint16_t version, header_size;
    uint64_t files_size;
};

struct image {
    const unsigned char *bytes;
    size_t size;
    uint8_t wrapper_version; /* 0: the bytes are the image; 1 or 2: a fat binary the worker wraps again */
};

static size_t elf_size(const unsigned char *p) {
    const Elf64_Ehdr *e = (const Elf64_Ehdr *)p;
    size_t size = sizeof *e;
    if (e->e_phoff && e->e_phentsize == sizeof(Elf64_Phdr)) {
        const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + e->e_phoff);
        if (e->e_phoff + (size_t)e->e_phnum * sizeof *ph > size)
            size = e->e_phoff + (size_t)e->e_phnum * sizeof *ph;
        for (int i = 0; i < e->e_phnum; i++)
            if (ph[i].p_offset + ph[i].p_filesz > size)
                size = ph[i].p_offset + ph[i].p_filesz;
    }
    if (e->e_shoff && e->e_shentsize == sizeof(Elf64_Shdr)) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + e->e_shoff);
        if (e->e_shoff + (size_t)e->e_shnum * sizeof *sh > size)
            size = e->e_shoff + (size_t)e->e_shnum * sizeof *sh;
        for (int i = 0; i < e->e_shnum; i++)
            if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_offset + sh[i].sh_size > size)
                size = sh[i].sh_offset + sh[i].sh_size;
    }
    return size;
}

/* Finds the bytes of an image given by address: 0, or -1 when it is none of the formats the driver loads
 * from memory that we know how to size. */
static int image_at(const void *at, int allow_wrapper, struct image *img) {
    const unsigned char *p = at;
    memset(img, 0, sizeof *img);
    if (!p)
        return -1;
    const struct vmc_fatbin_wrapper *w = at;
    if (allow_wrapper && w->magic == VMC_FATBIN_WRAPPER_MAGIC && (w->version == 1 || w->version == 2) && w->data) {
        img->wrapper_version = (uint8_t)w->version;
        p = w->data;
    }
    const struct fatbin_header *h = (const struct fatbin_header *)p;
    if (h->magic == FATBIN_MAGIC && h->header_size >= sizeof *h) {
        img->size = (size_t)h->header_size + (size_t)h->files_size;
    } else if (img->wrapper_version) {
        return -1;
    } else if (memcmp(p, ELFMAG, SELFMAG) == 0 && p[EI_CLASS] == ELFCLASS64) {
        img->size = elf_size(p);
    } else {
        /* PTX (or other text the JIT takes): up to its terminating NUL */
        const char *t = (const char *)p;
        while (*t == ' ' || *t == '\t' || *t == '\r' || *t == '\n')
            t++;
        if (strncmp(t, ".version", 8) != 0 && strncmp(t, "//", 2) != 0)
            return -1;
        img->size = strlen((const char *)p) + 1;
    }
    if (img->size == 0 || img->size > MAX_IMAGE)
        return -1;
    img->bytes = p;
    return 0;
}

/* ---- content already on the worker ---- */

#define KNOWN_MAX 4096
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t known[KNOWN_MAX][32];
static int n_known;

static int is_known(const uint8_t sha[32]) {
    int found = 0;
    pthread_mutex_lock(&known_lock);
    for (int i = 0; i < n_known && !found; i++)
        found = memcmp(known[i], sha, 32) == 0;
    pthread_mutex_unlock(&known_lock);
    return found;
}

static void note_known(const uint8_t sha[32]) {
    pthread_mutex_lock(&known_lock);
    if (n_known < KNOWN_MAX)
        memcpy(known[n_known++], sha, 32);
    pthread_mutex_unlock(&known_lock);
}

/* Asks the worker for the image by hash and sends the bytes only if it does not hold it. */
static CUresult ask_or_send(const struct image *img, const uint8_t sha[32]) {
    if (is_known(sha))
        return CUDA_SUCCESS;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_ImageQuery, 0);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_image_args a = {.size = img->size};
    memcpy(a.sha256, sha, sizeof a.sha256);
    vmc_put_image_args(vmc_call_args(&c), &a);
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_image_held held;
    vmc_get_image_held(&c.reply, &held);
    if (!held.held) {
        st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_ImageUpload, 0);
        if (st != CUDA_SUCCESS)
            return st;
        vmc_put_image_args(vmc_call_args(&c), &a);
        st = (CUresult)vmc_call_finish_upload(&c, img->bytes, img->size);
        if (st != CUDA_SUCCESS)
            return st;
    }
    note_known(sha);
    return CUDA_SUCCESS;
}

/* Makes sure the worker holds the image; sha gets its SHA-256. */
static CUresult ensure_on_worker(const struct image *img, uint8_t sha[32]) {
    int remembered = vmc_drv_image_sha256(img->bytes, img->size, sha);
    CUresult st = ask_or_send(img, sha);
    if (st == CUDA_ERROR_INVALID_IMAGE && remembered) {
        /* the bytes do not hash to the remembered SHA-256 (a stale or damaged line of the hash cache):
         * hash them, correct the line and ask again */
        vmc_drv_image_sha256_refresh(img->bytes, img->size, sha);
        st = ask_or_send(img, sha);
    }
    return st;
}

/* Makes sure the worker holds these bytes (a JIT link's input: any format, sized by the caller). */
CUresult vmc_drv_bytes_on_worker(const void *bytes, size_t size, uint8_t sha[32]) {
    if (!bytes || size == 0 || size > MAX_IMAGE)
        return CUDA_ERROR_INVALID_VALUE;
    struct image img = {.bytes = bytes, .size = size};
    return ensure_on_worker(&img, sha);
}

/* ---- loading ---- */

static CUresult load(enum vmc_drv_load_how how, const struct image *img, const struct vmc_drv_jit *j, uint64_t *handle) {
    uint8_t sha[32];
    CUresult st = ensure_on_worker(img, sha);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_call c;
    st = vmc_drv_call_begin(&c, VMC_DRV_vmc_drv_ModuleLoad, 0);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_module_load_args a = {.how = (uint8_t)how, .wrapper_version = img->wrapper_version};
    uint32_t options[VMC_MAX_JIT_OPTIONS];
    uint64_t values[VMC_MAX_JIT_OPTIONS];
    vmc_drv_jit_put(j, &a, options, values);
    memcpy(a.sha256, sha, sizeof a.sha256);
    vmc_put_module_load_args(vmc_call_args(&c), &a);
    st = (CUresult)vmc_call_finish(&c);
    struct vmc_module_load_reply r;
    if (!vmc_drv_jit_reply(&c, &r))
        return st == CUDA_SUCCESS ? CUDA_ERROR_UNKNOWN : st;
    *handle = r.handle;
    vmc_drv_jit_write_back(&r, j);
    return st;
}

static CUresult load_at(enum vmc_drv_load_how how, void **out, const void *image, const struct vmc_drv_jit *j) {
    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct image img;
    if (image_at(image, how == VMC_LOAD_MODULE_FATBINARY || how == VMC_LOAD_LIBRARY || how == VMC_LOAD_MODULE_DATA, &img) != 0)
        return CUDA_ERROR_INVALID_IMAGE;
    uint64_t handle = 0;
    CUresult st = load(how, &img, j, &handle);
    if (st == CUDA_SUCCESS)
        *out = (void *)(uintptr_t)handle;
    return st;
}

/* Reads a whole file (cuModuleLoad, cuLibraryLoadFromFile, cuLinkAddFile: the path is this machine's). */
CUresult vmc_drv_read_file(const char *path, unsigned char **bytes, size_t *size) {
    if (!path)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > MAX_IMAGE) {
        if (fd >= 0)
            close(fd);
        return CUDA_ERROR_FILE_NOT_FOUND;
    }
    /* one byte more: a NUL after PTX text */
    unsigned char *b = calloc(1, (size_t)sb.st_size + 1);
    size_t got = 0;
    while (b && got < (size_t)sb.st_size) {
        ssize_t r = read(fd, b + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!b || got != (size_t)sb.st_size) {
        free(b);
        return b ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_OUT_OF_MEMORY;
    }
    *bytes = b;
    *size = got;
    return CUDA_SUCCESS;
}

static CUresult load_file(enum vmc_drv_load_how how, void **out, const char *path) {
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned char *bytes = NULL;
    size_t size = 0;
    CUresult st = vmc_drv_read_file(path, &bytes, &size);
    if (st != CUDA_SUCCESS)
        return st;
    struct image img;
    if (image_at(bytes, 0, &img) != 0 || img.size > size + 1) {
        free(bytes);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint64_t handle = 0;
    st = load(how, &img, NULL, &handle);
    free(bytes);
    if (st == CUDA_SUCCESS)
        *out = (void *)(uintptr_t)handle;
    return st;
}

__attribute__((visibility("default"))) CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    return load_at(VMC_LOAD_MODULE_DATA, (void **)module, image, NULL);
}

__attribute__((visibility("default"))) CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                                                                   unsigned int numOptions, CUjit_option *options,
                                                                   void **optionValues) {
    struct vmc_drv_jit j;
    CUresult st = vmc_drv_jit_read(numOptions, options, optionValues, &j);
    return st != CUDA_SUCCESS ? st : load_at(VMC_LOAD_MODULE_DATA_EX, (void **)module, image, &j);
}

__attribute__((visibility("default"))) CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) {
    return load_at(VMC_LOAD_MODULE_FATBINARY, (void **)module, fatCubin, NULL);
}

__attribute__((visibility("default"))) CUresult cuModuleLoad(CUmodule *module, const char *fname) {
    return load_file(VMC_LOAD_MODULE_DATA, (void **)module, fname);
}

/* Library options point into this process (the runtime's host function table) or only say the caller
 * keeps the image: neither matters to the worker, which keeps its own copy. */
__attribute__((visibility("default"))) CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                                                  CUjit_option *jitOptions, void **jitOptionsValues,
                                                                  unsigned int numJitOptions,
                                                                  CUlibraryOption *libraryOptions,
                                                                  void **libraryOptionValues,
                                                                  unsigned int numLibraryOptions) {
    (void)libraryOptionValues;
    if (numLibraryOptions && !libraryOptions)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_drv_jit j;
    CUresult st = vmc_drv_jit_read(numJitOptions, jitOptions, jitOptionsValues, &j);
    return st != CUDA_SUCCESS ? st : load_at(VMC_LOAD_LIBRARY, (void **)library, code, &j);
}

__attribute__((visibility("default"))) CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                                                      CUjit_option *jitOptions, void **jitOptionsValues,
                                                                      unsigned int numJitOptions,
                                                                      CUlibraryOption *libraryOptions,
                                                                      void **libraryOptionValues,
                                                                      unsigned int numLibraryOptions) {
    (void)jitOptions; (void)jitOptionsValues; (void)libraryOptions; (void)libraryOptionValues; (void)numLibraryOptions;
    if (numJitOptions) {
        static int told;
        return vmc_drv_not_supported("cuLibraryLoadFromFile with JIT options", "not implemented yet", &told);
    }
    return load_file(VMC_LOAD_LIBRARY, (void **)library, fileName);
}

/* The runtime asks which loading mode the driver uses and loads its modules accordingly. Lazy (CUDA's
 * default since 12.2) sends each image only when a kernel of it is first launched; CUDA_MODULE_LOADING
 * in the program's environment chooses, as it does natively. */
__attribute__((visibility("default"))) CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    const char *env = getenv("CUDA_MODULE_LOADING");
    *mode = env && strcmp(env, "EAGER") == 0 ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}

/* cuModuleEnumerateFunctions: the handles travel back as 8-byte values. */
__attribute__((visibility("default"))) CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
                                                                           CUmodule mod) {
    if ((!functions && numFunctions) || numFunctions > VMC_MAX_MODULE_FUNCTIONS)
        return CUDA_ERROR_INVALID_VALUE;
    struct vmc_call c;
    CUresult st = vmc_drv_call_begin(&c, VMC_DRV_cuModuleEnumerateFunctions, 0);
    if (st != CUDA_SUCCESS)
        return st;
    vmc_put_enumerate_functions_args(vmc_call_args(&c),
                                     &(struct vmc_enumerate_functions_args){.n = numFunctions, .module = (uint64_t)(uintptr_t)mod});
    st = (CUresult)vmc_call_finish(&c);
    if (st != CUDA_SUCCESS)
        return st;
    struct vmc_enumerate_functions_reply r;
    vmc_get_enumerate_functions_reply(&c.reply, &r);
    if (!vmc_call_reply_ok(&c) || r.n != numFunctions)
        return CUDA_ERROR_UNKNOWN;
    for (unsigned i = 0; i < numFunctions; i++)
        functions[i] = (CUfunction)(uintptr_t)vmc_enumerate_functions_reply_functions_at(&r, i);
    return CUDA_SUCCESS;
}
