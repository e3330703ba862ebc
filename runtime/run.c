/*
 * run.c: pcc-run's program but its main (main.c), rt_main in libpccrt,
 * so that a benchmark's timing driver runs pcc-run unchanged around its
 * own step function.
 *
 * pcc-run: runs plan.bin on a mesh of ranks launched by MPI, CPU ranks or
 * one GPU per rank (--device; a plan for a GPU cluster runs on GPUs).
 *
 *   mpirun -np N pcc-run PLAN -i DIR | --data DIR | --tokens FILE [OPTIONS]
 *   (usage() below says all; pcc-run --help)
 *
 * Every rank reads and checks the plan, takes its device program, loads
 * its parameter slices from the model the plan was compiled from (or
 * --model), and runs. Errors while loading are agreed on by all ranks and
 * reported once, by the lowest rank that failed; an error while running
 * names the rank, step, micro-batch and instruction and stops the whole
 * job at once (a peer that dies or stops answering shows as a timeout).
 * A training step whose loss or gradient norm is not finite stops the run
 * (exit 1, nothing saved) unless the plan skips such steps itself
 * (--skip-nonfinite, or f16 loss scaling).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/ckpt_manifest.h"
#include "ir/lr.h"
#include "ir/steplog.h"
#include "kernels/kernels.h"
#include "onnxio/onnxio.h"
#include "runtime/rt.h"
#include "version.h"

struct opts {
	const char *plan, *model, *in_dir, *out_dir, *data, *save, *ckpt, *resume;
	const char *tokens, *token_type; /* --tokens FILE [--token-type u16|u32|i32] */
	const char *verify_key;          /* --verify-key FILE: the plan must carry its tag */
	long steps, log_every, ckpt_every;
	double timeout;
	bool reference;       /* --reference: the interpreter's kernels, not the plan's host code */
	long threads;         /* --threads N per rank; 0: the cores divided among the host's ranks */
	const char *device;   /* --device auto|cpu|gpu */
	bool tf32;            /* --tf32: f32 dots on tensor cores (GPU) */
	bool no_overlap;      /* --no-overlap: receives and collectives wait at their instruction */
	enum rt_graph graph;  /* --cuda-graph auto|on|off (rt.h) */
	struct rt_fill fill;  /* --init [SPEC] --seed N: parameters whose weights are absent */
	bool profile;         /* --profile: per-kernel times (profile.c) */
	long profile_rows;    /* --profile=N|all: the N slowest kernels (25), 0 all */
	const char *log_json; /* --log-json FILE: one JSON line a step (ir/steplog.h) */
	const char *trace;    /* --trace FILE.json: the measured timeline (trace.c) */
	const char *eval;     /* --eval-data DIR: held-out data, its loss every eval_every steps */
	long eval_every;      /* 0: after the last step only */
	const char *shuffle;  /* --shuffle SEED: data sets in a seeded order */
	unsigned long long shuffle_seed;
	rt_step_fn step; /* rt_step, or the caller's of rt_main */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mpirun -np N pcc-run PLAN [--model MODEL.onnx] -i DIR [-o OUTDIR]\n"
		"       mpirun -np N pcc-run PLAN --data DIR [--steps S] [--log-every K] [--log-json FILE] [--shuffle SEED]\n"
		"                 [--save-onnx OUT.onnx]\n"
		"                 [--checkpoint DIR [--checkpoint-every K]] [--resume DIR]\n"
		"                 [--eval-data DIR [--eval-every K]]\n"
		"       mpirun -np N pcc-run PLAN --tokens FILE [--token-type u16|u32|i32] (then as --data)\n"
		"       common options: [--timeout SECONDS] (a wait longer than this fails the job; default 300)\n"
		"                 [--threads N] (per rank) [--reference] (the reference kernels, not generated code)\n"
		"                 [--device auto|cpu|gpu] (auto: GPUs for a plan compiled for a GPU cluster)\n"
		"                 [--tf32] (GPU: f32 dots on tensor cores, TF32 precision)\n"
		"                 [--cuda-graph auto|on|off] (GPU: auto, the default, records a training\n"
		"                 run's second step (the first warms up) as a CUDA graph and replays it as\n"
		"                 each later step, one launch a step; on also records an inference's one\n"
		"                 step, which nothing replays; not where a kernel runs on the host, nor\n"
		"                 with --profile or --trace, which time each instruction: the run's\n"
		"                 summary says why; off issues every instruction of every step)\n"
		"                 [--verify-key KEY] (refuse a plan not signed with KEY: pcc --sign-key KEY)\n"
		"                 [--no-overlap] (CPU: every receive and collective waits at its\n"
		"                 instruction instead of overlapping compute; the same results)\n"
		"                 [--profile[=N|all]] (rank 0's N slowest kernels, 25 by default, or all:\n"
		"                 time, bytes moved and FLOP/s; on GPUs timed by CUDA events, which\n"
		"                 serializes nothing but adds two per kernel, and turns --cuda-graph off)\n"
		"                 [--trace FILE.json] (the measured timeline of every rank: kernels,\n"
		"                 collectives, sends and receives with arrows from each send to its\n"
		"                 receive, a Chrome trace-event file as pcc report --trace writes)\n"
		"                 [--init [SPEC]] [--seed N] (fill the parameters whose weights file is\n"
		"                 absent: SPEC is PATTERN=KIND,... tried in order, KIND zeros, ones,\n"
		"                 const:V, normal[:STD] or uniform:A, e.g. 'ln*.weight=ones,*=normal:0.02';\n"
		"                 unmatched: a name holding bias or beta 0, a vector 1, else N(0, 0.02);\n"
		"                 deterministic from --seed (default 0), the same on any mesh)\n");
	fprintf(f, "Inputs and data are in the ONNX backend-test layout: DIR/input_N.pb or\n"
		   "DIR/test_data_set_K/input_N.pb (or .npy); -i and --data also take FILE.npz or a DIR of\n"
		   "  .npz files (numpy.savez, an array per input by name or position), each one set; a set\n"
		   "holds one micro-batch or a whole step. Inputs\n"
		   "bound as constants by pcc --const are not read: N stays the input's place in the model.\n"
		   "--tokens FILE: a flat file of token ids (u16 by default, as nanoGPT's train.bin) for a\n"
		   "plan with a cross-entropy loss over ids [B,T]: step s, micro-batch m, row b reads window\n"
		   "k = (s * micro + m) * B + b, the T + 1 tokens from (k mod W) * T (W: windows in the file);\n"
		   "ids are its first T tokens, labels its last T.\n"
		   "--log-json FILE: rank 0 writes one JSON object per step and line (step, loss, grad_norm, lr,\n"
		   "skipped, step_ms, samples, tokens, their rates, the data sets fed, each rank's kernel_ms\n"
		   "and comm_ms). --shuffle SEED: the data sets in a random order, a new one each pass over\n"
		   "them, drawn from SEED and the pass alone (the same on every rank and after --resume).\n"
		   "--eval-data DIR: held-out data (as --data), its mean loss after every K steps (default:\n"
		   "after the last) as 'eval' lines and eval_loss in --log-json; forward only where the plan\n"
		   "splits forward from backward, never an update: the training is the same bit for bit.\n"
		   "--steps S is the run's total: a resumed run continues from the checkpoint's step to S.\n"
		   "A step whose loss or gradient norm is not finite stops the run (exit 1, nothing saved)\n"
		   "unless the plan skips such steps (pcc --train --skip-nonfinite, or f16 loss scaling).\n"
		   "--checkpoint DIR saves every K steps (default: at the end) into DIR/step-N/;\n"
		   "--resume DIR loads the one DIR/LATEST names (else the newest complete one that loads),\n"
		   "on this plan's mesh whatever mesh wrote it.\n");
}

