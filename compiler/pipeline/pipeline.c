/*
 * pipeline.c: the compile pipeline of `pcc MODEL --cluster C -o plan.bin`,
 * one list of passes in the order they run (pipeline_compile, and the
 * lowering's part in lower_passes), each through one runner, PASS: the
 * pass runs; what it made is checked (search_check for the search's plan,
 * ir_verify for a graph, plan_verify for a plan; lowering's templates have
 * no checker of their own and are checked as the plan memory makes of
 * them); dumped when --dump-after names the pass (on stdout, or as
 * the file NN-PASS.ir or NN-PASS.txt in --dump-dir, NN counting the passes
 * run); timed as a phase for --time-passes (progress.c) unless it names
 * its own phases. Each pass frees its own temporaries; what a later pass
 * consumes (the templates, the plan before it is read back) is freed by
 * the pass that consumes it.
 *
 *   search    stages, meshes, micro-batches, schedule (inter_pass), which
 *             builds the model at each micro-batch size it weighs
 *   import    the model at the micro-batch size chosen
 *   autodiff  training: the train step, nodes tagged by stage
 *   lower     each stage's sharding (intra_pass), its template program
 *   fusion    kernel fusion over each template
 *   memory    frees, buffer offsets, the per-device programs
 *   codegen   host code or PTX for every kernel
 *   write     plan.bin written, read back and checked (or -o FILE.txt)
 *
 * Two loops: lowering may find a stage that does not fit the memory limit
 * (the search runs again without it), and a training stage whose arena
 * comes out over the limit is solved again (lower, fusion and memory run
 * again). The model file is read once, before the search
 * (pipeline_model_open: the ONNX file unpacked, or IR text kept as text;
 * the plan's model hash is of those bytes, and its input files follow the
 * inputs read there: compile_read), and every graph comes from
 * that through one loader, pipeline_load, without the file: IR shapes are
 * concrete and the ONNX importer folds shape arithmetic (a Reshape's
 * target computed from the input's Shape) into constants, so each
 * micro-batch size is still an import of its own, from the unpacked
 * model. The graphs hold a reference to it; the pipeline drops its own
 * once lowering is done.
 *
 * Example: pcc gpt.onnx --cluster cpu:4 -o plan.bin --dump-after=import,memory
 * prints the forward graph at the chosen micro-batch size as IR text, then
 * each stage's first device's program after the memory plan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "compiler/lower/lower.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/progress.h"

/* What a pass makes, which says how it is checked and dumped. */
enum pass_kind { K_SEARCH, K_GRAPH, K_TEMPLATE, K_PLAN };

static const struct pass_info {
	const char *name;
	enum pass_kind kind;
	const char *phase; /* its --time-passes row; NULL: the pass names its phases */
} passes[PASS_COUNT] = {
	[PASS_SEARCH] = { "search", K_SEARCH, NULL },
	[PASS_IMPORT] = { "import", K_GRAPH, "lowering: the model at the micro-batch size" },
	[PASS_AUTODIFF] = { "autodiff", K_GRAPH, "lowering: the train step" },
	[PASS_LOWER] = { "lower", K_TEMPLATE, NULL },
	[PASS_FUSION] = { "fusion", K_TEMPLATE, "lowering: fusion" },
	[PASS_MEMORY] = { "memory", K_PLAN, "lowering: memory plan" },
	[PASS_CODEGEN] = { "codegen", K_PLAN, NULL },
	[PASS_WRITE] = { "write", K_PLAN, NULL },
};

/* Lowerings that may refuse a stage before pcc gives up. */
#define MAX_REFUSED 16

struct pipeline {
	const struct pipeline_input *in; /* NULL: compile_lower's passes alone */
	struct pipeline_model m;
	int nrun; /* passes run: the dumps' numbers */
	/* what the passes made so far */
	const struct inter_plan *ip;
	struct compile *cc; /* lowering's handle */
	struct plan *plan;  /* the plan after memory, then the plan read back */
};

const char *pipeline_pass_name(enum pipeline_pass p)
{
	return passes[p].name;
}

