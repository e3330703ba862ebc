/*
 * hostcode.h: loads the host kernels a plan carries (an x86-64 ELF
 * relocatable object that the compiler emitted with LLVM, PIC, small code
 * model) into this process, since the machine that runs a plan has no
 * linker. Undefined symbols resolve in the process, libm and libmvec.
 *
 *	struct hostcode *h;
 *	if (hostcode_check_cpu(features, cpu) < 0 || hostcode_load(obj, n, &h) < 0)
 *		return ir_error_code();
 *	kernel = hostcode_sym(h, "k17");
 *	...
 *	hostcode_free(h);
 */
#ifndef PCC_RUNTIME_HOSTCODE_H
#define PCC_RUNTIME_HOSTCODE_H

#include <stddef.h>
#include <stdint.h>

struct hostcode;

/* Loads obj[0..n) (which the caller may free afterwards). 0 and *out, or a
 * negative errno with an ir_errorf message starting "host code: " that
 * names what is wrong (not ELF, not x86-64, truncated, a section or symbol
 * out of range, an unsupported relocation, an undefined symbol, a
 * relocation that does not fit). Corrupt input never crashes. */
int hostcode_load(const uint8_t *obj, size_t n, struct hostcode **out);
/* The address of a defined global or weak symbol; NULL if there is none
 * (local symbols are not visible). */
void *hostcode_sym(const struct hostcode *h, const char *name);
void hostcode_free(struct hostcode *h);

/* features: an LLVM feature string ("+avx2,+fma,+sse4.2"); entries without
 * a '+' and features this check cannot see are ignored. 0 if this CPU has
 * them all, else -ENOTSUP naming the missing ones and cpu (what the code
 * was compiled for, for the message; may be NULL). */
int hostcode_check_cpu(const char *features, const char *cpu);

#endif
