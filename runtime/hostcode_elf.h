/*
 * hostcode_elf.h: the checked view of an x86-64 ELF relocatable object that
 * hostcode.c links, private to hostcode*.c. hostcode_elf.c reads the
 * header, the section headers and the symbol table, checking every offset,
 * size and index against the object, so that hostcode.c may use them as
 * they are: every section that is not NOBITS lies inside the object, every
 * symbol's section index is in range (or SHN_ABS or SHN_COMMON) and its name
 * NUL-terminated, every allocated section aligns to at most a page and is
 * at most 2 GiB.
 */
#ifndef PCC_RUNTIME_HOSTCODE_ELF_H
#define PCC_RUNTIME_HOSTCODE_ELF_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

#define HOSTCODE_MAX_BYTES (1ull << 31) /* the small code model's reach */

struct hostcode_elf {
	const uint8_t *obj; /* n bytes */
	size_t n;
	size_t page;    /* bytes */
	Elf64_Shdr *sh; /* nsh, copied (the object may be unaligned) */
	unsigned nsh;
	const char *shstr; /* section names, shstrsz bytes, NUL-terminated; NULL if none */
	size_t shstrsz;
	Elf64_Sym *sym;        /* nsym, copied; 0 if there is no symbol table */
	unsigned nsym, symtab; /* symtab: its section, 0 if none */
	const char *str;       /* symbol names, strsz bytes, NUL-terminated */
	size_t strsz;
};

/* 0, or a negative errno with a "host code: " message; free e either way. */
int hostcode_elf_read(struct hostcode_elf *e, const uint8_t *obj, size_t n);
void hostcode_elf_free(struct hostcode_elf *e);
/* names for messages ("?" when there is none) */
const char *hostcode_elf_secname(const struct hostcode_elf *e, unsigned i);
const char *hostcode_elf_symname(const struct hostcode_elf *e, unsigned i);
/* "R_X86_64_PC32" for the types hostcode.c applies, NULL for the others */
const char *hostcode_elf_rname(unsigned type);
/* Calls fn(ctx, target section, relocation) on every relocation of every
 * SHT_RELA section that applies to an allocated section, after checking
 * the section, the type (one hostcode_elf_rname knows) and the symbol
 * index; stops at fn's first negative return. */
int hostcode_elf_each_rela(const struct hostcode_elf *e, int (*fn)(void *ctx, unsigned target, const Elf64_Rela *r),
			   void *ctx);

#endif
