/*
 * hostcode.c: loads an x86-64 ELF relocatable object (the host kernels the
 * compiler emits with LLVM) into this process, as a tiny static linker;
 * hostcode_elf.c reads and checks the object first.
 *
 * Every SHF_ALLOC section goes into one anonymous mapping laid out as
 *
 *	[code sections, stubs] [read-only sections, GOT] [writable sections, commons]
 *
 * each group starting on a page of its own. Symbols get their place in the
 * mapping; undefined ones resolve through dlsym in the process, then libm
 * and libmvec (weak ones to 0 when absent). Every SHT_RELA section whose
 * target is loaded is applied, then the groups become RX, R and RW.
 * GOTPCREL* relocations load from an 8-byte slot of the GOT; a PLT32 (or a
 * PC32 on a call or jump) to an external symbol more than 2 GiB away goes
 * through a 16-byte stub "jmp *0(%rip); .quad address". Every 32-bit
 * result is checked, and so is every place against its section.
 * Constructors (.init_array) are not run; thread-local data is refused.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "ir/ir.h"
#include "runtime/hostcode.h"
#include "runtime/hostcode_elf.h"

#define NONE UINT64_MAX
#define STUB_BYTES 16

struct export
{
	uint32_t name; /* offset in names */
	uint64_t addr;
};

struct hostcode {
	uint8_t *base; /* the mapping, size bytes */
	size_t size;
	char *names; /* a copy of the object's symbol string table */
	struct export *exp;
	size_t nexp;
};

struct loader {
	struct hostcode_elf e;
	uint64_t *secoff;    /* per section: offset in the mapping, NONE if not loaded */
	uint64_t *addr;      /* per symbol: address (commons: offset until mapped), NONE if not loaded */
	int32_t *got, *stub; /* per symbol: its GOT slot and stub, -1 if none */
	unsigned ngot, nstub;
	uint64_t stub_off, got_off, ro_off, rw_off, size; /* bytes in the mapping */
	uint8_t *base;
};

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static const char *secname(const struct loader *ld, unsigned i)
{
	return hostcode_elf_secname(&ld->e, i);
}

static const char *symname(const struct loader *ld, unsigned i)
{
	return hostcode_elf_symname(&ld->e, i);
}

/* Pass one: which symbols need a GOT slot or a stub. */
static int count(void *ctx, unsigned target, const Elf64_Rela *r)
{
	struct loader *ld = ctx;
	unsigned s = (unsigned)ELF64_R_SYM(r->r_info), t = ELF64_R_TYPE(r->r_info);
	bool call = t == R_X86_64_PC32 || t == R_X86_64_PLT32;
	if (call && s && ld->e.sym[s].st_shndx == SHN_UNDEF && ld->stub[s] < 0)
		ld->stub[s] = (int32_t)ld->nstub++;
	if ((t == R_X86_64_GOTPCREL || t == R_X86_64_GOTPCRELX || t == R_X86_64_REX_GOTPCRELX) && ld->got[s] < 0)
		ld->got[s] = (int32_t)ld->ngot++;
	return 0;
}

/* Appends size bytes aligned to align at *off; their offset, or NONE. */
static uint64_t place(uint64_t *off, uint64_t align, uint64_t size)
{
	uint64_t at = align_up(*off, align ? align : 1);
	*off = at + size;
	if (*off > HOSTCODE_MAX_BYTES) {
		ir_errorf(-E2BIG, "host code: the object needs more than 2 GiB once loaded");
		return NONE;
	}
	return at;
}

static int layout(struct loader *ld)
{
	uint64_t off = 0;
	for (int g = 0; g < 3; g++) {
		for (unsigned i = 1; i < ld->e.nsh; i++) {
			const Elf64_Shdr *h = &ld->e.sh[i];
			int group = (h->sh_flags & SHF_EXECINSTR) ? 0 : (h->sh_flags & SHF_WRITE) ? 2 : 1;
			if ((h->sh_flags & SHF_ALLOC) && group == g &&
			    (ld->secoff[i] = place(&off, h->sh_addralign, h->sh_size)) == NONE)
				return -E2BIG;
		}
		if ((g == 0 && (ld->stub_off = place(&off, 16, (uint64_t)ld->nstub * STUB_BYTES)) == NONE) ||
		    (g == 1 && (ld->got_off = place(&off, 8, (uint64_t)ld->ngot * 8)) == NONE) ||
		    (g < 2 && place(&off, ld->e.page, 0) == NONE))
			return -E2BIG;
		if (g < 2)
			*(g == 0 ? &ld->ro_off : &ld->rw_off) = off;
	}
	for (unsigned i = 1; i < ld->e.nsym; i++) {
		const Elf64_Sym *s = &ld->e.sym[i];
		if (s->st_shndx != SHN_COMMON)
			continue;
		if ((s->st_value & (s->st_value - 1)) || s->st_value > ld->e.page || s->st_size > HOSTCODE_MAX_BYTES)
			return ir_errorf(-EINVAL, "host code: common symbol '%s' has alignment %llu and size %llu",
					 symname(ld, i), (unsigned long long)s->st_value,
					 (unsigned long long)s->st_size);
		if ((ld->addr[i] = place(&off, s->st_value, s->st_size)) == NONE)
			return -E2BIG;
	}
	ld->size = align_up(off ? off : 1, ld->e.page);
	return 0;
}