static int parse_num(const char *opt, const char *s, double lo, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (*end || end == s || !(v >= lo))
		return ir_errorf(-EINVAL, "%s %s: expected a number of at least %g", opt, s, lo);
	*out = v;
	return 0;
}

/* The whole number of option opt (1 to RT_STEPS_MAX) into *out. */
static int parse_whole(const char *opt, const char *v, long *out)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (*end || end == v || errno || n < 1 || n > RT_STEPS_MAX)
		return ir_errorf(-EINVAL, "--%s %s: expected a whole number from 1 to %ld", opt, v, RT_STEPS_MAX);
	*out = n;
	return 0;
}

enum { PARSE_HELP = 1, PARSE_VERSION };

/* 0, PARSE_HELP, PARSE_VERSION, or -EINVAL naming the usage error. */
static int parse(int argc, char **argv, struct opts *o)
{
	enum {
		O_MODEL = 256,
		O_DATA,
		O_SAVE,
		O_CKPT,
		O_RESUME,
		O_DEVICE,
		O_TOKENS,
		O_TOKEN_TYPE,
		O_VERIFY_KEY,
		O_LOG_JSON,
		O_TRACE,
		O_EVAL_DATA,
		O_EVAL_EVERY,
		O_SHUFFLE,
		O_STEPS,
		O_LOG_EVERY,
		O_CKPT_EVERY,
		O_THREADS,
		O_TIMEOUT,
		O_SEED,
		O_INIT,
		O_REFERENCE,
		O_TF32,
		O_NO_OVERLAP,
		O_CUDA_GRAPH,
		O_PROFILE,
		O_SKIP_NONFINITE,
		O_VERSION
	};
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ "model", required_argument, NULL, O_MODEL },
		{ "data", required_argument, NULL, O_DATA },
		{ "save-onnx", required_argument, NULL, O_SAVE },
		{ "checkpoint", required_argument, NULL, O_CKPT },
		{ "resume", required_argument, NULL, O_RESUME },
		{ "device", required_argument, NULL, O_DEVICE },
		{ "tokens", required_argument, NULL, O_TOKENS },
		{ "token-type", required_argument, NULL, O_TOKEN_TYPE },
		{ "verify-key", required_argument, NULL, O_VERIFY_KEY },
		{ "log-json", required_argument, NULL, O_LOG_JSON },
		{ "trace", required_argument, NULL, O_TRACE },
		{ "eval-data", required_argument, NULL, O_EVAL_DATA },
		{ "eval-every", required_argument, NULL, O_EVAL_EVERY },
		{ "shuffle", required_argument, NULL, O_SHUFFLE },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "log-every", required_argument, NULL, O_LOG_EVERY },
		{ "checkpoint-every", required_argument, NULL, O_CKPT_EVERY },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "seed", required_argument, NULL, O_SEED },
		{ "init", optional_argument, NULL, O_INIT },
		{ "reference", no_argument, NULL, O_REFERENCE },
		{ "tf32", no_argument, NULL, O_TF32 },
		{ "no-overlap", no_argument, NULL, O_NO_OVERLAP },
		{ "cuda-graph", required_argument, NULL, O_CUDA_GRAPH },
		{ "profile", optional_argument, NULL, O_PROFILE },
		{ "skip-nonfinite", no_argument, NULL, O_SKIP_NONFINITE },
		{ 0 },
	};
	memset(o, 0, sizeof *o);
	o->steps = 1;
	o->timeout = 300;
	const char *init = NULL, *seed = NULL;
	bool has_init = false;
	int c, li = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hi:o:", lo, &li)) != -1) {
		const char *v = optarg;
		int rc = 0;
		switch (c) {
		case 'h':
			return PARSE_HELP;
		case O_VERSION:
			return PARSE_VERSION;
		case 'i':
			o->in_dir = v;
			break;
		case 'o':
			o->out_dir = v;
			break;
		case O_MODEL:
			o->model = v;
			break;
		case O_DATA:
			o->data = v;
			break;
		case O_SAVE:
			o->save = v;
			break;
		case O_CKPT:
			o->ckpt = v;
			break;
		case O_RESUME:
			o->resume = v;
			break;
		case O_DEVICE:
			o->device = v;
			break;
		case O_TOKENS:
			o->tokens = v;
			break;
		case O_TOKEN_TYPE:
			o->token_type = v;
			break;
		case O_VERIFY_KEY:
			o->verify_key = v;
			break;
		case O_LOG_JSON:
			o->log_json = v;
			break;
		case O_TRACE:
			o->trace = v;
			break;
		case O_EVAL_DATA:
			o->eval = v;
			break;
		case O_EVAL_EVERY:
			rc = parse_whole("eval-every", v, &o->eval_every);
			break;
		case O_SHUFFLE:
			o->shuffle = v;
			break;
		case O_STEPS:
			rc = parse_whole("steps", v, &o->steps);
			break;
		case O_LOG_EVERY:
			rc = parse_whole("log-every", v, &o->log_every);
			break;
		case O_CKPT_EVERY:
			rc = parse_whole("checkpoint-every", v, &o->ckpt_every);
			break;
		case O_THREADS:
			rc = parse_whole("threads", v, &o->threads);
			break;
		case O_TIMEOUT:
			rc = parse_num("--timeout", v, 0.001, &o->timeout);
			break;
		case O_SEED:
			seed = v;
			break;
		case O_INIT:
			/* the spec is optional: --init=SPEC, or the next word when
			 * it holds a rule */
			has_init = true;
			init = v;
			if (!v && optind < argc && argv[optind][0] != '-' && strchr(argv[optind], '='))
				init = argv[optind++];
			break;
		case O_REFERENCE:
			o->reference = true;
			break;
		case O_TF32:
			o->tf32 = true;
			break;
		case O_NO_OVERLAP:
			o->no_overlap = true;
			break;
		case O_CUDA_GRAPH:
			if (strcmp(v, "auto") && strcmp(v, "on") && strcmp(v, "off"))
				rc = ir_errorf(-EINVAL, "--cuda-graph %s: expected auto, on or off", v);
			o->graph = !strcmp(v, "on") ? RT_GRAPH_ON : !strcmp(v, "off") ? RT_GRAPH_OFF : RT_GRAPH_AUTO;
			break;
		case O_PROFILE:
			o->profile = true;
			o->profile_rows = v && !strcmp(v, "all") ? 0 : 25;
			if (v && strcmp(v, "all") && parse_whole("profile", v, &o->profile_rows) < 0)
				rc = ir_errorf(-EINVAL,
					       "--profile=%s: expected all or a number of kernels from 1 to %ld", v,
					       RT_STEPS_MAX);
			break;
		case O_SKIP_NONFINITE:
			return ir_errorf(-EINVAL,
					 "--skip-nonfinite is an option of the train step: compile the plan "
					 "with pcc --train --skip-nonfinite, and its steps skip those updates");
		default:
			return ir_getopt_error(c, argv);
		}
		if (rc < 0)
			return rc;
	}
	if (optind < argc)
		o->plan = argv[optind];
	if (optind + 1 < argc)
		return ir_errorf(-EINVAL, "unexpected argument '%s'", argv[optind + 1]);
	if (!o->plan)
		return ir_errorf(-EINVAL, "no plan given");
	unsigned long long sv = 0;
	if (seed) {
		char *end;
		errno = 0;
		sv = strtoull(seed, &end, 10);
		if (*end || end == seed || errno || seed[0] == '-')
			return ir_errorf(-EINVAL, "--seed %s: expected a whole number of at least 0", seed);
		if (!has_init)
			return ir_errorf(-EINVAL, "--seed needs --init (it seeds the values --init fills)");
	}
	if (has_init) {
		int rc = rt_fill_parse(&o->fill, init, sv);
		if (rc < 0)
			return rc;
	}
	if (!o->in_dir && !o->data && !o->tokens)
		return ir_errorf(-EINVAL, "%s: give -i DIR (inference) or --data DIR or --tokens FILE (training)",
				 o->plan);
	if (!!o->in_dir + !!o->data + !!o->tokens > 1)
		return ir_errorf(-EINVAL, "%s exclude each other",
				 o->tokens && o->data ? "--data and --tokens"
				 : o->tokens          ? "-i and --tokens"
						      : "-i and --data");
	if (o->token_type && !o->tokens)
		return ir_errorf(-EINVAL, "--token-type needs --tokens FILE");
	if (o->shuffle) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(o->shuffle, &end, 10);
		if (*end || end == o->shuffle || errno || o->shuffle[0] == '-')
			return ir_errorf(-EINVAL, "--shuffle %s: expected a whole number of at least 0 (the seed)",
					 o->shuffle);
		o->shuffle_seed = v;
		if (!o->data)
			return ir_errorf(-EINVAL, "--shuffle reorders the data sets of --data DIR");
	}
	if (o->eval_every && !o->eval)
		return ir_errorf(-EINVAL, "--eval-every needs --eval-data DIR");
	if (o->eval && o->in_dir)
		return ir_errorf(-EINVAL, "--eval-data is for training runs (--data DIR or --tokens FILE)");
	if (o->ckpt_every && !o->ckpt)
		return ir_errorf(-EINVAL, "--checkpoint-every needs --checkpoint DIR");
	if ((o->ckpt || o->resume) && o->in_dir)
		return ir_errorf(-EINVAL, "checkpoints are for training runs (--data DIR or --tokens FILE)");
	if (o->device && strcmp(o->device, "auto") && strcmp(o->device, "cpu") && strcmp(o->device, "gpu"))
		return ir_errorf(-EINVAL, "--device %s: expected auto, cpu or gpu", o->device);
	return 0;
}

