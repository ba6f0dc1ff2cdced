/* Build tool: asks NVIDIA's libcudart for the name and text of every error code and writes them as
 * a C table (errtab.c/errtab.h) for the shim. Needs no driver: these two calls are pure lookups. */
#include <stdio.h>
#include <string.h>
#include <cuda_runtime_api.h>

static void c_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gen_errtab OUT.c OUT.h\n");
        return 2;
    }
    const char *unknown_name = cudaGetErrorName((cudaError_t)0x7ffffff0);
    const char *unknown_text = cudaGetErrorString((cudaError_t)0x7ffffff0);
    FILE *c = fopen(argv[1], "w"), *h = fopen(argv[2], "w");
    if (!c || !h)
        return 1;
    fprintf(h, "/* Generated at build time by gen_errtab from NVIDIA's libcudart. Do not edit. */\n"
               "#ifndef VMC_ERRTAB_H\n#define VMC_ERRTAB_H\n"
               "struct vmc_error_text { int code; const char *name; const char *text; };\n"
               "const struct vmc_error_text *vmc_error_text(int code);\n");
    fprintf(h, "#define VMC_UNKNOWN_ERROR_NAME ");
    c_string(h, unknown_name);
    fprintf(h, "\n#define VMC_UNKNOWN_ERROR_STRING ");
    c_string(h, unknown_text);
    fprintf(h, "\n#endif\n");
    fprintf(c, "/* Generated at build time by gen_errtab from NVIDIA's libcudart. Do not edit. */\n"
               "#include <stddef.h>\n#include \"errtab.h\"\n\nstatic const struct vmc_error_text table[] = {\n");
    int n = 0;
    for (int code = 0; code < 20000; code++) {
        const char *name = cudaGetErrorName((cudaError_t)code);
        if (!name || strcmp(name, unknown_name) == 0)
            continue;
        fprintf(c, "    {%d, ", code);
        c_string(c, name);
        fprintf(c, ", ");
        c_string(c, cudaGetErrorString((cudaError_t)code));
        fprintf(c, "},\n");
        n++;
    }
    fprintf(c, "};\n\nconst struct vmc_error_text *vmc_error_text(int code) {\n"
               "    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)\n"
               "        if (table[i].code == code)\n            return &table[i];\n    return NULL;\n}\n");
    fclose(c);
    fclose(h);
    fprintf(stderr, "gen_errtab: %d error codes\n", n);
    return 0;
}