int pipeline_dump_parse(const char *list, unsigned *mask)
{
	const char *s = list;
	do {
		size_t n = strcspn(s, ",");
		int k = 0;
		if (n == 3 && !strncmp(s, "all", 3)) {
			*mask |= (1u << PASS_COUNT) - 1;
			k = PASS_COUNT + 1;
		}
		while (k < PASS_COUNT && (strlen(passes[k].name) != n || strncmp(s, passes[k].name, n)))
			k++;
		if (k == PASS_COUNT)
			return ir_errorf(-EINVAL, "--dump-after %.*s: no such pass; the passes are %s, or all", (int)n,
					 s, PIPELINE_PASSES);
		if (k < PASS_COUNT)
			*mask |= 1u << k;
		s += n;
	} while (*s++);
	return 0;
}

static bool is_ir_text(const char *path)
{
	size_t n = strlen(path);
	return n >= 3 && !strcmp(path + n - 3, ".ir");
}

/* IR text m->text parsed and verified: a graph of its own each call. */
static struct ir_graph *parse_text(const struct pipeline_model *m)
{
	struct ir_graph *g = ir_parse(m->text);
	if (!g)
		ir_error_prefix("%s", m->path);
	else if (ir_verify(g) < 0) {
		ir_error_prefix("%s", m->path);
		ir_graph_free(g);
		g = NULL;
	}
	return g;
}