/* Whether plan p runs on GPUs: --device gpu, or auto and the plan is for a
 * GPU cluster (it carries PTX and was not compiled for CPU ranks). */
static int on_gpu(const struct opts *o, const struct plan *p, bool *gpu)
{
	bool cpu_cluster = p->cluster && !strncmp(p->cluster, "cpu", 3);
	*gpu = o->device ? !strcmp(o->device, "gpu") : false;
	if (!o->device || !strcmp(o->device, "auto"))
		*gpu = p->nptx > 0 && !cpu_cluster;
	if (*gpu && !p->nptx)
		return ir_errorf(-EINVAL, "%s has no GPU code: compile it for a GPU cluster (or with --codegen ptx)",
				 o->plan);
	if (*gpu && !rt_device_cuda())
		return ir_errorf(-ENODEV,
				 "%s is for GPUs (cluster %s), but this pcc-run was built without CUDA (run it "
				 "with --device cpu, or rebuild with the CUDA toolkit)",
				 o->plan, p->cluster ? p->cluster : "not named");
	return 0;
}

/* All ranks learn whether every one succeeded; the lowest rank that failed
 * prints its message. 0, or -1 when any failed. */
static int agree(struct rt_comm *c, int rc)
{
	int v = rc < 0 ? c->rank : c->size;
	if (c->ops->ctl_min(c, &v) < 0) {
		fprintf(stderr, "pcc-run: rank %d: %s\n", c->rank, ir_error());
		c->ops->abort(c, 1);
	}
	if (v == c->size)
		return 0;
	if (v == c->rank)
		fprintf(stderr, "pcc-run: rank %d: %s\n", c->rank, ir_error());
	return -1;
}

/* An error while running: named, and the whole job stops now. */
static _Noreturn void die(struct rt_comm *c, long step)
{
	fprintf(stderr, "pcc-run: rank %d: step %ld: %s\n", c->rank, step + 1, ir_error());
	c->ops->abort(c, 1);
	exit(1);
}

/* Whether a checkpoint is saved after step s (1-based) of the run. */
static bool ckpt_after(const struct opts *o, long s)
{
	return o->ckpt && ((o->ckpt_every && s % o->ckpt_every == 0) || s == o->steps);
}

/* PCC_RUN_FAULT=0:ckpt:crash[:STEP]: rank 0 dies as it puts the
 * checkpoint after STEP in place (ckpt.c); the other kinds: rt_fault_parse.
 * 1: not this kind. */
static int fault_crash(struct rt *r, const char *spec, long steps)
{
	const char *k = spec ? strstr(spec, ":ckpt:crash") : NULL, *s = k ? k + strlen(":ckpt:crash") : NULL;
	char *end;
	long rank, step = 1;
	if (!k)
		return 1;
	errno = 0;
	rank = strtol(spec, &end, 10);
	bool ok = end == k && spec[0] >= '0' && spec[0] <= '9' && !errno;
	if (ok && *s) {
		ok = s[0] == ':' && s[1] >= '0' && s[1] <= '9';
		step = ok ? strtol(s + 1, &end, 10) : 0;
		ok = ok && !*end && !errno && step >= 1;
	}
	if (!ok)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: expected 0:ckpt:crash[:STEP]", spec);
	if (rank != 0)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: only rank 0 puts a checkpoint in place", spec);
	if (step > steps)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: step %ld is past the run's last step (%ld)", spec, step,
				 steps);
	r->fault = (struct rt_fault){ 0, -1, step - 1, 'c' };
	return 0;
}

