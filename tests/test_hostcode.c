/*
 * test_hostcode.c: the host-kernel loader (runtime/hostcode.c) and the
 * thread pool (runtime/pool.c).
 *
 * The C compiler named by argv[1] (and clang, argv[2], when given: its
 * objects are what LLVM emits for the compiler's host kernels) builds
 * fixture objects at test time in a temporary directory: calls into libm,
 * libmvec and this executable (a symbol far away, so through a stub),
 * .rodata, .data, .bss and common data, a table of function pointers, a
 * call inside the object, a vectorized loop. Each is loaded and run against
 * values computed here. Then each way an object can be wrong is refused
 * with its message, every prefix of an object and thousands of mutated
 * objects fail or load without a crash, and allocation failures at every
 * step give an error. The pool: sums and exact coverage of [0, n) over
 * thread counts and grains, and the latency of back-to-back tiny runs.
 */
#define _GNU_SOURCE /* memmem */
#include <elf.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"
#include "runtime/hostcode.h"
#include "runtime/pool.h"
#include "tests/tap.h"

/* Called by the fixtures: in this executable, gigabytes from the mapping. */
int pcc_test_hook(int x);
int pcc_test_hook(int x)
{
	return 1000 + x;
}
int pcc_test_value = 77;

static const char fix_src[] =
	"#include <math.h>\n"
	"extern int pcc_test_hook(int);\n"
	"extern int pcc_weak_missing(int) __attribute__((weak));\n"
	"static const int table[16] = { 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53 };\n"
	"int data_counter = 5;\n"
	"int bss_counter;\n"
	"int fix_common_var;\n" /* -fcommon: SHN_COMMON */
	"const int fix_ro = 42;\n"
	"static int add1(int x) { return x + 1; }\n"
	"static int sub1(int x) { return x - 1; }\n"
	"__attribute__((noinline, used)) static int fix_local(int x) { return 3 * x; }\n"
	"static int (*ops[3])(int) = { add1, sub1, fix_local };\n"
	"float fix_exp(float x) { return expf(x); }\n"
	"float fix_sin(float x) { return sinf(x); }\n"
	"int fix_table(int i) { return table[i & 15]; }\n"
	"int fix_data_add(int d) { data_counter += d; return data_counter; }\n"
	"int fix_bss_add(int d) { bss_counter += d; return bss_counter; }\n"
	"int fix_common_add(int d) { fix_common_var += d; return fix_common_var; }\n"
	"void fix_set_op(int i, int (*f)(int)) { ops[i] = f; }\n"
	"int fix_apply(int i, int x) { return ops[i](x); }\n"
	"__attribute__((noinline)) int fix_square(int x) { return x * x; }\n"
	"int fix_sum_squares(int n) { int s = 0; for (int i = 0; i < n; i++) s += fix_square(i); return s; }\n"
	"int fix_hook(int x) { return pcc_test_hook(x); }\n"
	"int fix_weak(void) { return pcc_weak_missing ? 1 : 0; }\n"
	"double fix_const(double x) { return x * 3.25 + 0.125; }\n";

static const char vec_src[] =
	"#include <math.h>\n"
	"void fix_saxpy(int n, float a, const float *x, float *y)\n"
	"{ for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i]; }\n"
	"void fix_vexp(int n, const float *x, float *y) { for (int i = 0; i < n; i++) y[i] = expf(x[i]); }\n";

static const char far_src[] = "extern int pcc_test_value;\nint fix_far(void) { return pcc_test_value; }\n";
static const char undef_src[] = "void pcc_no_such_function(void);\nvoid fix_undef(void) { pcc_no_such_function(); }\n";

static char dir[] = "/tmp/pcc-hostcode-XXXXXX";

#define GET(fp, h, name)                          \
	do {                                      \
		void *p_ = hostcode_sym(h, name); \
		memcpy(&(fp), &p_, sizeof p_);    \
	} while (0)

static bool has(const char *s)
{
	bool ok = strstr(ir_error(), s) != NULL;
	if (!ok)
		TAP_DIAG("message was: %s", ir_error());
	return ok;
}

