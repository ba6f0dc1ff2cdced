/* worker_printf_scan.c against images nvcc made for this test (the Makefile's printf-scan fixtures: quiet.cu has no
 * printf, printf.cu and assert.cu print), as fat binaries (nvcc 13's default: cubin plain, PTX compressed with zstd;
 * and with -Xfatbin -compress-all), cubins, and PTX; fat-binary wrappers as constructors register them (version 2's
 * prelinked list); then what it must refuse: a compression it does not read, unknown entry kinds and flags, every
 * truncation and random damage of a fat binary (under ASan: no read out of bounds). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker_printf_scan.h"

static int failures, checks;

static void expect(int got, int want, const char *what) {
    checks++;
    if (got != want) {
        failures++;
        fprintf(stderr, "FAIL %s: %d, expected %d\n", what, got, want);
    }
}

static uint8_t *slurp(const char *dir, const char *name, size_t *n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "FAIL cannot open fixture %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)size);
    if (fread(b, 1, (size_t)size, f) != (size_t)size)
        exit(1);
    fclose(f);
    *n = (size_t)size;
    return b;
}

static void image(const char *dir, const char *name, int want) {
    size_t n;
    uint8_t *b = slurp(dir, name, &n);
    expect(vmc_w_image_may_print(b, n), want, name);
    free(b);
}

/* u16 entry kind at +0 and u64 flags at +40 of a fat binary's first entry (its container header is 16 bytes) */
static void set_first_entry(uint8_t *fatbin, int kind, uint64_t flags_or) {
    uint8_t *e = fatbin + 16;
    if (kind >= 0) {
        uint16_t k = (uint16_t)kind;
        memcpy(e, &k, sizeof k);
    }
    uint64_t flags;
    memcpy(&flags, e + 40, sizeof flags);
    flags |= flags_or;
    memcpy(e + 40, &flags, sizeof flags);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_printf_scan FIXTURE-DIR\n");
        return 2;
    }
    const char *d = argv[1];
    image(d, "quiet.fatbin", 0);
    image(d, "printf.fatbin", 1);
    image(d, "assert.fatbin", 1);
    image(d, "quiet-compressed.fatbin", 0);
    image(d, "printf-compressed.fatbin", 1); /* seen only once decompressed */
    image(d, "quiet.cubin", 0);
    image(d, "printf.cubin", 1);
    image(d, "quiet.ptx", 0);
    image(d, "printf.ptx", 1);

    size_t nq, np;
    uint8_t *quiet = slurp(d, "quiet.fatbin", &nq), *printing = slurp(d, "printf.fatbin", &np);

    /* containers back to back, with padding (as in an executable's .nv_fatbin section) */
    uint8_t *two = calloc(1, nq + 8 + np + 8);
    memcpy(two, quiet, nq);
    memcpy(two + nq + 8, quiet, nq);
    expect(vmc_w_image_may_print(two, 2 * nq + 8), 0, "two quiet containers with padding between");
    expect(vmc_w_image_may_print(two, 2 * nq + 16), 0, "... and padding after");
    memcpy(two + nq + 8, printing, np);
    expect(vmc_w_image_may_print(two, nq + 8 + np), 1, "a quiet container, then one that prints");
    two[nq + 8] ^= 0xff;
    expect(vmc_w_image_may_print(two, nq + 8 + np), 1, "a quiet container, then unknown bytes");
    free(two);

    /* what is not read counts as printing */
    uint8_t *copy = malloc(nq);
    memcpy(copy, quiet, nq);
    set_first_entry(copy, -1, 0x2000);
    expect(vmc_w_image_may_print(copy, nq), 1, "an entry with the older compression");
    memcpy(copy, quiet, nq);
    set_first_entry(copy, 8, 0);
    expect(vmc_w_image_may_print(copy, nq), 1, "an entry of an unknown kind");
    memcpy(copy, quiet, nq);
    set_first_entry(copy, -1, 0x4000000);
    expect(vmc_w_image_may_print(copy, nq), 1, "an entry with a flag not known here");
    expect(vmc_w_image_may_print("not an image at all, just some text", 35), 1, "text that is not PTX");
    expect(vmc_w_image_may_print(NULL, 0), 1, "no image");

    /* fat-binary wrappers as constructors register them: version 1 is its fat binary; version 2 (relocatable device
     * code) adds the prelinked fat binaries, where with only virtual architectures every kernel is (its own fat
     * binary is then an empty container) */
    static const uint8_t empty[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0};
    struct wrapper {
        int magic, version;
        const uint8_t *data;
        const void *filename_or_fatbins;
    };
    size_t bytes = 0;
    struct wrapper v1 = {0x466243b1, 1, quiet, "quiet.cu"};
    expect(vmc_w_wrapper_may_print(&v1, &bytes), 0, "a wrapper of a quiet fat binary");
    expect(bytes == nq, 1, "... its bytes counted");
    v1.data = printing;
    expect(vmc_w_wrapper_may_print(&v1, &bytes), 1, "a wrapper of a printing fat binary");
    const uint8_t *quiet_list[] = {quiet, quiet, NULL}, *printing_list[] = {quiet, printing, NULL};
    struct wrapper v2 = {0x466243b1, 2, empty, quiet_list};
    expect(vmc_w_wrapper_may_print(&v2, &bytes), 0, "relocatable code, every prelinked fat binary quiet");
    expect(bytes == 16 + 2 * nq, 1, "... their bytes counted");
    v2.filename_or_fatbins = printing_list;
    expect(vmc_w_wrapper_may_print(&v2, &bytes), 1, "relocatable code, a prelinked fat binary printing");
    v2.filename_or_fatbins = NULL;
    expect(vmc_w_wrapper_may_print(&v2, &bytes), 0, "relocatable code, no list");
    struct wrapper odd = {0x466243b1, 3, quiet, NULL}, bad = {0x12345678, 1, quiet, NULL}, none = {0x466243b1, 1, NULL, NULL};
    expect(vmc_w_wrapper_may_print(&odd, &bytes), 1, "a wrapper of another version");
    expect(vmc_w_wrapper_may_print(&bad, &bytes), 1, "a wrapper of another magic");
    expect(vmc_w_wrapper_may_print(&none, &bytes), 1, "a wrapper without a fat binary");
    expect(vmc_w_wrapper_may_print(NULL, &bytes), 1, "no wrapper");

    /* every truncation says "may print" (the container no longer holds its entries), and never reads past the end */
    for (size_t n = 0; n < nq; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, quiet, n);
        int may = vmc_w_image_may_print(cut, n);
        free(cut);
        if (!may) {
            expect(may, 1, "a truncated fat binary");
            break;
        }
    }
    checks++;

    /* random damage: any answer, no crash (ASan) */
    srand(7);
    for (int round = 0; round < 20000; round++) {
        memcpy(copy, quiet, nq);
        for (int k = 0; k < 1 + rand() % 8; k++) {
            size_t at = (size_t)rand() % 96; /* the headers, where lengths are */
            copy[at < nq ? at : nq - 1] = (uint8_t)rand();
        }
        (void)vmc_w_image_may_print(copy, nq);
    }
    checks++;
    free(copy);
    free(quiet);
    free(printing);
    printf("test_printf_scan: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