/* PCC_RUN_FAULT, refused where it could never fire. */
static int fault_parse(struct rt *r, const struct opts *o)
{
	const char *spec = getenv("PCC_RUN_FAULT");
	long steps = r->p->train ? o->steps : 1;
	int rc = fault_crash(r, spec, steps);
	if (rc == 1)
		rc = rt_fault_parse(r, spec, steps);
	if (rc == 0 && (r->fault.kind == 'n' || r->fault.kind == 'c') && !ckpt_after(o, r->fault.step + 1))
		rc = ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: no checkpoint is saved after step %ld%s", spec,
			       r->fault.step + 1, o->ckpt ? " (see --checkpoint-every)" : " (no --checkpoint)");
	return rc;
}

/* The rules of --init as given, for the log line. */
static const char *init_rules(const struct rt_fill *f)
{
	static char buf[512];
	size_t at = 0;
	for (int i = 0; i < f->n && at < sizeof buf; i++) {
		const struct rt_fill_rule *u = &f->rule[i];
		int w = snprintf(buf + at, sizeof buf - at, "%s%s=%s", i ? "," : "", u->pattern,
				 rt_fill_kind_name(u->kind));
		if (w > 0)
			at += (size_t)w;
		if (at < sizeof buf &&
		    (u->kind == RT_FILL_CONST || u->kind == RT_FILL_NORMAL || u->kind == RT_FILL_UNIFORM) &&
		    (w = snprintf(buf + at, sizeof buf - at, ":%g", u->value)) > 0)
			at += (size_t)w;
	}
	return buf;
}

/* The processes the launcher started, as it tells each (Open MPI's
 * mpirun, MPICH's mpiexec, srun); 0: not told. */
static long launched(void)
{
	const char *vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS" };
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		char *end;
		long n = v && *v ? strtol(v, &end, 10) : 0;
		if (v && *v && !*end && n > 0)
			return n;
	}
	return 0;
}

/* The world-size refusal (rc, its message set) of a world of one where
 * the launcher started more: each process came up alone, as MPI does
 * when the launcher is another MPI's (or srun was given no PMI). */
static int foreign_launcher(const struct rt_comm *c, int rc)
{
	long n = launched();
	if (n <= 1)
		return rc;
	char why[512];
	snprintf(why, sizeof why, "%s", ir_error());
	return ir_errorf(rc,
			 "%s: the launcher started %ld processes but each is alone in its MPI world; this program is "
			 "linked with %s, the launcher is another MPI's (Open MPI's mpirun runs pcc-run, MPICH's "
			 "mpiexec pcc-run-mpich; srun needs --mpi=pmix or pmi2)",
			 why, n, c->mpi);
}

static int load(struct rt *r, const struct opts *o, struct plan **pp, struct rt_comm *c)
{
	/* a key for signed plans (ir/plan_sign.c): refused ones are never decoded */
	struct plan_key *key = o->verify_key ? ir_malloc(sizeof *key) : NULL;
	int rc = o->verify_key && !key ? ir_errorf(-ENOMEM, "out of memory") : 0;
	if (rc == 0 && key)
		rc = plan_key_read(o->verify_key, key);
	struct plan *p = rc == 0 ? plan_read_verified(o->plan, key) : NULL;
	if (key) {
		plan_key_wipe(key);
		ir_free(key);
	}
	rc = rc < 0 ? rc : p ? 0 : -EINVAL;
	if (rc == 0 && (rc = plan_verify(p)) < 0)
		ir_error_prefix("%s", o->plan);
	if (rc == 0 && (rc = plan_check_mesh(p, c->size)) < 0 && c->size == 1)
		rc = foreign_launcher(c, rc);
	if (rc == 0 && !p->train && !o->in_dir)
		rc = ir_errorf(-EINVAL, "%s is an inference plan: give -i DIR, not %s", o->plan,
			       o->data ? "--data" : "--tokens");
	if (rc == 0 && p->train && o->in_dir)
		rc = ir_errorf(-EINVAL, "%s is a training plan: give --data DIR or --tokens FILE, not -i", o->plan);
	/* the plan's model, resolved once (relative to the plan's directory
	 * where the plan names it so): p->model from here on */
	char *named = NULL;
	bool relative = rc == 0 && !o->model && p->model && p->model[0] != '/';
	if (rc == 0 && !o->model && (rc = plan_model_path(p, o->plan, &named)) == 0 && named) {
		ir_free(p->model);
		p->model = named;
	}
	const char *model = o->model ? o->model : p ? p->model : NULL;
	if (rc == 0 && !model)
		rc = ir_errorf(-EINVAL, "%s does not name its model: give --model MODEL.onnx", o->plan);
	uint64_t h = 0;
	if (rc == 0 && c->rank == 0 && (rc = plan_hash_file(model, &h)) < 0 && !o->model) {
		char why[1024];
		snprintf(why, sizeof why, "%s", ir_error());
		ir_errorf(rc, "%s (the model %s was compiled from, %s; give --model MODEL.onnx)", why, o->plan,
			  relative ? "named relative to the plan's directory" : "named by its absolute path");
	} else if (rc == 0 && c->rank == 0 && h != p->model_hash) {
		rc = ir_errorf(-EINVAL, "%s is not the model %s was compiled from (its contents differ)", model,
			       o->plan);
	}
	bool gpu = false;
	if (rc == 0)
		rc = on_gpu(o, p, &gpu);
	*pp = p;
	if (agree(c, rc) < 0)
		return -1;
	/* every rank has the plan now: communicators, arena (on the GPU too),
	 * weights */
	rc = c->ops->setup(c, p);
	if (rc == 0)
		rc = rt_init(r, p, c, gpu);
	if (rc == 0 && gpu)
		r->dev = rt_device_cuda();
	if (rc == 0 && (rc = r->dev->open(r, o->tf32)) < 0 && gpu) {
		char why[1024];
		snprintf(why, sizeof why, "%s", ir_error());
		ir_errorf(rc, "%s is for GPUs (cluster %s): %s (pcc-run --device cpu runs it on CPU ranks)", o->plan,
			  p->cluster ? p->cluster : "?", why);
	}
	if (agree(c, rc) < 0 || agree(c, r->dev->connect(r)) < 0)
		return -1;
	if (rc == 0)
		rc = rt_kernels_load(r, o->reference, (int)o->threads);
	if (rc == 0)
		rc = fault_parse(r, o);
	int filled = 0;
	if (rc == 0)
		rc = rt_load_params(r, model, &o->fill, &filled);
	if (rc == 0)
		rc = rt_state_sync(r, true);
	if (rc == 0 && o->profile)
		rc = rt_profile_start(r);
	if (agree(c, rc) < 0)
		return -1;
	r->no_overlap = o->no_overlap;
	r->graph = o->graph;
	if (o->fill.on && c->rank == 0)
		printf("pcc-run: --init: %d parameters on rank 0 filled (their weights are absent from %s), seed %llu%s%s\n",
		       filled, model, (unsigned long long)o->fill.seed, o->fill.n ? ", rules " : ", default rules",
		       o->fill.n ? init_rules(&o->fill) : "");
	if (gpu && c->rank == 0)
		printf("pcc-run: %d ranks on GPUs (NCCL)%s\n", c->size, o->tf32 ? ", f32 dots in TF32" : "");
	return 0;
}