/* Compiles src with cc and flags; the object's bytes, or NULL. */
static uint8_t *build(const char *cc, const char *name, const char *src, const char *flags, size_t *n)
{
	char path[256], cmd[1024];
	snprintf(path, sizeof path, "%s/%s.c", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(src, f) < 0 || fclose(f) != 0)
		return NULL;
	snprintf(cmd, sizeof cmd, "'%s' %s -c %s/%s.c -o %s/%s.o", cc, flags, dir, name, dir, name);
	if (system(cmd) != 0) {
		TAP_DIAG("failed: %s", cmd);
		return NULL;
	}
	snprintf(path, sizeof path, "%s/%s.o", dir, name);
	uint8_t *b = NULL;
	long len;
	if (!(f = fopen(path, "rb")) || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || !(b = malloc((size_t)len)) || fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		b = NULL;
	}
	if (f)
		fclose(f);
	*n = b ? (size_t)len : 0;
	return b;
}

/* The permissions ("r-xp") of the mapping that holds p. */
static const char *perms(const void *p, char out[8])
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	bool found = false;
	while (!found && f && fgets(line, sizeof line, f))
		found = sscanf(line, "%lx-%lx %7s", &lo, &hi, out) == 3 && lo <= (uintptr_t)p && (uintptr_t)p < hi;
	if (!found)
		strcpy(out, "none");
	if (f)
		fclose(f);
	return out;
}

static int add3(int x)
{
	return x + 3;
}

static void check_fixture(const char *cc, const char *what, const char *flags)
{
	size_t n;
	struct hostcode *h = NULL;
	uint8_t *obj = build(cc, "fix", fix_src, flags, &n);
	int rc = obj ? hostcode_load(obj, n, &h) : -1;
	free(obj);
	if (!TAP_OK(rc == 0 && h, "%s: loads", what)) {
		TAP_DIAG("%s", ir_error());
		return;
	}
	float (*fexp)(float), (*fsin)(float);
	int (*table)(int), (*data_add)(int), (*bss_add)(int), (*common_add)(int), (*apply)(int, int);
	int (*sum_squares)(int), (*hook)(int), (*weak)(void);
	void (*set_op)(int, int (*)(int));
	double (*fconst)(double);
	GET(fexp, h, "fix_exp");
	GET(fsin, h, "fix_sin");
	GET(table, h, "fix_table");
	GET(data_add, h, "fix_data_add");
	GET(bss_add, h, "fix_bss_add");
	GET(common_add, h, "fix_common_add");
	GET(apply, h, "fix_apply");
	GET(set_op, h, "fix_set_op");
	GET(sum_squares, h, "fix_sum_squares");
	GET(hook, h, "fix_hook");
	GET(weak, h, "fix_weak");
	GET(fconst, h, "fix_const");
	if (!TAP_OK(fexp && fsin && table && data_add && bss_add && common_add && apply && set_op && sum_squares &&
			    hook && weak && fconst,
		    "%s: every function is found", what)) {
		hostcode_free(h);
		return;
	}
	volatile float xs[] = { -3.5f, 0.0f, 0.7f, 1.25f, 10.0f };
	bool same = true;
	for (size_t i = 0; i < sizeof xs / sizeof *xs; i++)
		same &= fexp(xs[i]) == expf(xs[i]) && fsin(xs[i]) == sinf(xs[i]);
	TAP_OK(same, "%s: expf and sinf through libm equal this process's", what);
	TAP_OK(table(0) == 2 && table(5) == 13 && table(15) == 53 && table(17) == 3, "%s: .rodata table", what);
	TAP_OK(data_add(10) == 15 && data_add(-2) == 13, "%s: .data global accumulates", what);
	TAP_OK(bss_add(4) == 4 && bss_add(5) == 9, "%s: .bss global accumulates", what);
	TAP_OK(common_add(6) == 6 && common_add(1) == 7 && hostcode_sym(h, "fix_common_var"), "%s: common global",
	       what);
	int *dc = hostcode_sym(h, "data_counter");
	TAP_OK(dc && *dc == 13, "%s: hostcode_sym of a .data variable sees its value", what);
	TAP_OK(apply(0, 41) == 42 && apply(1, 41) == 40 && apply(2, 5) == 15, "%s: function pointer table in .data",
	       what);
	set_op(1, add3);
	TAP_OK(apply(1, 4) == 7, "%s: the table is writable and calls back into this process", what);
	TAP_OK(sum_squares(10) == 285, "%s: a call within the object", what);
	uintptr_t a = (uintptr_t)hostcode_sym(h, "fix_hook"), b;
	memcpy(&b, &(int (*)(int)){ pcc_test_hook }, sizeof b);
	TAP_OK(hook(5) == 1005, "%s: a call into this executable, %s", what,
	       (a > b ? a - b : b - a) > INT32_MAX ? "more than 2 GiB away (a stub or the GOT)" : "near");
	char pc[8], pr[8], pw[8];
	const int *ro = hostcode_sym(h, "fix_ro");
	TAP_OK(ro && *ro == 42 && !strcmp(perms((void *)a, pc), "r-xp") && !strcmp(perms(ro, pr), "r--p") &&
		       !strcmp(perms(hostcode_sym(h, "data_counter"), pw), "rw-p"),
	       "%s: code, read-only and writable data mapped %s, %s and %s", what, pc, pr, pw);
	TAP_OK(weak() == 0, "%s: an absent weak symbol is 0", what);
	TAP_OK(fconst(2.0) == 6.625, "%s: a double constant from .rodata", what);
	TAP_OK(!hostcode_sym(h, "pcc_absent") && !hostcode_sym(h, "fix_local") && !hostcode_sym(h, "table"),
	       "%s: absent and local symbols are not found", what);
	hostcode_free(h);
}

