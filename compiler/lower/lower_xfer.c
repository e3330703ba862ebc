/*
 * lower_xfer.c: a value sent from one stage's sub-mesh to another's, each
 * side split its own way (cross-mesh resharding).
 *
 * Per dimension the sender holds a pieces and the receiver needs b. When
 * one count divides the other, every receiver piece is a grid of
 * max(1, a / b) sender pieces (or lies inside one): the receiver gets that
 * many blocks, each from one device holding it (replicas share the load:
 * the least-loaded sender so far), and concatenates them; no byte is sent
 * twice to one device and no sender gathers first. A dimension whose
 * counts do not divide is first gathered on the sender (then b pieces lie
 * inside its whole). Partial sums are reduced on the sender first.
 *
 * Example: x split 4 ways along rows on stage 0 (1x4), needed split 2 ways
 * on stage 1 (1x2): receiver 0 gets rows [0, n/4) from sender 0 and
 * [n/4, n/2) from sender 1 and concatenates them; receiver 1 likewise from
 * senders 2 and 3.
 *
 * The sender's slices and sends are appended to its program and run on the
 * one device chosen for each block (lw_ins.only); the receiver's receives
 * name the sender per device (lw_ins.dev_peer). Tags number the blocks of
 * the whole plan.
 */
#include <errno.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"

#define XF_MAX_BLOCKS 4096 /* blocks per receiving device */

/* Start (elements) of device k's piece of dimension d under spec on L's mesh. */
static int64_t piece_start(const struct lower *L, int k, const struct ir_sharding *spec, const struct ir_shape *s,
			   int d)
{
	int piece, n;
	lw_piece(L, k, spec->dim[d], &piece, &n);
	return piece * (s->dims[d] / n);
}

/* The sender device holding the block at global start g (every dimension),
 * least loaded among replicas. */
static int pick_sender(const struct lower *S, const struct ir_sharding *ss, const struct ir_shape *shape,
		       const struct ir_shape *local, const int64_t *g, int *load)
{
	int best = -1;
	for (int j = 0; j < S->nd; j++) {
		bool in = true;
		for (int d = 0; d < shape->rank && in; d++) {
			int64_t st = piece_start(S, j, ss, shape, d);
			in = g[d] >= st && g[d] < st + local->dims[d];
		}
		if (in && (best < 0 || load[j] < load[best]))
			best = j;
	}
	IR_ASSERT(best >= 0);
	load[best]++;
	return best;
}

/* On S: block blk (global start g) from device j to global rank `to`. */
static int send_block(struct lower *S, int sbuf, const struct ir_sharding *ss, const struct ir_shape *shape,
		      const struct ir_shape *blk, const int64_t *g, int j, int to, int tag)
{
	const struct ir_shape local = S->buf[sbuf].shape;
	int b = sbuf, rc;
	if (!ir_shape_eq(blk, &local)) {
		struct ir_attrs a;
		memset(&a, 0, sizeof a);
		a.start.n = a.limit.n = a.stride.n = shape->rank;
		for (int d = 0; d < shape->rank; d++) {
			a.start.v[d] = g[d] - piece_start(S, j, ss, shape, d);
			a.limit.v[d] = a.start.v[d] + blk->dims[d];
			a.stride.v[d] = 1;
		}
		if ((rc = lw_kernel(S, IR_OP_SLICE, &a, NULL, 1, &sbuf, &b)) < 0)
			return rc;
		S->ins[S->nins - 1].only = j + 1;
	}
	struct lw_ins x = { .kind = PLAN_SEND, .kernel = -1, .only = j + 1, .peer = to, .tag = tag };
	return lw_emit(S, &x, 1, &b, 0, NULL) < 0 ? -ENOMEM : 0;
}

/* On R: the blocks (row-major over the block grid) concatenated, last
 * split dimension first. */
