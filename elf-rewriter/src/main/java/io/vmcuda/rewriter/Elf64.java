package io.vmcuda.rewriter;

/** The ELF64 / x86-64 / GNU constants and record sizes the rewriter relies on (see elf.h). */
final class Elf64 {
    private Elf64() {
    }

    static final int EHDR_SIZE = 64;
    static final int PHDR_SIZE = 56;
    static final int SHDR_SIZE = 64;
    static final int SYM_SIZE = 24;
    static final int DYN_SIZE = 16;
    static final int RELA_SIZE = 24;
    static final int VERSYM_SIZE = 2;

    static final int ELFCLASS32 = 1;
    static final int ELFCLASS64 = 2;
    static final int ELFDATA2LSB = 1;
    static final int EM_X86_64 = 62;
    static final int ET_REL = 1;
    static final int ET_EXEC = 2;
    static final int ET_DYN = 3;
    static final int ET_CORE = 4;
    static final int PN_XNUM = 0xffff;

    static final int PT_LOAD = 1;
    static final int PT_DYNAMIC = 2;
    static final int PT_INTERP = 3;
    static final int PT_NOTE = 4;
    static final int PT_PHDR = 6;
    static final int PT_GNU_PROPERTY = 0x6474e553;
    static final int PF_X = 1;
    static final int PF_W = 2;
    static final int PF_R = 4;

    static final int SHT_SYMTAB = 2;
    static final int SHT_STRTAB = 3;
    static final int SHT_RELA = 4;
    static final int SHT_DYNAMIC = 6;
    static final int SHT_NOBITS = 8;
    static final int SHT_DYNSYM = 11;
    static final int SHT_GNU_HASH = 0x6ffffff6;
    static final int SHT_GNU_VERNEED = 0x6ffffffe;
    static final int SHT_GNU_VERSYM = 0x6fffffff;

    static final long DT_NULL = 0;
    static final long DT_NEEDED = 1;
    static final long DT_STRTAB = 5;
    static final long DT_SYMTAB = 6;
    static final long DT_STRSZ = 10;
    static final long DT_SYMENT = 11;
    static final long DT_DEBUG = 21;
    static final long DT_GNU_HASH = 0x6ffffef5L;
    static final long DT_VERSYM = 0x6ffffff0L;
    static final long DT_VERNEED = 0x6ffffffeL;
    static final long DT_VERNEEDNUM = 0x6fffffffL;

    static final int SHN_UNDEF = 0;
    /** .gnu.version index meaning "global, unversioned": an unversioned definition satisfies the import. */
    static final int VER_NDX_GLOBAL = 1;
    static final int VERSYM_HIDDEN = 0x8000;

    static String segmentTypeName(int type) {
        return switch (type) {
            case 0 -> "PT_NULL";
            case PT_LOAD -> "PT_LOAD";
            case PT_DYNAMIC -> "PT_DYNAMIC";
            case PT_INTERP -> "PT_INTERP";
            case PT_NOTE -> "PT_NOTE";
            case PT_PHDR -> "PT_PHDR";
            case 7 -> "PT_TLS";
            case 0x6474e550 -> "PT_GNU_EH_FRAME";
            case 0x6474e551 -> "PT_GNU_STACK";
            case 0x6474e552 -> "PT_GNU_RELRO";
            case PT_GNU_PROPERTY -> "PT_GNU_PROPERTY";
            default -> "type 0x" + Integer.toHexString(type);
        };
    }
}
