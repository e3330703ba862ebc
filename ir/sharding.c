/*
 * sharding.c: the sharding annotation's text form and invariants.
 *
 * "<S0,R,S01|P1>": one entry per dimension (R replicated, S0 / S1 split on
 * mesh axis 0 / 1, S01 split on both, axis 0 major), then optionally "|P"
 * and the axes holding partial sums ("P0", "P1", "P01"). A rank-0 value
 * prints "<>" or "<|P1>".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

static const char *const mask_name[4] = { "R", "S0", "S1", "S01" };

char *ir_sharding_str(const struct ir_sharding *s, int rank, char *buf, size_t n)
{
	size_t at = 0;
	int w = snprintf(buf, n, "<");
	for (int d = 0; d < rank && w >= 0; d++) {
		at += (size_t)w;
		w = snprintf(buf + (at < n ? at : n), at < n ? n - at : 0, "%s%s", d ? "," : "",
			     mask_name[s->dim[d] & 3]);
	}
	if (w >= 0)
		at += (size_t)w;
	if (s->partial)
		at += (size_t)snprintf(buf + (at < n ? at : n), at < n ? n - at : 0, "|P%s",
				       s->partial == 1   ? "0"
				       : s->partial == 2 ? "1"
							 : "01");
	snprintf(buf + (at < n ? at : n), at < n ? n - at : 0, ">");
	return buf;
}

/* Parses "0", "1" or "01" at *p into an axis mask; 0 on failure. */
static int axes(const char **p, const char *end)
{
	const char *s = *p;
	if (s < end && *s == '0') {
		*p = s + 1;
		if (s + 1 < end && s[1] == '1') {
			*p = s + 2;
			return 3;
		}
		return 1;
	}
	if (s < end && *s == '1') {
		*p = s + 1;
		return 2;
	}
	return 0;
}

int ir_sharding_parse(const char *text, size_t n, int rank, struct ir_sharding *out)
{
	const char *p = text, *end = text + n;
	memset(out, 0, sizeof *out);
	for (int d = 0; d < rank; d++) {
		if (d && (p == end || *p++ != ','))
			return ir_errorf(-EINVAL, "sharding <%.*s>: expected %d entries, one per dimension", (int)n,
					 text, rank);
		if (p < end && *p == 'R') {
			p++;
			continue;
		}
		int m = 0;
		if (p < end && *p == 'S') {
			p++;
			m = axes(&p, end);
		}
		if (!m)
			return ir_errorf(-EINVAL, "sharding <%.*s>: entry %d is not R, S0, S1 or S01", (int)n, text, d);
		out->dim[d] = (uint8_t)m;
	}
	if (p < end && *p == '|') {
		p++;
		if (p == end || *p++ != 'P' || !(out->partial = (uint8_t)axes(&p, end)))
			return ir_errorf(-EINVAL, "sharding <%.*s>: expected P0, P1 or P01 after '|'", (int)n, text);
	}
	if (p != end)
		return ir_errorf(-EINVAL, "sharding <%.*s>: expected %d entries, one per dimension", (int)n, text,
				 rank);
	return 0;
}

int ir_sharding_pieces(uint8_t m, int n0, int n1)
{
	return (m & 1 ? n0 : 1) * (m & 2 ? n1 : 1);
}

int ir_sharding_check(const struct ir_sharding *s, const struct ir_shape *shape, int n0, int n1)
{
	char buf[IR_SHARDING_STR_MAX];
	unsigned used = s->partial;
	if (n0 <= 0 || n1 <= 0)
		return ir_errorf(-EINVAL, "sharding %s but the graph has no mesh",
				 ir_sharding_str(s, shape->rank, buf, sizeof buf));
	if (s->partial > 3)
		return ir_errorf(-EINVAL, "sharding: partial mask %d out of range", s->partial);
	for (int d = 0; d < IR_MAX_RANK; d++) {
		if (d >= shape->rank) {
			if (s->dim[d])
				return ir_errorf(-EINVAL, "sharding splits dimension %d of a rank-%d value", d,
						 shape->rank);
			continue;
		}
		ir_sharding_str(s, shape->rank, buf, sizeof buf);
		if (s->dim[d] > 3)
			return ir_errorf(-EINVAL, "sharding %s: dimension %d mask out of range", buf, d);
		if (used & s->dim[d])
			return ir_errorf(-EINVAL, "sharding %s: a mesh axis used twice", buf);
		used |= s->dim[d];
		int k = ir_sharding_pieces(s->dim[d], n0, n1);
		if (shape->dims[d] % k)
			return ir_errorf(-EINVAL,
					 "sharding %s: dimension %d of size %lld does not split into %d pieces", buf, d,
					 (long long)shape->dims[d], k);
	}
	return 0;
}