/* Concatenates micro-batch outputs along dimension 0 (one step's outputs)
 * and writes OUTDIR/output_N.pb. */
static int write_outputs(const struct plan *p, int micro, struct ir_tensor *out, const char *dir)
{
	char path[4096];
	int rc = 0;
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return ir_errorf(-errno, "%s: cannot create: %s", dir, strerror(errno));
	for (int o = 0; o < p->noutputs && rc == 0; o++) {
		struct ir_tensor all = out[o];
		bool joined = micro > 1 && !p->outputs[o].per_step && all.shape.rank > 0;
		if (joined) {
			all.shape.dims[0] *= micro;
			if ((rc = ir_tensor_alloc(&all, all.dtype, &all.shape)) < 0)
				break;
			for (int m = 0; m < micro; m++)
				memcpy((char *)all.data + (size_t)m * ir_tensor_bytes(&out[o]),
				       out[(size_t)m * (size_t)p->noutputs + (size_t)o].data, ir_tensor_bytes(&out[o]));
		} else if (!p->outputs[o].per_step) {
			all = out[o];
		} else {
			all = out[(size_t)(micro - 1) * (size_t)p->noutputs + (size_t)o];
		}
		snprintf(path, sizeof path, "%s/output_%d.pb", dir, o);
		rc = onnx_tensor_write(path, &all, p->outputs[o].name);
		if (joined)
			ir_tensor_free(&all);
	}
	return rc;
}

static void free_outputs(struct ir_tensor *out, int n)
{
	for (int i = 0; out && i < n; i++)
		ir_tensor_free(&out[i]);
}

/* "; overlap: 12 of 12 receives posted early, 3 of 5 collectives
 * overlapped" (started before their instruction or waited for after it),
 * summed over the ranks (collective: each sends rank 0 its counts;
 * a rank that does not answer is an error, as in a step). */
/* On a device with its own memory: which of rank 0's kernels ran on the
 * host (they cost two copies and a synchronization each). */
static void fallback_line(const struct rt *r)
{
	char b[1024];
	if (r->dev->fallback_report(r, b, sizeof b) > 0)
		printf("pcc-run: rank 0: %s\n", b);
}

/* --cuda-graph: how each rank's steps ran, from rank 0: one line when
 * every rank's are alike, else one a rank (none for --cuda-graph=off).
 * Collective. */
static int graph_lines(const struct rt *r)
{
	struct gl {
		long captured, replays;
		char why[320];
	} mine = { 0 }, *all = NULL;
	const char *why = NULL;
	int size = r->c->size, rc = 0;
	if (!r->dev->graph_report)
		return 0;
	r->dev->graph_report(r, &mine.captured, &mine.replays, &why);
	snprintf(mine.why, sizeof mine.why, "%s", why ? why : "");
	if (r->c->rank != 0)
		return r->c->ops->ctl_send(r->c, &mine, sizeof mine, 0);
	if (!(all = ir_calloc((size_t)size, sizeof *all)))
		return ir_errorf(-ENOMEM, "out of memory");
	all[0] = mine;
	for (int q = 1; q < size && rc == 0; q++)
		rc = r->c->ops->ctl_recv(r->c, &all[q], sizeof all[q], q);
	bool alike = true;
	for (int q = 1; q < size && rc == 0; q++)
		alike = alike && all[q].captured == mine.captured && all[q].replays == mine.replays &&
			!strcmp(all[q].why, mine.why);
	for (int q = 0; q < (alike ? 1 : size) && rc == 0; q++) {
		char who[32];
		snprintf(who, sizeof who, alike && size > 1 ? "every rank" : "rank %d", q);
		if (all[q].captured)
			printf("pcc-run: %s: CUDA graph: step %ld recorded, replayed as %ld later step%s\n", who,
			       all[q].captured, all[q].replays, all[q].replays == 1 ? "" : "s");
		else if (all[q].why[0])
			printf("pcc-run: %s: no CUDA graph: %s\n", who, all[q].why);
	}
	ir_free(all);
	return rc;
}

static int overlap_stats(const struct rt *r, char *buf, size_t n)
{
	long v[4] = { r->n_early, r->n_recv, r->n_late, r->n_coll }, w[4];
	buf[0] = 0;
	for (int q = 1; q < r->c->size; q++) {
		int rc = r->c->rank == q   ? r->c->ops->ctl_send(r->c, v, sizeof v, 0)
			 : r->c->rank == 0 ? r->c->ops->ctl_recv(r->c, w, sizeof w, q)
					   : 0;
		if (rc < 0)
			return rc;
		for (int k = 0; k < 4 && r->c->rank == 0; k++)
			v[k] += w[k];
	}
	snprintf(buf, n, "; overlap%s: %ld of %ld receives posted early, %ld of %ld collectives overlapped",
		 r->ov ? "" : " off", v[0], v[1], v[2], v[3]);
	return 0;
}

/* --trace: rank 0 opens the file (a bad path stops the run before its
 * first step), then learns the ranks' clocks. 0, or -1 said already. */
static int trace_start(struct rt *r, const struct opts *o)
{
	if (!o->trace)
		return 0;
	if (agree(r->c, rt_trace_open(r, o->trace)) < 0)
		return -1;
	if (rt_trace_clock(r) < 0)
		die(r->c, r->step);
	return 0;
}

/* --trace: the file written by rank 0 from every rank's events. */
static int trace_end(struct rt *r, const struct opts *o)
{
	long events = 0;
	if (!o->trace)
		return 0;
	int rc = agree(r->c, rt_trace_write(r, o->plan, &events));
	if (rc == 0 && r->c->rank == 0)
		printf("pcc-run: wrote the measured timeline to %s (%ld events)\n", o->trace, events);
	return rc;
}

