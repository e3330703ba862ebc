/*
 * ckpt_manifest.h: a checkpoint's manifest.json read and checked against a
 * plan (ckpt_manifest.c), apart from the ranks that load the shards
 * (ckpt.c), so that it runs without MPI (tests/fuzz/fuzz_ckpt.c).
 */
#ifndef PCC_RUNTIME_CKPT_MANIFEST_H
#define PCC_RUNTIME_CKPT_MANIFEST_H

#include "ir/plan.h"

#define RT_CKPT_FORMAT 1

/* The most steps a run takes (pcc-run --steps), so the most a manifest's
 * "step" may say. */
#define RT_STEPS_MAX 1000000000L

/* One slice of a parameter or state tensor in a rank's file. */
struct rt_shard {
	int kind;  /* PLAN_BIND_PARAM or PLAN_BIND_STATE */
	int index; /* the plan's tensor; -1: the plan has none of its name */
	enum ir_dtype dtype;
	struct ir_shape shape;      /* the slice, elements */
	int64_t start[IR_MAX_RANK]; /* where it starts in the global tensor */
	char file[64];              /* in the checkpoint directory, no '/' */
	int64_t offset, bytes;      /* in that file */
	uint64_t xxh3;
};

struct rt_manifest {
	long step; /* the steps run when it was saved */
	int n;
	struct rt_shard *sh; /* [n] */
};

/* Reads cdir/manifest.json into m and checks it against p: its format and
 * model hash, every shard well formed (dtype, shapes, bytes = numel x
 * dtype size) and, where it names one of p's tensors, of that tensor's
 * dtype and shape and lying inside it; its step from 0 to RT_STEPS_MAX.
 * 0, or -EINVAL (-ENAMETOOLONG, -ENOMEM) with one line naming the file;
 * m->step is set either way and m->sh must be freed with
 * rt_manifest_free. */
int rt_manifest_read(const struct plan *p, const char *cdir, struct rt_manifest *m);
void rt_manifest_free(struct rt_manifest *m);

/* Where shard s overlaps buffer x (a slice of the same tensor, starting
 * at start in it): the block blk of it, starting at in_s in the shard and
 * at in_x in the buffer. False when they share no element (another tensor
 * or dtype, or disjoint). */
bool rt_shard_overlap(const struct rt_shard *s, const struct plan_buffer *x, const int64_t *start, int64_t *in_s,
		      int64_t *in_x, struct ir_shape *blk);

#endif