static int assemble(struct lower *R, int *blocks, int n, const int *per, int rank, int *out)
{
	int rc;
	for (int d = rank - 1; d >= 0; d--) {
		if (per[d] == 1)
			continue;
		struct ir_attrs a;
		memset(&a, 0, sizeof a);
		a.axis = d;
		int m = 0;
		for (int i = 0; i < n; i += per[d]) {
			int cat;
			if ((rc = lw_kernel(R, IR_OP_CONCAT, &a, NULL, per[d], &blocks[i], &cat)) < 0)
				return rc;
			blocks[m++] = cat;
		}
		n = m;
	}
	IR_ASSERT(n == 1);
	*out = blocks[0];
	return 0;
}

int lw_transfer(struct lower *S, const struct ir_value *u, int sbuf, const struct ir_sharding *ss_, struct lower *R,
		const struct ir_value *v, const struct ir_sharding *rs, int *rbuf)
{
	const struct ir_shape shape = v->shape;
	struct ir_sharding ss = *ss_;
	int per[IR_MAX_RANK], nblk = 1, rc;
	struct ir_shape blk, rlocal;
	ss.partial = 0;
	for (int d = 0; d < shape.rank; d++) {
		int a = ir_sharding_pieces(ss.dim[d], S->n0, S->n1), b = ir_sharding_pieces(rs->dim[d], R->n0, R->n1);
		if (a % b && b % a)
			ss.dim[d] = 0;
	}
	if ((sbuf = lw_reshard(S, u, sbuf, ss_, &ss)) < 0)
		return sbuf;
	const struct ir_shape slocal = S->buf[sbuf].shape;
	lw_local_shape(R, &shape, rs, &rlocal);
	blk = shape;
	for (int d = 0; d < shape.rank; d++) {
		blk.dims[d] = slocal.dims[d] < rlocal.dims[d] ? slocal.dims[d] : rlocal.dims[d];
		per[d] = blk.dims[d] ? (int)(rlocal.dims[d] / blk.dims[d]) : 1;
		nblk *= per[d];
	}
	if (nblk > XF_MAX_BLOCKS)
		return ir_errorf(-ENOTSUP,
				 "sending \"%s\" from stage %d to stage %d takes %d blocks per device, at most "
				 "%d are supported",
				 v->name ? v->name : "", S->stage, R->stage, nblk, XF_MAX_BLOCKS);
	int *load = ir_calloc((size_t)S->nd, sizeof *load);
	int *from = ir_malloc(sizeof *from * (size_t)R->nd * (size_t)nblk);
	int *blocks = ir_malloc(sizeof *blocks * (size_t)nblk);
	int tag0 = R->sh->ntags;
	rc = -ENOMEM;
	if (!load || !from || !blocks)
		goto out;
	R->sh->ntags += nblk;
	/* the sender's side, receiver by receiver and block by block: the
	 * order every receiver's receives follow */
	for (int k = 0; k < R->nd; k++)
		for (int q = 0; q < nblk; q++) {
			int64_t g[IR_MAX_RANK];
			for (int d = shape.rank - 1, rest = q; d >= 0; d--) {
				g[d] = piece_start(R, k, rs, &shape, d) + (rest % per[d]) * blk.dims[d];
				rest /= per[d];
			}
			int j = pick_sender(S, &ss, &shape, &slocal, g, load);
			from[k * nblk + q] = S->first_rank + j;
			if ((rc = send_block(S, sbuf, &ss, &shape, &blk, g, j, R->first_rank + k, tag0 + q)) < 0)
				goto out;
		}
	for (int q = 0; q < nblk; q++) {
		struct lw_ins x = { .kind = PLAN_RECV, .kernel = -1, .tag = tag0 + q };
		if (!(x.dev_peer = ir_malloc(sizeof *x.dev_peer * (size_t)R->nd)))
			goto out;
		for (int k = 0; k < R->nd; k++)
			x.dev_peer[k] = from[k * nblk + q];
		if ((blocks[q] = lw_buf_new(R, v->dtype, &blk)) < 0 || lw_emit(R, &x, 0, NULL, 1, &blocks[q]) < 0) {
			ir_free(x.dev_peer);
			goto out;
		}
	}
	rc = assemble(R, blocks, nblk, per, shape.rank, rbuf);
out:
	ir_free(load);
	ir_free(from);
	ir_free(blocks);
	return rc == -ENOMEM && !ir_error()[0] ? ir_errorf(rc, "out of memory lowering the plan") : rc;
}