/* The whole of IR text file m->path into m->text. */
static int read_text(struct pipeline_model *m)
{
	FILE *f = fopen(m->path, "rb");
	if (!f)
		return ir_errorf(-ENOENT, "%s: cannot open: %s", m->path, strerror(errno));
	size_t len = 0;
	FILE *t = open_memstream(&m->text, &len);
	char buf[65536];
	size_t k;
	while (t && (k = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, k, t);
	fclose(f);
	if (!t || fclose(t)) {
		free(m->text);
		m->text = NULL;
		return ir_errorf(-ENOMEM, "%s: out of memory reading", m->path);
	}
	m->hash = XXH3_64bits(m->text, len);
	return 0;
}

int pipeline_model_open(struct pipeline_model *m, const char *path, const struct onnx_import_opts *imp, int64_t *batch)
{
	*m = (struct pipeline_model){ .path = path, .imp = imp };
	if (!is_ir_text(path)) {
		if (!(m->onnx = onnx_model_read(path)))
			return ir_error_code();
		m->hash = onnx_model_hash(m->onnx);
		int rc = onnx_model_batch_dim(m->onnx, imp, m->bname, sizeof m->bname, batch);
		if (rc < 0)
			pipeline_model_close(m);
		return rc;
	}
	/* IR text: its first input's first dimension */
	int rc = read_text(m);
	struct ir_graph *g = rc == 0 ? parse_text(m) : NULL;
	if (!g) {
		pipeline_model_close(m);
		return -EINVAL;
	}
	*batch = ir_graph_ninputs(g) && ir_graph_input(g, 0)->shape.rank ? ir_graph_input(g, 0)->shape.dims[0] : 1;
	ir_graph_free(g);
	return 0;
}

void pipeline_model_close(struct pipeline_model *m)
{
	onnx_model_free(m->onnx);
	free(m->text);
	m->onnx = NULL;
	m->text = NULL;
}

struct ir_graph *pipeline_load(void *ctx, int64_t b)
{
	const struct pipeline_model *m = ctx;
	if (m->text)
		return parse_text(m);
	return m->bname[0] ? onnx_model_import_batch(m->onnx, m->imp, m->bname, b)
			   : onnx_model_import(m->onnx, m->imp, NULL);
}

/* Names the model in the error unless the message already starts with it
 * (errors of the ONNX import do). */
static void prefix_model(const char *model)
{
	size_t n = strlen(model);
	if (strncmp(ir_error(), model, n) || ir_error()[n] != ':')
		ir_error_prefix("%s", model);
}

/* --train: what the step trains, said once before the search, as pcc
 * train says it (train_params_print); a step that cannot be built is left
 * to the search, which reports why in its context. */
static void train_summary(struct pipeline_model *m, struct onnx_import_opts *imp, int64_t batch,
			  const struct train_opts *to)
{
	bool updates = imp->updates;
	imp->updates = true; /* m->imp */
	struct ir_graph *g = pipeline_load(m, batch);
	imp->updates = updates;
	struct train_step ts;
	if (g && train_build(g, to, &ts) == 0)
		train_params_print(&ts, m->path, stderr);
	if (g)
		train_step_free(&ts);
	ir_error_clear();
}

/* ---- the runner ---------------------------------------------------------- */

static void pass_begin(struct pipeline *pl, enum pipeline_pass id)
{
	if (passes[id].phase)
		progress_phase(0, "%s", passes[id].phase);
}

/* Dump of pass id's result into f. */
static int pass_print(const struct pipeline *pl, enum pipeline_pass id, FILE *f)
{
	const struct plan *p = id == PASS_MEMORY ? compile_plan(pl->cc) : pl->plan;
	int rc = 0;
	switch (passes[id].kind) {
	case K_SEARCH:
		return inter_explain(pl->ip, f);
	case K_GRAPH:
		return ir_print(compile_graph(pl->cc), f);
	case K_TEMPLATE:
		return lower_print(compile_lowering(pl->cc), f);
	case K_PLAN:
		if (!p) /* -o FILE.txt: the search's plan is what was written */
			return inter_explain(pl->ip, f);
		if (id != PASS_MEMORY)
			return plan_print_summary(p, f);
		for (int s = 0; s < p->nstages && rc == 0; s++)
			rc = plan_print_device(p, p->stages[s].first_rank, f);
		return rc;
	}
	return 0;
}

static int pass_dump(struct pipeline *pl, enum pipeline_pass id)
{
	const char *dir = pl->in->dump_dir;
	if (!dir) {
		int rc = pass_print(pl, id, stdout);
		return rc == 0 && fflush(stdout) ? ir_errorf(-EIO, "cannot write the dump after %s", passes[id].name)
						 : rc;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/%02d-%s.%s", dir, pl->nrun, passes[id].name,
		 passes[id].kind == K_GRAPH ? "ir" : "txt");
	FILE *f = fopen(path, "w");
	if (!f)
		return ir_errorf(-EIO, "--dump-dir: cannot write %s: %s", path, strerror(errno));
	int rc = pass_print(pl, id, f);
	if (fclose(f) && rc == 0)
		rc = ir_errorf(-EIO, "--dump-dir: cannot write %s", path);
	return rc;
}

/* The search's plan holds together: its stages take the layers and their
 * nodes in order, each once, on meshes of their sub-meshes' devices, no
 * more devices than the cluster has (one chunk per device), and the batch
 * is its micro-batches. */
static int search_check(const struct inter_plan *p, const struct cost_cluster *c)
{
	int devices = 0;
	if (p->nstages < 1 || p->micro < 1 || p->micro_batch * p->micro != p->batch)
		return ir_errorf(-EINVAL, "%d stages, %d micro-batches of %lld for a batch of %lld", p->nstages,
				 p->micro, (long long)p->micro_batch, (long long)p->batch);
	for (int s = 0; s < p->nstages; s++) {
		const struct inter_stage *y = &p->stages[s];
		int layer = s ? p->stages[s - 1].layer_last + 1 : 0, node = s ? p->stages[s - 1].node_last : 0;
		if (y->layer_first != layer || y->layer_last < y->layer_first || y->node_first != node ||
		    y->node_last < y->node_first)
			return ir_errorf(-EINVAL,
					 "stage %d takes layers %d-%d and nodes %d..%d, after layer %d and node %d", s,
					 y->layer_first, y->layer_last, y->node_first, y->node_last - 1, layer - 1,
					 node - 1);
		if (y->n0 * y->n1 != y->rows * y->cols)
			return ir_errorf(-EINVAL, "stage %d: a %dx%d mesh on a %dx%d sub-mesh", s, y->n0, y->n1,
					 y->rows, y->cols);
		devices += y->rows * y->cols;
	}
	if (p->stages[p->nstages - 1].layer_last != p->nlayers - 1)
		return ir_errorf(-EINVAL, "the stages end at layer %d of %d", p->stages[p->nstages - 1].layer_last,
				 p->nlayers);
	if (p->v <= 1 && devices > c->ndevices)
		return ir_errorf(-EINVAL, "the stages take %d devices, the cluster has %d", devices, c->ndevices);
	return 0;
}

/* After pass id returned rc: its result checked, then dumped if asked. */
static int pass_end(struct pipeline *pl, enum pipeline_pass id, int rc)
{
	if (rc < 0)
		return rc;
	pl->nrun++;
	if (passes[id].kind == K_SEARCH && (rc = search_check(pl->ip, pl->in->cluster)) < 0)
		ir_error_prefix("after pass search, the plan fails its check (a compiler bug)");
	if (passes[id].kind == K_GRAPH && (rc = ir_verify(compile_graph(pl->cc))) < 0)
		ir_error_prefix("after pass %s, the graph fails its check (a compiler bug)", passes[id].name);
	const struct plan *p = id == PASS_MEMORY ? compile_plan(pl->cc) : pl->plan;
	if (passes[id].kind == K_PLAN && p && (rc = plan_verify(p)) < 0)
		ir_error_prefix(id == PASS_WRITE ? "%s: the plan read back fails its check"
						 : "after pass %s, the lowered plan fails its check (a compiler bug)",
				id == PASS_WRITE ? pl->in->out : passes[id].name);
	if (rc == 0 && pl->in && (pl->in->dump & 1u << id))
		rc = pass_dump(pl, id);
	return rc;
}

#define PASS(pl, id, call)                               \
	do {                                             \
		pass_begin(pl, id);                      \
		if ((rc = pass_end(pl, id, (call))) < 0) \
			goto out;                        \
	} while (0)

/* ---- the passes the pipeline itself holds ------------------------------- */

static int search(struct pipeline *pl, struct inter_plan *p)
{
	int rc = inter_pass(pl->in->cluster, pl->in->opts, p);
	if (rc < 0)
		prefix_model(pl->in->model);
	else
		pl->ip = p;
	return rc;
}

static int import(struct pipeline *pl, const struct compile_input *cin)
{
	struct ir_graph *g = cin->opts->load(cin->opts->ctx, cin->inter->micro_batch);
	if (!g)
		return -EINVAL;
	return compile_new(cin, g, &pl->cc);
}

static int codegen(struct pipeline *pl)
{
	const struct pipeline_input *in = pl->in;
	progress_phase(0, "codegen (%s)", in->cg_name);
	int rc = strcmp(in->cg_name, "none") ? in->codegen(pl->plan, in->cg) : 0;
	if (rc < 0)
		ir_error_prefix("%s", in->model);
	return rc;
}

/* plan.bin written, then freed before the copy read back (one plan in
 * memory at a time), which pass_end checks; or -o FILE.txt. */
static int write(struct pipeline *pl)
{
	const struct pipeline_input *in = pl->in;
	progress_phase(0, "writing %s", in->out);
	if (!pl->plan) {
		FILE *f = fopen(in->out, "w");
		if (!f)
			return ir_errorf(-errno, "%s: cannot write: %s", in->out, strerror(errno));
		int rc = inter_explain(pl->ip, f);
		if (fclose(f) != 0 && rc == 0)
			rc = ir_errorf(-EIO, "%s: write error", in->out);
		return rc;
	}
	int rc = plan_write_signed(pl->plan, in->out, in->key);
	plan_free(pl->plan);
	pl->plan = NULL;
	if (rc == 0 && !(pl->plan = plan_read_verified(in->out, in->key)))
		rc = -EIO;
	return rc;
}

/* ---- the pipeline -------------------------------------------------------- */

/* The chosen plan lowered: the model at its micro-batch size, the train
 * step, lowering, fusion and the memory plan (again while compile_refit
 * solves a stage again), then the plan's identity and limit. */
static int lower_passes(struct pipeline *pl, const struct compile_input *cin, struct plan **out)
{
	int rc;
	if (cin->refused)
		*cin->refused = -1;
	PASS(pl, PASS_IMPORT, import(pl, cin));
	if (cin->inter->train)
		PASS(pl, PASS_AUTODIFF, compile_autodiff(pl->cc));
	do {
		PASS(pl, PASS_LOWER, compile_lower_stages(pl->cc));
		PASS(pl, PASS_FUSION, compile_fuse(pl->cc));
		PASS(pl, PASS_MEMORY, compile_memory(pl->cc));
	} while ((rc = compile_refit(pl->cc)) > 0);
	if (rc == 0)
		rc = compile_finish(pl->cc, out);
out:
	compile_free(pl->cc);
	pl->cc = NULL;
	return rc;
}

int compile_lower(const struct compile_input *in, struct plan **out)
{
	struct pipeline pl = { 0 };
	*out = NULL;
	return lower_passes(&pl, in, out);
}

/* Lowering found stage s of plan p over the memory limit: the search
 * leaves it out from now on (o->refused). */
static int refuse(struct inter_opts *o, struct inter_refused **refused, const struct inter_plan *p, int s)
{
	struct inter_refused *nr = ir_realloc(*refused, sizeof *nr * (size_t)(o->nrefused + 1));
	if (!nr)
		return ir_errorf(-ENOMEM, "out of memory");
	const struct inter_stage *y = &p->stages[s];
	*refused = nr;
	nr[o->nrefused++] = (struct inter_refused){ p->micro_batch, y->layer_first, y->layer_last, y->rows,
						    y->cols,        y->n0,          y->n1,         y->inflight };
	o->refused = nr;
	progress_clear();
	char layers[INTER_LAYERS_STRLEN];
	fprintf(stderr, "pcc: %s; searching again without stage %d (%s on %dx%d)\n", ir_error(), s,
		inter_layers_str(y->layer_first, y->layer_last, layers), y->n0, y->n1);
	return 0;
}

/* The plan's peak once lowering's stage solves have stated each stage's
 * memory (compile_input.stated). */
static void plan_stated(struct inter_plan *p)
{
	p->mem_peak = 0;
	for (int s = 0; s < p->nstages; s++)
		if (p->stages[s].mem > p->mem_peak)
			p->mem_peak = p->stages[s].mem;
}

int pipeline_compile(const struct pipeline_input *in, struct pipeline_result *r)
{
	struct onnx_import_opts imp = *in->imp; /* updates: as each import needs */
	struct pipeline pl = { .in = in };
	struct inter_opts *o = in->opts;
	struct inter_refused *refused = NULL;
	size_t ol = in->out ? strlen(in->out) : 0;
	bool text = ol > 4 && !strcmp(in->out + ol - 4, ".txt"), lowered = in->out && !text;
	int rc, stage;
	memset(r, 0, sizeof *r);
	if ((rc = pipeline_model_open(&pl.m, in->model, &imp, &o->static_batch)) < 0)
		return rc;
	o->load = pipeline_load;
	o->ctx = &pl.m;
	if (in->dump_dir && mkdir(in->dump_dir, 0777) < 0 && errno != EEXIST) {
		pipeline_model_close(&pl.m);
		return ir_errorf(-EIO, "--dump-dir %s: cannot create: %s", in->dump_dir, strerror(errno));
	}
	if (in->train)
		train_summary(&pl.m, &imp, o->static_batch, in->train);
	o->cache = inter_cache_new(); /* NULL: every search solves its layers */
	for (;;) {
		imp.updates = false; /* the search weighs the model as given */
		PASS(&pl, PASS_SEARCH, search(&pl, &r->plan));
		if (!lowered)
			break;
		imp.updates = in->train != NULL; /* the train step updates BatchNorm's running statistics */
		struct compile_read read = { pl.m.hash, pl.m.onnx };
		struct compile_input cin = { in->model, in->cluster_spec, in->cluster, o,
					     &r->plan,  in->train,        &imp,        &stage,
					     &read,     r->plan.stages };
		if ((rc = lower_passes(&pl, &cin, &pl.plan)) == 0) {
			plan_stated(&r->plan);
			break;
		}
		prefix_model(in->model);
		/* lowering is the truth: the search leaves that stage out and runs again */
		if (rc != -ENOSPC || stage < 0 || o->nrefused >= MAX_REFUSED ||
		    (rc = refuse(o, &refused, &r->plan, stage)) < 0)
			goto out;
		inter_plan_free(&r->plan);
		pl.ip = NULL;
	}
	inter_cache_free(o->cache);
	o->cache = NULL;
	pipeline_model_close(&pl.m); /* the graphs are built */
	if (lowered)
		PASS(&pl, PASS_CODEGEN, codegen(&pl));
	if (in->out)
		PASS(&pl, PASS_WRITE, write(&pl));
	r->written = pl.plan;
	pl.plan = NULL;
out:
	progress_end();
	pipeline_model_close(&pl.m);
	inter_cache_free(o->cache);
	o->cache = NULL;
	o->refused = NULL;
	ir_free(refused);
	plan_free(pl.plan);
	if (rc < 0 && pl.ip)
		inter_plan_free(&r->plan);
	return rc;
}