static void *libm, *libmvec;
static pthread_once_t libs_once = PTHREAD_ONCE_INIT;

static void open_libs(void)
{
	libm = dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL);
	libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL); /* may be absent */
}

static void *lookup(const char *name)
{
	void *p;
	pthread_once(&libs_once, open_libs);
	if (!(p = dlsym(RTLD_DEFAULT, name)) && libm)
		p = dlsym(libm, name);
	if (!p && libmvec)
		p = dlsym(libmvec, name);
	return p;
}

static int resolve(struct loader *ld)
{
	uint64_t base = (uint64_t)(uintptr_t)ld->base;
	for (unsigned i = 1; i < ld->e.nsym; i++) {
		const Elf64_Sym *s = &ld->e.sym[i];
		const char *name = symname(ld, i);
		if (s->st_shndx == SHN_UNDEF && strcmp(name, "_GLOBAL_OFFSET_TABLE_") == 0) {
			ld->addr[i] = base + ld->got_off; /* GNU as names it whenever the GOT is used */
		} else if (s->st_shndx == SHN_UNDEF) {
			void *p = *name ? lookup(name) : NULL;
			if (!p && ELF64_ST_BIND(s->st_info) != STB_WEAK)
				return ir_errorf(-ENOENT, "host code: undefined symbol '%s'", name);
			ld->addr[i] = (uint64_t)(uintptr_t)p;
		} else if (s->st_shndx == SHN_ABS) {
			ld->addr[i] = s->st_value;
		} else if (s->st_shndx == SHN_COMMON) {
			ld->addr[i] += base;
		} else if (ld->secoff[s->st_shndx] != NONE) {
			if (s->st_value > ld->e.sh[s->st_shndx].sh_size)
				return ir_errorf(-EINVAL, "host code: symbol '%s' lies past the end of section %u (%s)",
						 name, s->st_shndx, secname(ld, s->st_shndx));
			ld->addr[i] = base + ld->secoff[s->st_shndx] + s->st_value;
		}
		if (ld->got[i] >= 0)
			memcpy(ld->base + ld->got_off + (uint64_t)ld->got[i] * 8, &ld->addr[i], 8);
		if (ld->stub[i] >= 0) {
			uint8_t *t = ld->base + ld->stub_off + (uint64_t)ld->stub[i] * STUB_BYTES;
			memcpy(t, "\xff\x25\0\0\0\0", 6); /* jmp *0(%rip), then the address */
			memcpy(t + 6, &ld->addr[i], 8);
			memcpy(t + 14, "\xcc\xcc", 2);
		}
	}
	return 0;
}

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* Pass two: patches one place. */
static int apply(void *ctx, unsigned target, const Elf64_Rela *r)
{
	struct loader *ld = ctx;
	const Elf64_Shdr *t = &ld->e.sh[target];
	unsigned type = ELF64_R_TYPE(r->r_info), s = (unsigned)ELF64_R_SYM(r->r_info);
	unsigned w = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
	const char *rtype = hostcode_elf_rname(type);
	if (type == R_X86_64_NONE)
		return 0;
	if (t->sh_type == SHT_NOBITS || r->r_offset > t->sh_size || t->sh_size - r->r_offset < w)
		return ir_errorf(-EINVAL, "host code: %s at offset %llu is out of range of section %u (%s)", rtype,
				 (unsigned long long)r->r_offset, target, secname(ld, target));
	if (ld->addr[s] == NONE)
		return ir_errorf(-EINVAL, "host code: %s in section %u (%s) refers to '%s', which is not loaded", rtype,
				 target, secname(ld, target), symname(ld, s));
	uint8_t *at = ld->base + ld->secoff[target] + r->r_offset;
	uint64_t S = ld->addr[s], A = (uint64_t)r->r_addend, P = (uint64_t)(uintptr_t)at, v;
	bool ok;
	switch (type) {
	case R_X86_64_64:
	case R_X86_64_PC64:
		v = S + A - (type == R_X86_64_PC64 ? P : 0);
		memcpy(at, &v, 8);
		return 0;
	case R_X86_64_PC32:
	case R_X86_64_PLT32:
		v = S + A - P;
		/* a call, jmp or jcc to an external symbol too far away: through its stub */
		if (!fits32((int64_t)v) && ld->stub[s] >= 0 &&
		    (type == R_X86_64_PLT32 || (r->r_offset >= 1 && (at[-1] == 0xe8 || at[-1] == 0xe9)) ||
		     (r->r_offset >= 2 && at[-2] == 0x0f && (at[-1] & 0xf0) == 0x80)))
			v = (uint64_t)(uintptr_t)ld->base + ld->stub_off + (uint64_t)ld->stub[s] * STUB_BYTES + A - P;
		ok = fits32((int64_t)v);
		break;
	case R_X86_64_32:
	case R_X86_64_32S:
		v = S + A;
		ok = type == R_X86_64_32 ? v <= UINT32_MAX : fits32((int64_t)v);
		break;
	default: /* the GOTPCREL family: count() gave the symbol a slot */
		v = (uint64_t)(uintptr_t)ld->base + ld->got_off + (uint64_t)ld->got[s] * 8 + A - P;
		ok = fits32((int64_t)v);
		break;
	}
	if (!ok)
		return ir_errorf(-ERANGE,
				 "host code: relocation overflow: %s against '%s' at offset %llu of section "
				 "%u (%s): 0x%llx does not fit in 32 bits",
				 rtype, symname(ld, s), (unsigned long long)r->r_offset, target, secname(ld, target),
				 (unsigned long long)v);
	uint32_t v32 = (uint32_t)v;
	memcpy(at, &v32, 4);
	return 0;
}

