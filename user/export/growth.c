// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/growth.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg/heap_agg.h"
#include "export/oldblocks.h"
#include "export/quantity.h"
#include "util/hashmap.h"

struct grow_key {
	uint32_t pid;
	int32_t stack_id;
};

struct growth {
	unsigned n;			       /* the window, in intervals */
	uint64_t ends;			       /* interval ends kept so far */
	uint64_t at[GROWTH_INTERVALS_MAX + 1]; /* when each kept end was, the same ring */
	/* grow_key -> its in-use bytes at the last n + 1 ends (double[n + 1]), the same ring */
	struct hashmap *hist;
};

int growth__new(struct growth **out, unsigned n)
{
	struct growth *g;
	int err;

	if (!n || n > GROWTH_INTERVALS_MAX)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->n = n;
	err = hashmap__new(&g->hist, sizeof(struct grow_key), (n + 1) * sizeof(double));
	if (err) {
		free(g);
		return err;
	}
	*out = g;
	return 0;
}

void growth__free(struct growth *g)
{
	if (!g)
		return;
	hashmap__free(g->hist);
	free(g);
}

static bool held_nothing(const void *key, const void *val, void *ctx)
{
	const double *hist = val;
	const struct growth *g = ctx;

	(void)key;
	for (unsigned i = 0; i <= g->n; i++)
		if (hist[i] > 0)
			return false;
	return true;
}

int growth__record(struct growth *g, const struct heap_agg *h, uint64_t now_ns)
{
	unsigned slot = (unsigned)(g->ends % (g->n + 1));
	const struct heap_site_values *v;
	double *hist;
	uint32_t pid, tid, py;
	int32_t stack_id;
	size_t it = 0;
	int err;

	/* What no site holds now is 0: sites in use are summed in below. */
	while (hashmap__next(g->hist, &it, NULL, (void **)&hist))
		hist[slot] = 0;
	it = 0;
	while (heap_agg__next_site(h, &it, &pid, &tid, &stack_id, &py, &v)) {
		struct grow_key key = {.pid = pid, .stack_id = stack_id};

		if (v->inuse_bytes <= 0)
			continue;
		err = hashmap__upsert(g->hist, (void **)&hist, &key, NULL);
		if (err)
			return err;
		hist[slot] += v->inuse_bytes;
	}
	g->at[slot] = now_ns;
	g->ends++;
	/* Stacks holding nothing at any kept end are forgotten (or, out of memory, kept longer). */
	hashmap__delete_if(g->hist, held_nothing, NULL, g);
	return 0;
}

static int by_grown(const void *a, const void *b)
{
	const struct growth_row *x = a, *y = b;

	if (x->grown != y->grown)
		return x->grown < y->grown ? 1 : -1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

int growth__rank(const struct growth *g, struct growth_row **rows, size_t *nrows,
		 uint64_t *window_ns, unsigned *intervals)
{
	unsigned span = g->ends > g->n ? g->n : (unsigned)(g->ends ? g->ends - 1 : 0);
	uint64_t last = g->ends ? g->ends - 1 : 0, first = last - span;
	unsigned m = g->n + 1;
	struct growth_row *all;
	const void *k;
	double *hist;
	size_t it = 0, n = 0;

	*rows = NULL;
	*nrows = 0;
	*window_ns = span ? g->at[last % m] - g->at[first % m] : 0;
	*intervals = span;
	if (!span)
		return 0;
	all = malloc((hashmap__count(g->hist) ? hashmap__count(g->hist) : 1) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	while (hashmap__next(g->hist, &it, &k, (void **)&hist)) {
		const struct grow_key *key = k;
		double end = hist[last % m], start = hist[first % m];
		int mono = 1;

		if (end <= start)
			continue;
		for (uint64_t e = first; e < last; e++)
			if (hist[(e + 1) % m] < hist[e % m])
				mono = 0;
		all[n++] = (struct growth_row){
			.pid = key->pid,
			.stack_id = key->stack_id,
			.grown = end - start,
			.now = end,
			.per_s = *window_ns ? (end - start) * 1e9 / (double)*window_ns : 0,
			.monotonic = mono,
		};
	}
	qsort(all, n, sizeof(*all), by_grown);
	*rows = all;
	*nrows = n;
	return 0;
}

int growth__write(FILE *f, const struct growth *g, const struct stackres *stacks, unsigned top)
{
	char grown[QUANTITY_MAX], now[QUANTITY_MAX], rate[QUANTITY_MAX + 4], window[32];
	struct growth_row *rows;
	double total = 0;
	uint64_t window_ns;
	unsigned intervals;
	size_t n;
	int err;

	err = growth__rank(g, &rows, &n, &window_ns, &intervals);
	if (err)
		return err;
	if (!intervals) {
		fputs("\ngrowth: one interval so far, nothing to compare\n", f);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		total += rows[i].grown;
	fprintf(f, "\ngrew over the last %u interval%s (%s): ", intervals,
		intervals == 1 ? "" : "s", oldblocks__age(window, sizeof(window), window_ns));
	if (!n)
		fputs("none", f);
	else
		fprintf(f, "%s in %zu stack%s, top %zu by bytes",
			quantity__format(grown, sizeof(grown), llround(total), "bytes", true), n,
			n == 1 ? "" : "s", n < top ? n : top);
	fputc('\n', f);
	if (n)
		fprintf(f, "  %16s %14s %16s %-9s %-8s %s\n", "grown", "per second", "in use",
			"monotonic", "pid", "stack (leaf first)");
	for (size_t i = 0; i < n && i < top; i++) {
		quantity__format(rate, sizeof(rate) - 2, llround(rows[i].per_s), "bytes", false);
		strcat(rate, "/s");
		fprintf(f, "  %16s %14s %16s %-9s %-8" PRIu32 " ",
			quantity__format(grown, sizeof(grown), llround(rows[i].grown), "bytes",
					 false),
			rate,
			quantity__format(now, sizeof(now), llround(rows[i].now), "bytes", false),
			rows[i].monotonic ? "yes" : "no", rows[i].pid);
		oldblocks__write_stack(f, stacks, rows[i].stack_id);
		fputc('\n', f);
	}
	free(rows);
	return 0;
}