static int infer(struct rt *r, const struct opts *o)
{
	const struct plan *p = r->p;
	const struct ir_tensor *in;
	struct ir_tensor *out = ir_calloc((size_t)r->micro * (size_t)p->noutputs + 1, sizeof *out);
	struct rt_data *d = rt_data_open(o->in_dir, p);
	int rc = out && d ? 0 : -EINVAL;
	if (agree(r->c, rc) < 0 || (rc = trace_start(r, o)) < 0)
		goto done;
	double t0 = ir_now();
	if ((rc = rt_data_next(d, &in)) < 0 || (rc = o->step(r, in)) < 0)
		die(r->c, 0);
	double t = ir_now() - t0;
	if (r->trace)
		rt_trace_step(r, t0, t0 + t);
	if ((rc = rt_gather_outputs(r, out)) < 0)
		die(r->c, 0);
	if ((rc = agree(r->c, 0)) < 0) /* every rank got through its program */
		goto done;
	char ov[160];
	if (overlap_stats(r, ov, sizeof ov) < 0)
		die(r->c, 0);
	if (r->c->rank == 0) {
		if (o->out_dir)
			rc = write_outputs(p, r->micro, out, o->out_dir);
		if (rc == 0)
			printf("pcc-run: %d ranks ran %s in %.3f s%s%s (%s)\n", r->c->size, o->plan, t,
			       o->out_dir ? ", outputs in " : "", o->out_dir ? o->out_dir : "", ov + 2);
		fallback_line(r);
	}
	if (graph_lines(r) < 0)
		die(r->c, 0);
	if (r->c->rank == 0 && o->profile)
		rt_profile_print(r, 1, o->profile_rows, stdout);
	rc = agree(r->c, rc);
	if (rc == 0)
		rc = trace_end(r, o);
done:
	free_outputs(out, r->micro * p->noutputs);
	ir_free(out);
	rt_data_close(d);
	return rc;
}

/* Rank 0 converts the trained parameters to the initializers' dtypes and
 * writes the model with them. */
static int save_onnx(struct rt *r, const char *model, const char *dst)
{
	const struct plan *p = r->p;
	struct ir_tensor *w = ir_calloc((size_t)p->nparams + 1, sizeof *w);
	const char **names = ir_calloc((size_t)p->nparams + 1, sizeof *names);
	int rc = w && names ? 0 : ir_errorf(-ENOMEM, "out of memory");
	if (rc == 0)
		rc = rt_state_sync(r, false);
	if (rc == 0)
		rc = rt_gather_params(r, w);
	/* every rank finished every step before anything is written */
	if (agree(r->c, rc) < 0)
		rc = -EIO;
	struct onnx_weights *ow = rc == 0 && r->c->rank == 0 ? onnx_weights_open(model) : NULL;
	if (rc == 0 && r->c->rank == 0 && !ow)
		rc = -EINVAL;
	for (int i = 0; i < p->nparams && rc == 0 && ow; i++) {
		enum ir_dtype dt;
		struct ir_shape s;
		names[i] = p->params[i].name;
		if ((rc = onnx_weights_type(ow, names[i], &dt, &s)) < 0 || dt == w[i].dtype)
			continue;
		struct ir_tensor t;
		if ((rc = ir_tensor_alloc(&t, dt, &s)) < 0)
			break;
		for (int64_t e = 0; e < ir_shape_numel(&s); e++)
			ir_tensor_set_f64(&t, e, ir_tensor_get_f64(&w[i], e));
		ir_tensor_free(&w[i]);
		w[i] = t;
	}
	if (rc == 0 && ow)
		rc = onnx_save_params(model, dst, p->nparams, names, w);
	onnx_weights_close(ow);
	free_outputs(w, p->nparams);
	ir_free(w);
	ir_free(names);
	return rc;
}

/* The step's loss (mean over micro-batches) and gradient norm, on rank 0. */
static void step_loss(const struct rt *r, const struct ir_tensor *out, double *loss, double *norm)
{
	const struct plan *p = r->p;
	*loss = *norm = 0;
	for (int m = 0; m < r->micro; m++)
		*loss += ir_tensor_get_f64(&out[(size_t)m * (size_t)p->noutputs], 0) / r->micro;
	if (p->noutputs > 1 && p->outputs[1].per_step)
		*norm = ir_tensor_get_f64(&out[(size_t)(r->micro - 1) * (size_t)p->noutputs + 1], 0);
}

/* Whether the plan's step leaves parameters alone when the gradient norm
 * is not finite: f16 loss scaling (its state "train.loss_scale") or a
 * step compiled with --skip-nonfinite (train_opts_str's word). */
static bool loss_scaled(const struct plan *p)
{
	for (int i = 0; i < p->nstate; i++)
		if (p->state[i].name && !strcmp(p->state[i].name, "train.loss_scale"))
			return true;
	return false;
}

static bool skips_nonfinite(const struct plan *p)
{
	return loss_scaled(p) || (p->train_config && strstr(p->train_config, " skip_nonfinite"));
}

/* Rank 0: 0, or -ERANGE when step s's loss or gradient norm is not finite
 * and the plan does not skip such steps (as pcc train stops). */
static int check_finite(const struct rt *r, long s, const struct ir_tensor *out)
{
	double loss, norm;
	step_loss(r, out, &loss, &norm);
	if ((isfinite(loss) && isfinite(norm)) || skips_nonfinite(r->p))
		return 0;
	double x = isfinite(loss) ? norm : loss;
	return ir_errorf(-ERANGE, "step %ld: the %s is %s; stopping, nothing saved", s + 1,
			 isfinite(loss) ? "gradient norm" : "loss",
			 isnan(x) ? "nan"
			 : x > 0  ? "inf"
				  : "-inf");
}

/* Samples and token ids a step reads (0: the model reads no token ids). */
static void step_size(const struct rt *r, double *samples, double *tokens)
{
	const struct plan *p = r->p;
	const struct plan_tensor *in = p->ninputs ? &p->inputs[0] : NULL;
	*samples = (double)r->micro * (in && in->shape.rank ? (double)in->shape.dims[0] : 1);
	*tokens = in && in->shape.rank >= 2 && (in->dtype == IR_I64 || in->dtype == IR_I32)
			  ? (double)r->micro * (double)ir_shape_numel(&in->shape)
			  : 0;
}

/* --log-json: rank 0 writes step s's line, with every rank's kernel and
 * communication time of the step (each rank's since its last line, sent
 * to rank 0; every rank calls this at every step) and the evaluation's
 * loss when one followed the step (eval_loss; NULL: none). */
