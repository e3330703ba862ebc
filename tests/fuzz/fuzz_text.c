/*
 * fuzz_text.c: libFuzzer target for the IR's text form (ir/text.c), which
 * pcc reads as a model (`pcc MODEL.ir`) and its tests as pass inputs.
 *
 * An input is IR text (a NUL is added). A graph that parses must verify,
 * and print text that parses again and prints the same bytes (the
 * round trip text.c promises); a small one is then run by the reference
 * interpreter. NULL with one line "line N: ..." is a clean refusal.
 */
#include "compiler/compiler.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_graph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* ir_print into a malloc'd string. */
static char *print(const struct ir_graph *g, size_t *n)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, n);
	if (!f)
		abort();
	if (ir_print(g, f) < 0)
		FUZZ_FAIL("a parsed graph does not print: %s", ir_error());
	if (fclose(f) != 0)
		abort();
	return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct ir_graph *g = ir_parse(text);
	free(text);
	if (!g) {
		fuzz_check_message("ir_parse", ir_error());
		return 0;
	}
	if (ir_verify(g) < 0)
		FUZZ_FAIL("a parsed graph does not verify: %s", ir_error());
	size_t n1, n2;
	char *t1 = print(g, &n1);
	struct ir_graph *h = ir_parse(t1);
	if (!h)
		FUZZ_FAIL("printed text does not parse: %s\n%s", ir_error(), t1);
	char *t2 = print(h, &n2);
	if (n1 != n2 || memcmp(t1, t2, n1))
		FUZZ_FAIL("print(parse(print(g))) differs from print(g):\n%s\n----\n%s", t1, t2);
	free(t1);
	free(t2);
	ir_graph_free(h);
	fuzz_run_graph(g);
	ir_graph_free(g);
	return 0;
}
