/*
 * extract.c: a range of a graph's nodes as a graph of its own, for the
 * inter-op pass's per-layer solves and the per-stage graphs of a pipelined
 * plan. Its inputs are the values the range reads from earlier nodes and
 * the graph's inputs; its outputs the values later nodes (or the graph's
 * outputs) read. Constant values it reads (masks, position tables) are
 * recomputed inside it, as a fusing backend does, rather than passed in.
 */
#include <errno.h>
#include <stdio.h>

#include "compiler/compiler.h"

/* The constant (input- and parameter-free) value v of g, computed again
 * in s: masks and position tables are recomputed where they are used, as
 * a fusing backend does, not kept as activations. NULL when its producers
 * are too deep or too wide to copy (it then stays an input). */
static struct ir_value *clone_const(struct ir_graph *s, struct ir_value **map, const struct ir_value *v, int depth)
{
	if (map[v->id] || depth > 64)
		return map[v->id];
	const struct ir_node *n = v->def;
	struct ir_value *in[8];
	if (n->nin > 8)
		return NULL;
	for (int j = 0; j < n->nin; j++)
		if (!(in[j] = clone_const(s, map, n->in[j], depth + 1)))
			return NULL;
	struct ir_node *m = ir_graph_add_node(s, n->op, NULL, n->nin, in, &n->a);
	for (int j = 0; m && j < n->nout; j++)
		map[n->out[j]->id] = m->out[j];
	return map[v->id];
}

/* Nodes [first, last) that keep says (NULL: all of them). */
static struct ir_graph *extract(const struct ir_graph *g, int first, int last, const bool *keep, bool sig, int **src)
{
	int nv = ir_graph_nvalues(g), k = ir_graph_nnodes(g);
	struct ir_graph *s = ir_graph_new();
	struct ir_value **map = ir_calloc((size_t)nv + 1, sizeof *map);
	bool *used_after = ir_calloc((size_t)nv + 1, sizeof *used_after);
	struct ir_value **in = NULL;
	bool *dyn = cost_dynamic_values(g);
	int cap = 0, rc = s && map && used_after && dyn ? 0 : -ENOMEM;
	for (int i = 0; rc == 0 && i < k; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		if (i >= first && i < last && (!keep || keep[i]))
			continue;
		for (int j = 0; j < n->nin; j++)
			used_after[n->in[j]->id] = true;
	}
	for (int o = 0; rc == 0 && o < ir_graph_noutputs(g); o++)
		used_after[ir_graph_output(g, o)->id] = true;
	for (int i = first; rc == 0 && i < last; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		if (keep && !keep[i])
			continue;
		if (n->nin > cap) {
			cap = n->nin * 2;
			ir_free(in);
			if (!(in = ir_malloc(sizeof *in * (size_t)cap))) {
				rc = -ENOMEM;
				break;
			}
		}
		for (int j = 0; j < n->nin && rc == 0; j++) {
			const struct ir_value *v = n->in[j];
			if (!map[v->id]) {
				const char *name = sig ? NULL : v->name;
				if (v->kind == IR_VAL_PARAM) {
					struct ir_data d = v->data;
					if (sig)
						d = (struct ir_data){ .path = "p", .nbytes = v->data.nbytes };
					map[v->id] = ir_graph_add_param(s, name, v->dtype, &v->shape, &d);
					if (map[v->id]) {
						map[v->id]->buffer = v->buffer;
						map[v->id]->declared = v->declared;
					}
				} else if (v->kind == IR_VAL_NODE && !dyn[v->id] && clone_const(s, map, v, 0)) {
					/* recomputed here */
				} else {
					map[v->id] = ir_graph_add_input(s, name, v->dtype, &v->shape);
				}
				if (!map[v->id])
					rc = -ENOMEM;
			}
			if (rc == 0)
				in[j] = map[v->id];
		}
		if (rc < 0)
			break;
		struct ir_node *m = ir_graph_add_node(s, n->op, sig ? NULL : n->name, n->nin, in, &n->a);
		if (!m) {
			rc = -EINVAL;
			break;
		}
		for (int j = 0; j < n->nout; j++)
			map[n->out[j]->id] = m->out[j];
	}
	for (int i = first; rc == 0 && i < last; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		if (keep && !keep[i])
			continue;
		for (int j = 0; j < n->nout && rc == 0; j++)
			if (used_after[n->out[j]->id])
				rc = ir_graph_add_output(s, map[n->out[j]->id], NULL);
	}
	if (rc == 0 && src) {
		int ns = ir_graph_nvalues(s);
		if ((*src = ir_malloc(sizeof **src * (size_t)(ns + 1)))) {
			for (int i = 0; i < ns; i++)
				(*src)[i] = -1;
			for (int i = 0; i < nv; i++)
				if (map[i])
					(*src)[map[i]->id] = i;
		} else {
			rc = -ENOMEM;
		}
	}
	ir_free(in);
	ir_free(map);
	ir_free(used_after);
	ir_free(dyn);
	if (rc < 0) {
		ir_graph_free(s);
		if (!ir_error_code() || rc == -ENOMEM)
			ir_errorf(rc, "out of memory extracting layer nodes %d..%d", first, last - 1);
		return NULL;
	}
	return s;
}

struct ir_graph *graph_extract(const struct ir_graph *g, int first, int last, bool sig, int **src)
{
	return extract(g, first, last, NULL, sig, src);
}

struct ir_graph *graph_extract_set(const struct ir_graph *g, const bool *keep, int **src)
{
	return extract(g, 0, ir_graph_nnodes(g), keep, false, src);
}

char *graph_signature(const struct ir_graph *g, int first, int last)
{
	struct ir_graph *s = graph_extract(g, first, last, true, NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *f = s ? open_memstream(&text, &len) : NULL;
	if (f) {
		ir_print(s, f);
		fclose(f);
	}
	ir_graph_free(s);
	return text;
}