static int json_step(struct rt *r, long s, const struct opts *o, const struct ir_tensor *out, double t,
		     const struct rt_data *data, const struct ir_lr *lr, struct ir_steplog *log, double *last,
		     const double *eval_loss)
{
	struct rt_comm *c = r->c;
	double mine[2] = { r->t_kernel - last[0], r->t_comm - last[1] };
	last[0] = r->t_kernel;
	last[1] = r->t_comm;
	if (c->rank != 0)
		return c->ops->ctl_send(c, mine, sizeof mine, 0);
	double *k = ir_calloc(2 * (size_t)c->size, sizeof *k), *m = k ? k + c->size : NULL;
	int rc = k ? 0 : ir_errorf(-ENOMEM, "out of memory logging a step");
	for (int q = 0; q < c->size && rc == 0; q++) {
		double v[2] = { mine[0], mine[1] };
		if (q > 0)
			rc = c->ops->ctl_recv(c, v, sizeof v, q);
		k[q] = v[0];
		m[q] = v[1];
	}
	if (rc == 0) {
		double loss, norm, samples, tokens;
		int e_nsets = 0;
		const int *fed = rt_data_sets(data, &e_nsets);
		step_loss(r, out, &loss, &norm);
		step_size(r, &samples, &tokens);
		struct ir_steprec e = { .step = s + 1,
					.steps = o->steps,
					.loss = loss,
					.grad_norm = norm,
					.lr = lr ? ir_lr_at(lr, s) : NAN,
					.skipped = !isfinite(norm),
					.seconds = t,
					.samples = samples,
					.tokens = tokens,
					.sets = fed,
					.nsets = e_nsets,
					.nranks = c->size,
					.kernel_s = k,
					.comm_s = m,
					.evaluated = eval_loss != NULL,
					.eval_loss = eval_loss ? *eval_loss : NAN };
		rc = ir_steplog_write(log, &e);
	}
	ir_free(k);
	return rc;
}

static void log_step(const struct rt *r, long s, const struct opts *o, const struct ir_tensor *out, double t)
{
	const struct plan *p = r->p;
	double loss, norm;
	step_loss(r, out, &loss, &norm);
	const char *skipped = isfinite(norm)   ? ""
			      : loss_scaled(p) ? "  (f16 gradients overflowed: step skipped, loss scale halved)"
					       : "  (non-finite gradients: step skipped)";
	loss = isnan(loss) ? NAN : loss; /* "nan", whatever its sign bit */
	norm = isnan(norm) ? NAN : norm;
	double samples, tokens;
	step_size(r, &samples, &tokens);
	printf("step %ld/%ld  loss %.6f  grad_norm %.4g  %.4g s  %.4g samples/s%s\n", s + 1, o->steps, loss, norm, t,
	       samples / (t > 0 ? t : 1e-9), skipped);
	fflush(stdout);
}

/* The checkpoint after step s, or the run stops here: the rank whose write
 * failed says why (rt_ckpt_save agreed on it), every rank leaves cleanly. */
static int checkpoint(struct rt *r, const struct opts *o, long s)
{
	if (rt_state_sync(r, false) < 0)
		die(r->c, s);
	int rc = rt_ckpt_save(r, o->ckpt, r->step);
	if (rc < 0 && rc != -ECANCELED)
		fprintf(stderr, "pcc-run: rank %d: step %ld: %s\n", r->c->rank, s + 1, ir_error());
	return rc;
}

/* --eval-data: the mean loss over every held-out set once (rank 0's;
 * each set one micro-batch or a whole step, as --data's), after step s.
 * Collective. The kernel and communication times and the overlap counts
 * are the training's alone: an evaluation's are put back; it is not in
 * the --trace timeline. */
static void evaluate(struct rt *r, struct rt_data *ev, const struct opts *o, long s, double *loss)
{
	const struct plan *p = r->p;
	struct rt saved = *r; /* the counters an evaluation would move */
	struct rt_trace *trace = r->trace;
	struct ir_tensor *out = ir_calloc((size_t)r->micro * (size_t)p->noutputs + 1, sizeof *out);
	const struct ir_tensor *in;
	int mbs, n = rt_data_pass(ev, &mbs);
	double sum = 0, t0 = ir_now();
	if (!out) {
		ir_errorf(-ENOMEM, "out of memory evaluating");
		die(r->c, s);
	}
	r->trace = NULL;
	rt_data_seek(ev, 0);
	for (int e = 0, m0 = 0; e < n; e++, m0 += r->micro) {
		if (rt_data_next(ev, &in) < 0 || rt_eval_step(r, in) < 0 || rt_gather_outputs(r, out) < 0) {
			ir_error_prefix("evaluating on %s", o->eval);
			die(r->c, s);
		}
		for (int m = 0; m < r->micro && m0 + m < mbs && r->c->rank == 0; m++)
			sum += ir_tensor_get_f64(&out[(size_t)m * (size_t)p->noutputs], 0);
		free_outputs(out, r->micro * p->noutputs);
	}
	ir_free(out);
	r->trace = trace;
	r->t_kernel = saved.t_kernel;
	r->t_comm = saved.t_comm;
	r->t_gemm = saved.t_gemm;
	r->n_recv = saved.n_recv;
	r->n_early = saved.n_early;
	r->n_coll = saved.n_coll;
	r->n_late = saved.n_late;
	*loss = sum / mbs;
	if (r->c->rank == 0) {
		printf("eval %ld/%ld  eval_loss %.6f  over %d micro-batch%s  %.4g s\n", s + 1, o->steps,
		       isnan(*loss) ? NAN : *loss, mbs, mbs == 1 ? "" : "es", ir_now() - t0);
		fflush(stdout);
	}
}