static void check_vector(const char *cc, const char *what, const char *flags)
{
	size_t n;
	struct hostcode *h = NULL;
	uint8_t *obj = build(cc, "vec", vec_src, flags, &n);
	int rc = obj ? hostcode_load(obj, n, &h) : -1;
	bool mvec = obj && memmem(obj, n, "_ZGV", 4);
	free(obj);
	if (!TAP_OK(rc == 0 && h, "%s: vector object loads", what)) {
		TAP_DIAG("%s", ir_error());
		return;
	}
	void (*saxpy)(int, float, const float *, float *), (*vexp)(int, const float *, float *);
	GET(saxpy, h, "fix_saxpy");
	GET(vexp, h, "fix_vexp");
	float x[103], y[103], want[103];
	for (int i = 0; i < 103; i++) {
		x[i] = (float)i * 0.37f - 19.0f;
		y[i] = (float)(i % 7) - 2.5f;
		want[i] = 1.5f * x[i] + y[i];
	}
	saxpy(103, 1.5f, x, y);
	TAP_OK(memcmp(y, want, sizeof y) == 0, "%s: vectorized saxpy is exact", what);
	vexp(103, x, y);
	double err = 0;
	for (int i = 0; i < 103; i++)
		err = fmax(err, fabs((double)y[i] - (double)expf(x[i])) / (double)expf(x[i]));
	TAP_OK(err < 1e-6, "%s: expf loop%s within %.2g relative", what, mvec ? " through libmvec" : "", err);
	hostcode_free(h);
}

static int load_err(const uint8_t *obj, size_t n)
{
	struct hostcode *h = NULL;
	int rc = hostcode_load(obj, n, &h);
	hostcode_free(h);
	return rc;
}

static Elf64_Shdr *shdr(uint8_t *obj, unsigned i)
{
	Elf64_Ehdr *e = (Elf64_Ehdr *)obj;
	return (Elf64_Shdr *)(obj + e->e_shoff) + i;
}

