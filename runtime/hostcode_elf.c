/*
 * hostcode_elf.c: reads an x86-64 ELF relocatable object for hostcode.c
 * (hostcode_elf.h): the ELF header (magic, class, machine, type), the
 * section headers (each inside the object; extended numbering through
 * section 0), the section names, the one symbol table and its names, and
 * the relocation sections one entry at a time. The object may be corrupt:
 * nothing is read before its offset and size are checked against n, and
 * sizes are checked before they are multiplied, so any input gives either
 * a checked view or a "host code: " message, never a crash.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"
#include "runtime/hostcode_elf.h"

/* the relocations hostcode.c applies */
#define R(t) [t] = #t
static const char *const rname[] = {
	R(R_X86_64_NONE), R(R_X86_64_64),   R(R_X86_64_PC32),     R(R_X86_64_PLT32),     R(R_X86_64_32),
	R(R_X86_64_32S),  R(R_X86_64_PC64), R(R_X86_64_GOTPCREL), R(R_X86_64_GOTPCRELX), R(R_X86_64_REX_GOTPCRELX),
};
#undef R

const char *hostcode_elf_rname(unsigned type)
{
	return type < sizeof rname / sizeof *rname ? rname[type] : NULL;
}

const char *hostcode_elf_secname(const struct hostcode_elf *e, unsigned i)
{
	if (e->shstr && i < e->nsh && e->sh[i].sh_name < e->shstrsz)
		return e->shstr + e->sh[i].sh_name;
	return "?";
}

const char *hostcode_elf_symname(const struct hostcode_elf *e, unsigned i)
{
	const Elf64_Sym *s = &e->sym[i];
	if (ELF64_ST_TYPE(s->st_info) == STT_SECTION)
		return hostcode_elf_secname(e, s->st_shndx);
	return s->st_name < e->strsz ? e->str + s->st_name : "?";
}

static int check_range(const struct hostcode_elf *e, uint64_t off, uint64_t size, unsigned i)
{
	if (off <= e->n && size <= e->n - off)
		return 0;
	uint64_t end = off + size < off ? UINT64_MAX : off + size;
	return ir_errorf(-EINVAL, "host code: truncated at offset %zu: section %u (%s) extends to offset %llu", e->n, i,
			 hostcode_elf_secname(e, i), (unsigned long long)end);
}

static int check_sec(const struct hostcode_elf *e, uint64_t i, const char *what)
{
	if (i < e->nsh)
		return 0;
	return ir_errorf(-EINVAL, "host code: section %llu out of range (%s; the object has %u sections)",
			 (unsigned long long)i, what, e->nsh);
}

/* The bytes of string table section i (checked to be in the object), which
 * must end in a NUL. */
static int strtab(const struct hostcode_elf *e, unsigned i, const char **s, size_t *n)
{
	const Elf64_Shdr *h = &e->sh[i];
	if (h->sh_type != SHT_STRTAB || h->sh_size == 0 || e->obj[h->sh_offset + h->sh_size - 1] != 0)
		return ir_errorf(-EINVAL, "host code: section %u is not a string table", i);
	*s = (const char *)e->obj + h->sh_offset;
	*n = h->sh_size;
	return 0;
}

static int read_sections(struct hostcode_elf *e)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	int rc;
	if (e->n < SELFMAG || memcmp(e->obj, ELFMAG, SELFMAG) != 0)
		return ir_errorf(-EINVAL, "host code: not an ELF object (%zu bytes, no ELF magic)", e->n);
	if (e->n < sizeof eh)
		return ir_errorf(-EINVAL, "host code: truncated at offset %zu: the ELF header needs %zu bytes", e->n,
				 sizeof eh);
	memcpy(&eh, e->obj, sizeof eh);
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return ir_errorf(-EINVAL, "host code: not a 64-bit little-endian ELF object");
	if (eh.e_machine != EM_X86_64)
		return ir_errorf(-EINVAL, "host code: not x86-64 code (e_machine %u)", eh.e_machine);
	if (eh.e_type != ET_REL)
		return ir_errorf(-EINVAL, "host code: not relocatable (e_type %u, expected ET_REL)", eh.e_type);
	if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr))
		return ir_errorf(-EINVAL, "host code: no section headers of %zu bytes", sizeof(Elf64_Shdr));
	uint64_t nsh = eh.e_shnum, shstrndx = eh.e_shstrndx;
	if (nsh == 0 || shstrndx == SHN_XINDEX) { /* the real values are in section 0 */
		if ((rc = check_range(e, eh.e_shoff, sizeof sh0, 0)) < 0)
			return rc;
		memcpy(&sh0, e->obj + eh.e_shoff, sizeof sh0);
		nsh = nsh ? nsh : sh0.sh_size;
		shstrndx = shstrndx == SHN_XINDEX ? sh0.sh_link : shstrndx;
	}
	if (nsh == 0 || nsh > e->n / sizeof(Elf64_Shdr) || eh.e_shoff > e->n - nsh * sizeof(Elf64_Shdr))
		return ir_errorf(-EINVAL, "host code: truncated at offset %zu: %llu section headers at offset %llu",
				 e->n, (unsigned long long)nsh, (unsigned long long)eh.e_shoff);
	e->nsh = (unsigned)nsh;
	if (!(e->sh = ir_malloc(nsh * sizeof(Elf64_Shdr))))
		return ir_errorf(-ENOMEM, "host code: out of memory");
	memcpy(e->sh, e->obj + eh.e_shoff, nsh * sizeof(Elf64_Shdr));
	for (unsigned i = 1; i < e->nsh; i++) { /* section 0 holds no bytes, maybe counts */
		const Elf64_Shdr *h = &e->sh[i];
		if (h->sh_type != SHT_NOBITS && (rc = check_range(e, h->sh_offset, h->sh_size, i)) < 0)
			return rc;
		uint64_t al = h->sh_addralign;
		if ((h->sh_flags & SHF_ALLOC) && ((al & (al - 1)) || al > e->page || h->sh_size > HOSTCODE_MAX_BYTES))
			return ir_errorf(-EINVAL,
					 "host code: section %u has alignment %llu and size %llu (expected a "
					 "power of two up to a page, and at most 2 GiB)",
					 i, (unsigned long long)al, (unsigned long long)h->sh_size);
	}
	if (shstrndx != SHN_UNDEF && ((rc = check_sec(e, shstrndx, "section names")) < 0 ||
				      (rc = strtab(e, (unsigned)shstrndx, &e->shstr, &e->shstrsz)) < 0))
		return rc;
	return 0;
}

