/* `vmcuda doctor PROGRAM`: which of vmcuda's front ends will serve PROGRAM, read from its ELF file without
 * running it: the libraries it names (DT_NEEDED) and whether it carries CUDA kernels (.nv_fatbin). A
 * program linked with libcudart.so.13 goes through the runtime front end (its executable is shipped to
 * the appliance); one with the CUDA runtime inside (nvcc's default, static), linked with libcuda, or a
 * Python or other interpreter (frameworks load their own runtime and the CUDA libraries) goes through the
 * driver front end (a plain worker, module images sent by content); CUDA 12's runtime is not served. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor_program.h"

struct elf_view {
    const unsigned char *b;
    size_t n;
};

static const void *at(const struct elf_view *e, uint64_t off, uint64_t len) {
    return off <= e->n && len <= e->n - off ? e->b + off : NULL;
}

/* The file offset of virtual address `va` through the PT_LOAD segments, or (uint64_t)-1. */
static uint64_t offset_of(const struct elf_view *e, const Elf64_Ehdr *h, uint64_t va) {
    for (int i = 0; i < h->e_phnum; i++) {
        const Elf64_Phdr *p = at(e, h->e_phoff + (uint64_t)i * sizeof *p, sizeof *p);
        if (p && p->p_type == PT_LOAD && va >= p->p_vaddr && va - p->p_vaddr < p->p_filesz)
            return p->p_offset + (va - p->p_vaddr);
    }
    return (uint64_t)-1;
}

static int has_section(const struct elf_view *e, const Elf64_Ehdr *h, const char *wanted) {
    const Elf64_Shdr *names = h->e_shstrndx < h->e_shnum ? at(e, h->e_shoff + (uint64_t)h->e_shstrndx * sizeof *names, sizeof *names) : NULL;
    for (int i = 0; names && i < h->e_shnum; i++) {
        const Elf64_Shdr *s = at(e, h->e_shoff + (uint64_t)i * sizeof *s, sizeof *s);
        const char *name = s ? at(e, names->sh_offset + s->sh_name, strlen(wanted) + 1) : NULL;
        if (name && strcmp(name, wanted) == 0)
            return 1;
    }
    return 0;
}

/* Bit 0: libcudart.so.13, 1: an older libcudart, 2: libcuda.so.1, 3: kernels inside, 4: a library that
 * carries its own CUDA runtime (cuBLAS, cuFFT...). */
static unsigned cuda_traits(const struct elf_view *e, const Elf64_Ehdr *h) {
    unsigned t = has_section(e, h, ".nv_fatbin") || has_section(e, h, "__nv_relfatbin") ? 8u : 0u;
    for (int i = 0; i < h->e_phnum; i++) {
        const Elf64_Phdr *p = at(e, h->e_phoff + (uint64_t)i * sizeof *p, sizeof *p);
        if (!p || p->p_type != PT_DYNAMIC)
            continue;
        uint64_t strtab = 0;
        size_t n = p->p_filesz / sizeof(Elf64_Dyn);
        const Elf64_Dyn *d = at(e, p->p_offset, n * sizeof *d);
        for (size_t k = 0; d && k < n && d[k].d_tag != DT_NULL; k++)
            if (d[k].d_tag == DT_STRTAB)
                strtab = offset_of(e, h, d[k].d_un.d_ptr);
        for (size_t k = 0; d && strtab != (uint64_t)-1 && k < n && d[k].d_tag != DT_NULL; k++) {
            if (d[k].d_tag != DT_NEEDED)
                continue;
            const char *lib = at(e, strtab + d[k].d_un.d_val, 1);
            if (!lib || !memchr(lib, 0, e->n - (size_t)(lib - (const char *)e->b)))
                continue;
            if (!strcmp(lib, "libcudart.so.13"))
                t |= 1;
            else if (!strncmp(lib, "libcudart.so.", 13))
                t |= 2;
            else if (!strcmp(lib, "libcuda.so.1") || !strcmp(lib, "libcuda.so"))
                t |= 4;
            else if (!strncmp(lib, "libcublas", 9) || !strncmp(lib, "libcufft", 8) || !strncmp(lib, "libcurand", 9) ||
                     !strncmp(lib, "libcusolver", 11) || !strncmp(lib, "libcusparse", 11) || !strncmp(lib, "libcudnn", 8) ||
                     !strncmp(lib, "libnvrtc", 8))
                t |= 16;
        }
    }
    return t;
}

int doctor_explain_program(const char *path) {
    printf("\n0. Which front end serves %s\n", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the doctor */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        printf("   cannot read it as a file\n");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t n = (size_t)st.st_size;
    const unsigned char *b = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0); /* read, never run */
    close(fd);
    if (b == MAP_FAILED) {
        printf("   cannot map it\n");
        return -1;
    }
    struct elf_view e = {b, n};
    int rc = 0;
    size_t path_len = strlen(path);
    int python = path_len > 3 && strcmp(path + path_len - 3, ".py") == 0;
    if (python || (n >= 2 && b[0] == '#' && b[1] == '!')) {
        size_t len = 2;
        while (!python && len < n && len < 80 && b[len] != '\n')
            len++;
        printf("   a script (%.*s): an interpreter such as Python loads the frameworks' own CUDA runtime and\n"
               "   libraries, which reach the GPU through libcuda.so.1: the driver front end serves it\n"
               "   (run it as: vmcuda run -- %s ...)\n", python ? 6 : (int)(len - 2), python ? "Python" : (const char *)b + 2, path);
    } else {
        const Elf64_Ehdr *h = at(&e, 0, sizeof *h);
        if (!h || memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64) {
            printf("   not a 64-bit ELF program or a script: vmcuda cannot tell\n");
            rc = -1;
        } else {
            unsigned t = cuda_traits(&e, h);
            if (t & 2) {
                printf("   it is linked with an older CUDA runtime (libcudart.so.12 or before), which vmcuda does not\n"
                       "   serve: rebuild it with CUDA 13, or with nvcc's default static runtime (the driver front end)\n");
                rc = -1;
            } else if (t & 1) {
                printf("   linked with libcudart.so.13: the runtime front end serves it; its executable is shipped to\n"
                       "   the appliance, which runs it there (libraries it needs must exist on the appliance too)%s\n",
                       t & 16 ? ";\n   the CUDA libraries it uses reach the GPU through the driver front end" : "");
            } else if (t & (4 | 8 | 16)) {
                printf("   %s: the driver front end serves it; a plain\n"
                       "   worker on the appliance loads its kernels, sent by content (and cached there)\n",
                       t & 8 ? "the CUDA runtime is inside it (nvcc's default, static)"
                       : t & 4 ? "linked with libcuda.so.1 (the driver API)" : "it uses CUDA libraries");
            } else {
                printf("   no CUDA in its own file: if it loads CUDA with dlopen (as frameworks do), the driver front\n"
                       "   end serves it\n");
            }
        }
    }
    munmap((void *)b, n);
    return rc;
}