static unsigned find_sec(uint8_t *obj, unsigned type)
{
	Elf64_Ehdr *e = (Elf64_Ehdr *)obj;
	for (unsigned i = 1; i < e->e_shnum; i++)
		if (shdr(obj, i)->sh_type == type &&
		    (type != SHT_RELA || (shdr(obj, shdr(obj, i)->sh_info)->sh_flags & SHF_ALLOC)))
			return i;
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void check_errors(const char *cc)
{
	size_t n, m;
	uint8_t *obj = build(cc, "err", fix_src, "-O2 -fPIC -fcommon", &n), *b;
	if (!TAP_OK(obj && n > sizeof(Elf64_Ehdr), "error fixtures build"))
		return;
	b = malloc(n);
	TAP_OK(load_err(NULL, 0) == -EINVAL && has("host code: not an ELF object"), "empty buffer");
	for (size_t i = 0; i < 4096 && i < n; i++)
		b[i] = (uint8_t)rnd();
	TAP_OK(load_err(b, n) == -EINVAL && has("not an ELF object"), "random bytes");
	int bad = 0;
	for (size_t len = 0; len < n; len++) {
		int rc = load_err(obj, len);
		if (rc >= 0 || strncmp(ir_error(), "host code: ", 11) != 0 ||
		    (len >= sizeof(Elf64_Ehdr) && !strstr(ir_error(), "truncated at offset")))
			bad++;
	}
	TAP_OK(bad == 0, "every one of %zu prefixes fails as truncated (%d did not)", n, bad);
	memcpy(b, obj, n);
	b[18] = EM_AARCH64;
	TAP_OK(load_err(b, n) == -EINVAL && has("not x86-64"), "wrong e_machine");
	memcpy(b, obj, n);
	b[16] = ET_DYN;
	TAP_OK(load_err(b, n) == -EINVAL && has("not relocatable"), "a shared object is not relocatable");
	memcpy(b, obj, n);
	((Elf64_Ehdr *)b)->e_shoff = n + 100;
	TAP_OK(load_err(b, n) == -EINVAL && has("truncated at offset"), "section header offset past the end");
	((Elf64_Ehdr *)b)->e_shoff = 0xfffffffffffff000ull;
	TAP_OK(load_err(b, n) == -EINVAL && has("truncated at offset"), "section header offset that overflows");
	memcpy(b, obj, n);
	unsigned st = find_sec(b, SHT_SYMTAB), rela = find_sec(b, SHT_RELA);
	shdr(b, st)->sh_link = 999;
	TAP_OK(st && load_err(b, n) == -EINVAL && has("section 999 out of range"),
	       "symbol table's string table out of range");
	memcpy(b, obj, n);
	shdr(b, rela)->sh_info = 500;
	TAP_OK(rela && load_err(b, n) == -EINVAL && has("section 500 out of range"), "relocation target out of range");
	memcpy(b, obj, n);
	shdr(b, rela)->sh_offset = n - 8;
	TAP_OK(load_err(b, n) == -EINVAL && has("truncated at offset"), "relocations past the end");
	memcpy(b, obj, n);
	Elf64_Rela *r = (Elf64_Rela *)(b + shdr(b, rela)->sh_offset);
	r->r_info = ELF64_R_INFO(ELF64_R_SYM(r->r_info), R_X86_64_TPOFF32);
	TAP_OK(load_err(b, n) == -ENOTSUP && has("unsupported relocation type 23 in section"),
	       "unsupported relocation");
	memcpy(b, obj, n);
	r->r_offset = 1u << 30;
	TAP_OK(load_err(b, n) == -EINVAL && has("out of range of section"), "relocation offset out of its section");

	uint8_t *u = build(cc, "undef", undef_src, "-O2 -fPIC", &m);
	TAP_OK(u && load_err(u, m) == -ENOENT && has("host code: undefined symbol 'pcc_no_such_function'"),
	       "undefined symbol");
	free(u);
	/* -fpie reads an extern variable PC-relative, assuming it is near */
	u = build(cc, "far", far_src, "-O2 -fpie", &m);
	TAP_OK(u && load_err(u, m) == -ERANGE && has("relocation overflow: R_X86_64_PC32 against 'pcc_test_value'"),
	       "-fpie: data in this executable is too far for PC32");
	free(u);
	u = build(cc, "far", far_src, "-O2 -fPIC", &m);
	struct hostcode *h = NULL;
	int (*far)(void) = NULL;
	if (u && hostcode_load(u, m, &h) == 0)
		GET(far, h, "fix_far");
	TAP_OK(far && far() == 77, "-fPIC: the same through the GOT");
	hostcode_free(h);
	free(u);
	u = build(cc, "nopic", fix_src, "-O2 -fno-pic -mcmodel=small -fcommon", &m);
	TAP_OK(u && load_err(u, m) == -ERANGE && has("relocation overflow: R_X86_64_32"),
	       "-fno-pic: absolute 32-bit addresses do not fit a mapping above 4 GiB");
	free(u);

	/* mutations anywhere, in the ELF header, and in the section headers
	 * and symbol table at the end; a crash fails the whole test */
	int unnamed = 0, loaded = 0;
	for (int k = 0; k < 3000; k++) {
		memcpy(b, obj, n);
		for (int j = 0, nm = 1 + (int)(rnd() % 4); j < nm; j++) {
			size_t at = k % 3 == 0   ? rnd() % n
				    : k % 3 == 1 ? rnd() % sizeof(Elf64_Ehdr)
						 : n - 1 - rnd() % (n / 3);
			b[at] = rnd() % 4 ? (uint8_t)rnd() : b[at] ^ (uint8_t)(1u << rnd() % 8);
		}
		int rc = load_err(b, n);
		loaded += rc == 0;
		unnamed += rc < 0 && strncmp(ir_error(), "host code: ", 11) != 0;
	}
	TAP_OK(unnamed == 0, "3000 mutated objects load (%d) or fail with a message", loaded);
	int fails = 0, rc = -1;
	for (long k = 0; k < 100 && rc < 0; k++) {
		ir_alloc_fail_after(k);
		rc = load_err(obj, n);
		ir_alloc_fail_after(-1);
		fails += rc == -ENOMEM && has("out of memory");
	}
	TAP_OK(rc == 0 && fails > 0, "allocation failures at %d steps give -ENOMEM, then it loads", fails);
	free(b);
	free(obj);
}

/* Whether /proc/cpuinfo lists flag (what the kernel saw, an oracle
 * independent of __builtin_cpu_supports). */
static bool cpuinfo_has(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192], word[64];
	bool found = false;
	snprintf(word, sizeof word, " %s ", flag);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "flags", 5) == 0) {
			line[strcspn(line, "\n")] = ' ';
			found = strstr(line, word) != NULL;
			break;
		}
	if (f)
		fclose(f);
	return found;
}