static int protect(const struct loader *ld)
{
	if (ld->ro_off && mprotect(ld->base, ld->ro_off, PROT_READ | PROT_EXEC) < 0)
		return ir_errorf(-errno, "host code: mprotect of the code: %s", strerror(errno));
	if (ld->rw_off > ld->ro_off && mprotect(ld->base + ld->ro_off, ld->rw_off - ld->ro_off, PROT_READ) < 0)
		return ir_errorf(-errno, "host code: mprotect of the read-only data: %s", strerror(errno));
	return 0;
}

static int exports(const struct loader *ld, struct hostcode *h)
{
	if (!ld->e.nsym)
		return 0;
	h->names = ir_malloc(ld->e.strsz);
	h->exp = ir_malloc(ld->e.nsym * sizeof *h->exp);
	if (!h->names || !h->exp)
		return ir_errorf(-ENOMEM, "host code: out of memory");
	memcpy(h->names, ld->e.str, ld->e.strsz);
	for (unsigned i = 1; i < ld->e.nsym; i++) {
		const Elf64_Sym *s = &ld->e.sym[i];
		unsigned bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
		if ((bind == STB_GLOBAL || bind == STB_WEAK) && s->st_shndx != SHN_UNDEF && s->st_name &&
		    type != STT_SECTION && type != STT_FILE && ld->addr[i] != NONE)
			h->exp[h->nexp++] = (struct export){ s->st_name, ld->addr[i] };
	}
	return 0;
}

int hostcode_load(const uint8_t *obj, size_t n, struct hostcode **out)
{
	struct loader ld = { 0 };
	struct hostcode *h = ir_calloc(1, sizeof *h);
	int rc;
	*out = NULL;
	if (!h)
		return ir_errorf(-ENOMEM, "host code: out of memory");
	if ((rc = hostcode_elf_read(&ld.e, obj, n)) < 0)
		goto out;
	/* one block for secoff, addr, got and stub, all NONE or -1 */
	size_t ns = ld.e.nsym + 1;
	size_t bytes = ld.e.nsh * sizeof(uint64_t) + ns * (sizeof(uint64_t) + 2 * sizeof(int32_t));
	if (!(ld.secoff = ir_malloc(bytes))) {
		rc = ir_errorf(-ENOMEM, "host code: out of memory");
		goto out;
	}
	memset(ld.secoff, 0xff, bytes);
	ld.addr = ld.secoff + ld.e.nsh;
	ld.got = (int32_t *)(ld.addr + ns);
	ld.stub = ld.got + ns;
	ld.addr[0] = 0;
	if ((rc = hostcode_elf_each_rela(&ld.e, count, &ld)) < 0 || (rc = layout(&ld)) < 0)
		goto out;
	ld.base = mmap(NULL, ld.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ld.base == MAP_FAILED) {
		ld.base = NULL;
		rc = ir_errorf(-ENOMEM, "host code: cannot map %llu bytes: %s", (unsigned long long)ld.size,
			       strerror(errno));
		goto out;
	}
	h->base = ld.base;
	h->size = ld.size;
	for (unsigned i = 1; i < ld.e.nsh; i++)
		if (ld.secoff[i] != NONE && ld.e.sh[i].sh_type != SHT_NOBITS)
			memcpy(ld.base + ld.secoff[i], ld.e.obj + ld.e.sh[i].sh_offset, ld.e.sh[i].sh_size);
	if ((rc = resolve(&ld)) < 0 || (rc = hostcode_elf_each_rela(&ld.e, apply, &ld)) < 0 ||
	    (rc = protect(&ld)) < 0 || (rc = exports(&ld, h)) < 0)
		goto out;
	*out = h;
	h = NULL;
out:
	hostcode_free(h);
	hostcode_elf_free(&ld.e);
	ir_free(ld.secoff);
	return rc;
}

void *hostcode_sym(const struct hostcode *h, const char *name)
{
	for (size_t i = 0; h && i < h->nexp; i++)
		if (strcmp(h->names + h->exp[i].name, name) == 0)
			return (void *)(uintptr_t)h->exp[i].addr;
	return NULL;
}

void hostcode_free(struct hostcode *h)
{
	if (!h)
		return;
	if (h->base)
		munmap(h->base, h->size);
	ir_free(h->names);
	ir_free(h->exp);
	ir_free(h);
}
