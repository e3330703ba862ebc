/*
 * shard_dedup.h: repeated identical sub-problems of a reduced model solved
 * once (shard_dedup.c). Internal to solvers/.
 */
#ifndef PCC_SOLVERS_SHARD_DEDUP_H
#define PCC_SOLVERS_SHARD_DEDUP_H

#include "solvers/shard_model.h"

struct shard_dedup_stats {
	int components; /* connected components of the model's graph */
	int free;       /* of them without memory pieces (independent of the rest) */
	int distinct;   /* classes among those: each solved once */
	int copies;     /* components dropped as copies of another (free - distinct) */
	int nodes;      /* model nodes dropped with them */
};

/* A model q of m's distinct sub-problems and the map back. */
struct shard_dedup {
	struct shard_model q;
	/* per node of m: the node of q whose strategy it takes (the same
	 * position in an identical component; model-local strategies match
	 * one to one) */
	int *to;
};

/* Splits m's graph into connected components; keeps every component that
 * carries a memory piece, and of the others (they touch no binding time
 * segment, so their cost is all they contribute and they are independent
 * of everything else) one per class of identical ones: same node count,
 * strategy costs, edges and matrices in the canonical order (nodes by
 * model index, edges by their ends' positions). Exact: an optimum of q
 * mapped back is an optimum of m, and a feasible choice of q maps to a
 * feasible one of m. d is built only when some component is dropped
 * (stats->copies > 0; else it stays zeroed and m is to be searched
 * itself); d->q has no records (expand through m). 0 or -ENOMEM (stats
 * then zeroed). */
int shard_dedup_build(const struct shard_model *m, struct shard_dedup *d, struct shard_dedup_stats *stats);
/* The assignment of m that q's assignment qchoice stands for. */
void shard_dedup_expand(const struct shard_model *m, const struct shard_dedup *d, const int *qchoice, int *mchoice);
void shard_dedup_free(struct shard_dedup *d);

#endif