static void check_cpu(void)
{
	TAP_OK(hostcode_check_cpu("+sse2", "x86-64") == 0, "+sse2 runs on any x86-64");
	TAP_OK(hostcode_check_cpu("", "x86-64") == 0 && hostcode_check_cpu(NULL, NULL) == 0, "no features");
	TAP_OK(hostcode_check_cpu("+pcc-unknown,-avx512f,avx512bw,+cx16,+64bit", "x") == 0,
	       "unknown, removed and unsigned features pass");
	int rc = hostcode_check_cpu("+avx512fp16,+sse2", "sapphirerapids");
	if (cpuinfo_has("avx512_fp16"))
		TAP_OK(rc == 0, "+avx512fp16 passes on this CPU, which has it");
	else
		TAP_OK(rc == -ENOTSUP && has("this CPU lacks avx512fp16, which the plan's host code needs "
					     "(compiled for CPU 'sapphirerapids')"),
		       "+avx512fp16 is refused on this CPU, which lacks it");
	rc = hostcode_check_cpu("+avx512f,+avx512bw,+sse4.2", "skx");
	bool f = cpuinfo_has("avx512f"), bw = cpuinfo_has("avx512bw");
	if (f && bw)
		TAP_OK(rc == 0, "+avx512f,+avx512bw pass on this CPU, which has them");
	else
		TAP_OK(rc == -ENOTSUP && has(!f && !bw ? "lacks avx512f, avx512bw, which"
					     : f       ? "lacks avx512bw, which"
						       : "lacks avx512f, which"),
		       "the missing avx512 features are all named");
	rc = hostcode_check_cpu("+sse2,+xop,+fma4", "bdver2"); /* AMD only: refused on Intel */
	f = cpuinfo_has("xop");
	bw = cpuinfo_has("fma4");
	if (f && bw)
		TAP_OK(rc == 0, "+xop,+fma4 pass on this CPU, which has them");
	else
		TAP_OK(rc == -ENOTSUP && has(!f && !bw ? "this CPU lacks xop, fma4, which the plan's host code needs "
							 "(compiled for CPU 'bdver2')"
					     : f       ? "lacks fma4, which"
						       : "lacks xop, which"),
		       "+xop,+fma4: the missing features are named");
}