static int read_symbols(struct hostcode_elf *e)
{
	int rc;
	for (unsigned i = 1; i < e->nsh; i++) {
		if (e->sh[i].sh_type == SHT_SYMTAB && e->symtab)
			return ir_errorf(-EINVAL, "host code: more than one symbol table (sections %u and %u)",
					 e->symtab, i);
		if (e->sh[i].sh_type == SHT_SYMTAB)
			e->symtab = i;
	}
	const Elf64_Shdr *h = &e->sh[e->symtab];
	if (!e->symtab)
		return 0;
	if (h->sh_entsize != sizeof(Elf64_Sym) || h->sh_size % sizeof(Elf64_Sym) || h->sh_size == 0)
		return ir_errorf(-EINVAL, "host code: symbol table section %u is malformed", e->symtab);
	if ((rc = check_sec(e, h->sh_link, "symbol names")) < 0 || (rc = strtab(e, h->sh_link, &e->str, &e->strsz)) < 0)
		return rc;
	e->nsym = (unsigned)(h->sh_size / sizeof(Elf64_Sym));
	if (!(e->sym = ir_malloc(h->sh_size)))
		return ir_errorf(-ENOMEM, "host code: out of memory");
	memcpy(e->sym, e->obj + h->sh_offset, h->sh_size);
	for (unsigned i = 0; i < e->nsym; i++) {
		const Elf64_Sym *s = &e->sym[i];
		unsigned type = ELF64_ST_TYPE(s->st_info), k = s->st_shndx;
		if (s->st_name >= e->strsz)
			return ir_errorf(-EINVAL, "host code: symbol %u has its name out of range", i);
		if (k == SHN_XINDEX || (k < SHN_LORESERVE && k >= e->nsh) ||
		    (k >= SHN_LORESERVE && k != SHN_ABS && k != SHN_COMMON))
			return ir_errorf(-EINVAL,
					 "host code: symbol '%s': section %u out of range (the object has "
					 "%u sections)",
					 hostcode_elf_symname(e, i), k, e->nsh);
		if (type == STT_TLS || (type == STT_GNU_IFUNC && k != SHN_UNDEF))
			return ir_errorf(-ENOTSUP,
					 "host code: symbol '%s' is thread-local or an ifunc, which is not "
					 "supported",
					 hostcode_elf_symname(e, i));
	}
	return 0;
}

int hostcode_elf_each_rela(const struct hostcode_elf *e, int (*fn)(void *ctx, unsigned target, const Elf64_Rela *r),
			   void *ctx)
{
	int rc;
	for (unsigned i = 1; i < e->nsh; i++) {
		const Elf64_Shdr *h = &e->sh[i];
		if (h->sh_type != SHT_RELA && h->sh_type != SHT_REL)
			continue;
		if ((rc = check_sec(e, h->sh_info, "relocation target")) < 0)
			return rc;
		if (!(e->sh[h->sh_info].sh_flags & SHF_ALLOC))
			continue;
		if (h->sh_type == SHT_REL || h->sh_link != e->symtab || !e->symtab ||
		    h->sh_entsize != sizeof(Elf64_Rela) || h->sh_size % sizeof(Elf64_Rela))
			return ir_errorf(-EINVAL, "host code: relocation section %u (%s) is malformed or not SHT_RELA",
					 i, hostcode_elf_secname(e, i));
		for (uint64_t j = 0; j < h->sh_size / sizeof(Elf64_Rela); j++) {
			Elf64_Rela r;
			memcpy(&r, e->obj + h->sh_offset + j * sizeof r, sizeof r);
			unsigned type = ELF64_R_TYPE(r.r_info);
			uint64_t sym = ELF64_R_SYM(r.r_info);
			if (!hostcode_elf_rname(type))
				return ir_errorf(-ENOTSUP,
						 "host code: unsupported relocation type %u in section %u (%s)", type,
						 i, hostcode_elf_secname(e, i));
			if (sym >= e->nsym)
				return ir_errorf(-EINVAL,
						 "host code: relocation %llu in section %u (%s): symbol %llu "
						 "out of range",
						 (unsigned long long)j, i, hostcode_elf_secname(e, i),
						 (unsigned long long)sym);
			if ((rc = fn(ctx, h->sh_info, &r)) < 0)
				return rc;
		}
	}
	return 0;
}

int hostcode_elf_read(struct hostcode_elf *e, const uint8_t *obj, size_t n)
{
	int rc;
	*e = (struct hostcode_elf){ .obj = obj, .n = obj ? n : 0, .page = (size_t)sysconf(_SC_PAGESIZE) };
	if ((rc = read_sections(e)) < 0 || (rc = read_symbols(e)) < 0)
		return rc;
	return 0;
}

void hostcode_elf_free(struct hostcode_elf *e)
{
	ir_free(e->sh);
	ir_free(e->sym);
	e->sh = NULL;
	e->sym = NULL;
}