static int train(struct rt *r, const struct opts *o, const char *model)
{
	const struct plan *p = r->p;
	const struct ir_tensor *in;
	char what[4300];
	struct ir_tensor *out = ir_calloc((size_t)r->micro * (size_t)p->noutputs + 1, sizeof *out);
	struct rt_data *d = o->tokens ? rt_data_open_tokens(o->tokens, o->token_type, p) : rt_data_open(o->data, p);
	struct rt_data *ev = d && o->eval ? rt_data_open(o->eval, p) : NULL;
	int rc = out && d && (ev || !o->eval) ? 0 : -EINVAL;
	if (rc < 0 && d && o->eval && !ev)
		ir_error_prefix("--eval-data %s", o->eval);
	if (rc == 0 && o->shuffle)
		rc = rt_data_shuffle(d, o->shuffle_seed);
	long every = o->log_every ? o->log_every : o->steps <= 20 ? 1 : o->steps / 10;
	struct ir_steplog *log = NULL;
	if (agree(r->c, rc) < 0)
		goto done;
	rt_data_describe(d, what, sizeof what);
	if (r->c->rank == 0)
		printf("pcc-run: training %s on %d ranks: %ld steps of %d micro-batch%s, %s, %s\n", o->plan, r->c->size,
		       o->steps, r->micro, r->micro == 1 ? "" : "es", what, p->train_config ? p->train_config : "");
	if (o->ckpt && agree(r->c, rt_ckpt_check_dir(r, o->ckpt)) < 0) {
		rc = -1;
		goto done;
	}
	if (o->resume) {
		char used[4400] = "";
		int lrc = rt_ckpt_load(r, o->resume, &r->step, used, sizeof used);
		if (lrc < 0 || rt_state_sync(r, true) < 0) {
			rc = -1;
			if (r->c->rank == 0 && lrc != -ECANCELED) /* -ECANCELED: said already */
				fprintf(stderr, "pcc-run: rank 0: %s\n", ir_error());
			goto done;
		}
		if (r->c->rank == 0)
			printf("pcc-run: resumed from %s at step %ld\n", used, r->step);
		if (r->step > o->steps) { /* every rank loaded the same step */
			rc = -1;
			if (r->c->rank == 0)
				fprintf(stderr,
					"pcc-run: rank 0: resumed at step %ld, past --steps %ld (the run's total, not "
					"the steps to add): give --steps above %ld to train on from it\n",
					r->step, o->steps, r->step);
			goto done;
		}
		if (r->step == o->steps && r->c->rank == 0)
			printf("pcc-run: the checkpoint is at step %ld, the run's last (--steps %ld): no step left to "
			       "train\n",
			       r->step, o->steps);
	}
	rt_data_seek(d, r->step); /* the data where the run stopped */
	double last[2] = { r->t_kernel, r->t_comm };
	struct ir_lr lr; /* the schedule --log-json states, from the plan */
	bool has_lr = ir_lr_parse(p->train_config, &lr) == 0;
	if (o->log_json && agree(r->c, r->c->rank == 0 ? ir_steplog_open(o->log_json, &log) : 0) < 0) {
		rc = -1;
		goto done;
	}
	if ((rc = trace_start(r, o)) < 0)
		goto done;
	double t_all = ir_now();
	long first = r->step;
	for (long s = r->step; s < o->steps; s++) {
		double t0 = ir_now();
		/* every rank reads the same data: a bad token stops all of them here */
		rc = rt_data_next(d, &in);
		if (rc < 0)
			ir_error_prefix("step %ld", s + 1);
		if ((rc = agree(r->c, rc)) < 0)
			goto done;
		if (o->step(r, in) < 0)
			die(r->c, s);
		double t = ir_now() - t0;
		if (r->trace)
			rt_trace_step(r, t0, t0 + t);
		if (rt_gather_outputs(r, out) < 0)
			die(r->c, s);
		r->step++;
		/* only rank 0 holds the loss: all learn whether the run goes on */
		if ((rc = agree(r->c, r->c->rank == 0 ? check_finite(r, s, out) : 0)) < 0) {
			free_outputs(out, r->micro * p->noutputs);
			goto done;
		}
		if (r->c->rank == 0 && (s % every == 0 || s == o->steps - 1))
			log_step(r, s, o, out, t);
		double eval_loss = NAN;
		bool eval = ev && ((o->eval_every && r->step % o->eval_every == 0) || s == o->steps - 1);
		if (eval)
			evaluate(r, ev, o, s, &eval_loss);
		if (o->log_json && (rc = agree(r->c, json_step(r, s, o, out, t, d, has_lr ? &lr : NULL, log, last,
							       eval ? &eval_loss : NULL))) < 0) {
			free_outputs(out, r->micro * p->noutputs);
			goto done;
		}
		free_outputs(out, r->micro * p->noutputs);
		if (ckpt_after(o, r->step) && (rc = checkpoint(r, o, s)) < 0)
			goto done;
	}
	double t_run = ir_now() - t_all;
	char ov[160];
	if (overlap_stats(r, ov, sizeof ov) < 0)
		die(r->c, o->steps - 1);
	if (r->c->rank == 0)
		printf("pcc-run: %ld steps in %.3f s (rank 0: %s %.3f s, communication %.3f s%s%s)\n", o->steps - first,
		       t_run, r->dev->issues ? "issuing kernels" : "kernels", r->t_kernel, r->t_comm,
		       r->dev->fallback_report(r, NULL, 0) ? ", some kernels on the host" : "", ov);
	if (r->c->rank == 0)
		fallback_line(r);
	if (graph_lines(r) < 0)
		die(r->c, o->steps - 1);
	if (r->c->rank == 0 && o->profile)
		rt_profile_print(r, o->steps - first, o->profile_rows, stdout);
	if ((rc = trace_end(r, o)) < 0)
		goto done;
	rc = o->save ? save_onnx(r, model, o->save) : 0;
	if (rc == -EIO) /* another rank failed; it said so */
		goto done;
	rc = agree(r->c, rc);
	if (rc == 0 && o->save && r->c->rank == 0)
		printf("pcc-run: wrote %s\n", o->save);
done:
	if (ir_steplog_close(log) < 0 && rc == 0) {
		fprintf(stderr, "pcc-run: rank 0: %s\n", ir_error());
		rc = -EIO;
	}
	ir_free(out);
	rt_data_close(d);
	rt_data_close(ev);
	return rc;
}

/* This process's rank as the launcher gave it, for a failure before MPI
 * knows it (Open MPI, PMIx, MPICH; a process started alone is rank 0). */
static const char *launcher_rank(void)
{
	const char *vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (getenv(vars[i]) && getenv(vars[i])[0])
			return getenv(vars[i]);
	return "0";
}

int rt_main(int argc, char **argv, rt_step_fn step)
{
	struct rt_comm c;
	struct opts o;
	struct rt r = { 0 };
	struct plan *p = NULL;
	/* --help and --version need no MPI; a usage error is said by rank 0 */
	int rc = parse(argc, argv, &o);
	o.step = step ? step : rt_step;
	if (rc == PARSE_HELP) {
		usage(stdout);
		return 0;
	}
	if (rc == PARSE_VERSION) {
		printf("pcc-run %s\n", PCC_VERSION);
		return 0;
	}
	char usage_error[1024];
	snprintf(usage_error, sizeof usage_error, "%s", rc < 0 ? ir_error() : "");
	/* past RLIMIT_FSIZE a write fails with EFBIG, reported, instead of killing the rank */
	signal(SIGXFSZ, SIG_IGN);
	interp_blas_init();
	if (rt_comm_mpi_init(&c, &argc, &argv) < 0) {
		fprintf(stderr, "pcc-run: rank %s: %s\n", launcher_rank(), ir_error());
		return 1;
	}
	/* every line a rank prints names it, a broken invariant's too */
	char who[48];
	snprintf(who, sizeof who, "pcc-run: rank %d", c.rank);
	ir_assert_set_who(who);
	if (rc < 0) {
		if (c.rank == 0)
			fprintf(stderr, "pcc-run: rank 0: %s (try 'pcc-run --help')\n", usage_error);
		c.ops->finish(&c);
		return 2;
	}
	c.timeout = o.timeout;
	rc = load(&r, &o, &p, &c);
	if (rc == 0)
		rc = p->train ? train(&r, &o, o.model ? o.model : p->model) : infer(&r, &o);
	rt_trace_close(&r);
	rt_overlap_release(&r);
	r.failed = rc < 0;
	rt_release(&r);
	rt_fill_release(&o.fill);
	plan_free(p);
	c.ops->finish(&c);
	return rc < 0 ? 1 : 0;
}