struct sum {
	_Atomic int64_t sum, chunks, min_chunk;
	_Atomic uint8_t *mark;
};

static void sum_fn(void *ctx, int64_t b, int64_t e)
{
	struct sum *s = ctx;
	int64_t t = 0, m = atomic_load(&s->min_chunk);
	for (int64_t i = b; i < e; i++) {
		t += i + 1;
		atomic_fetch_add(&s->mark[i], 1);
	}
	atomic_fetch_add(&s->sum, t);
	atomic_fetch_add(&s->chunks, 1);
	while (e - b < m && !atomic_compare_exchange_weak(&s->min_chunk, &m, e - b))
		;
}

static void tiny_fn(void *ctx, int64_t b, int64_t e)
{
	atomic_fetch_add((_Atomic int64_t *)ctx, e - b);
}

static void check_pool(void)
{
	static const int threads[] = { 1, 2, 3, 4, 8 };
	static const int64_t ns[] = { 0, 1, 5, 64, 1000, 100003 }, grains[] = { 0, 1, 7, 1000 };
	TAP_OK(!pool_new(0) && has("pool: 0 threads"), "pool_new(0) is refused");
	for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
		struct pool *p = pool_new(threads[t]);
		int bad = 0;
		for (size_t i = 0; p && i < sizeof ns / sizeof *ns; i++) {
			for (size_t g = 0; g < sizeof grains / sizeof *grains; g++) {
				int64_t n = ns[i], gr = grains[g] < 1 ? 1 : grains[g];
				struct sum s = { .min_chunk = INT64_MAX, .mark = calloc((size_t)n + 1, 1) };
				pool_run(p, sum_fn, &s, n, grains[g]);
				for (int64_t k = 0; k < n; k++)
					bad += s.mark[k] != 1;
				bad += s.sum != n * (n + 1) / 2 || s.chunks > threads[t] || (n > 0 && s.chunks < 1);
				bad += s.chunks > 1 && s.min_chunk < gr;
				bad += n >= 2 * gr * threads[t] && s.chunks != threads[t];
				free((void *)s.mark);
			}
		}
		TAP_OK(p && pool_threads(p) == threads[t] && bad == 0,
		       "%d threads: sums, chunk counts and sizes, [0, n) covered once (%d wrong)", threads[t], bad);
		pool_free(p);
	}
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = ncpu < 2 ? 2 : ncpu > 4 ? 4 : (int)ncpu;
	struct pool *p = pool_new(nt);
	_Atomic int64_t total = 0;
	double t0 = ir_now();
	for (int k = 0; p && k < 100000; k++)
		pool_run(p, tiny_fn, &total, nt, 1);
	double dt = ir_now() - t0;
	TAP_OK(total == 100000LL * nt, "100000 back-to-back runs on %d threads", nt);
	TAP_DIAG("pool_run of %d one-item chunks: %.2f us per call (%ld CPUs)", nt, dt / 100000 * 1e6, ncpu);
	pool_free(p);
}

int main(int argc, char **argv)
{
	const char *cc = argc > 1 ? argv[1] : "cc", *clang = argc > 2 ? argv[2] : "";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	check_fixture(cc, "cc -O2 -fPIC", "-O2 -fPIC -fcommon");
	check_fixture(cc, "cc -O2 -fPIC -fno-plt", "-O2 -fPIC -fno-plt -fcommon");
	check_fixture(cc, "cc -O1 -fpie", "-O1 -fpie -fcommon");
	if (*clang)
		check_fixture(clang, "clang -O2 -fPIC", "-O2 -fPIC -fcommon");
	if (hostcode_check_cpu("+ssse3,+sse4.1,+sse4.2,+popcnt", "x86-64-v2") == 0) {
		check_vector(cc, "cc -O3 -march=x86-64-v2", "-O3 -march=x86-64-v2 -ffast-math -fPIC");
		if (*clang)
			check_vector(clang, "clang -O3 -march=x86-64-v2", "-O3 -march=x86-64-v2 -fPIC");
	}
	check_errors(cc);
	check_cpu();
	check_pool();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		TAP_DIAG("could not remove %s", dir);
	return tap_done();
}
