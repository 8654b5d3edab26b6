// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "profile/profile.h"
#include "util/strpool.h"

/*
 * A row of a table is a function as displayed: locations are grouped by their display name,
 * so the addresses inside one function add up (as pprof -top does), and the names match the
 * folded output.
 */
struct node {
	const char *name;
	int64_t flat, cum;
	uint32_t stamp; /* 1 + index of the last sample that counted this node's cum */
	bool touched;
};

struct report {
	const struct profile *p;
	FILE *f;
	unsigned top;
	struct strpool *names;
	struct node *nodes;
	uint32_t nnodes;
	uint32_t *loc_node; /* location id -> node index */
	uint32_t *touched;  /* nodes touched by the current process and type */
	uint32_t ntouched;
	uint32_t *order; /* sample indexes sorted by pid */
};

static int build_nodes(struct report *r)
{
	const struct profile *p = r->p;
	struct hashmap *by_name = NULL; /* interned name pointer -> node index */
	char buf[256];
	int err;

	r->loc_node = calloc(p->nlocations + 1, sizeof(*r->loc_node));
	r->nodes = calloc(p->nlocations + 1, sizeof(*r->nodes));
	r->touched = calloc(p->nlocations + 1, sizeof(*r->touched));
	if (!r->loc_node || !r->nodes || !r->touched)
		return -ENOMEM;
	err = hashmap__new(&by_name, sizeof(const char *), sizeof(uint32_t));
	if (err)
		return err;
	for (uint32_t id = 1; id <= p->nlocations; id++) {
		const char *name =
			strpool__intern(r->names, profile__location_name(p, id, buf, sizeof(buf)));
		uint32_t *idx;
		bool created;

		if (!name) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = hashmap__upsert(by_name, (void **)&idx, &name, &created);
		if (err)
			goto cleanup;
		if (created) {
			*idx = r->nnodes++;
			r->nodes[*idx].name = name;
		}
		r->loc_node[id] = *idx;
	}
cleanup:
	hashmap__free(by_name);
	return err;
}

static int cmp_by_pid(const void *a, const void *b, void *arg)
{
	const struct profile *p = arg;
	const struct profile_sample *sa = &p->samples[*(const uint32_t *)a];
	const struct profile_sample *sb = &p->samples[*(const uint32_t *)b];

	if (sa->pid != sb->pid)
		return sa->pid < sb->pid ? -1 : 1;
	/* Then by index, so the output does not depend on qsort's instability. */
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* "3.91 MiB (4096000 bytes)", "1.50 s (1500000000 ns)", "1000": human, with the exact count. */
static void print_quantity(FILE *f, int64_t v, const char *unit)
{
	static const char *const bin[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double d = (double)v, mag = d < 0 ? -d : d;

	if (!strcmp(unit, "bytes")) {
		unsigned i = 0;

		if (mag < 1024) {
			fprintf(f, "%" PRId64 " bytes", v);
			return;
		}
		d /= 1024;
		mag /= 1024;
		while (mag >= 1024 && i + 1 < sizeof(bin) / sizeof(bin[0])) {
			d /= 1024;
			mag /= 1024;
			i++;
		}
		fprintf(f, "%.2f %s (%" PRId64 " bytes)", d, bin[i], v);
	} else if (!strcmp(unit, "nanoseconds")) {
		if (mag >= 1e9)
			fprintf(f, "%.2f s (%" PRId64 " ns)", d / 1e9, v);
		else if (mag >= 1e6)
			fprintf(f, "%.2f ms (%" PRId64 " ns)", d / 1e6, v);
		else if (mag >= 1e3)
			fprintf(f, "%.2f us (%" PRId64 " ns)", d / 1e3, v);
		else
			fprintf(f, "%" PRId64 " ns", v);
	} else if (!strcmp(unit, "count") || !*unit) {
		fprintf(f, "%" PRId64, v);
	} else {
		fprintf(f, "%" PRId64 " %s", v, unit);
	}
}

static double percent(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static int cmp_row(const void *a, const void *b, void *arg)
{
	const struct node *nodes = arg;
	const struct node *x = &nodes[*(const uint32_t *)a], *y = &nodes[*(const uint32_t *)b];

	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Top table of one value type for the samples order[from..to) of one process. */
static void print_table(struct report *r, uint32_t from, uint32_t to, uint32_t t, int64_t total)
{
	const struct profile *p = r->p;
	uint32_t rows;

	r->ntouched = 0;
	for (uint32_t k = from; k < to; k++) {
		const struct profile_sample *s = &p->samples[r->order[k]];
		int64_t v = s->values[t];

		if (!v)
			continue;
		for (uint32_t i = 0; i < s->nlocs; i++) {
			struct node *n = &r->nodes[r->loc_node[s->loc_ids[i]]];

			if (!n->touched) {
				n->touched = true;
				r->touched[r->ntouched++] = (uint32_t)(n - r->nodes);
			}
			if (i == 0)
				n->flat += v;
			/* A recursive function is on the stack more than once but costs it once. */
			if (n->stamp != k + 1) {
				n->stamp = k + 1;
				n->cum += v;
			}
		}
	}
	qsort_r(r->touched, r->ntouched, sizeof(*r->touched), cmp_row, r->nodes);

	fprintf(r->f, "\n  top %u by %s (%s), total ", r->top, p->types[t].type, p->types[t].unit);
	print_quantity(r->f, total, p->types[t].unit);
	fputc('\n', r->f);
	rows = r->ntouched < r->top ? r->ntouched : r->top;
	if (!rows)
		fprintf(r->f, "    (no samples)\n");
	else
		fprintf(r->f, "  %16s %7s %16s %7s  %s\n", "flat", "flat%", "cum", "cum%",
			"function");
	for (uint32_t i = 0; i < rows; i++) {
		const struct node *n = &r->nodes[r->touched[i]];

		fprintf(r->f, "  %16" PRId64 " %6.2f%% %16" PRId64 " %6.2f%%  %s\n", n->flat,
			percent(n->flat, total), n->cum, percent(n->cum, total), n->name);
	}
	for (uint32_t i = 0; i < r->ntouched; i++) {
		struct node *n = &r->nodes[r->touched[i]];

		n->flat = n->cum = 0;
		n->stamp = 0;
		n->touched = false;
	}
}

/* Header and tables of the process whose samples are order[from..to). */
static int print_process(struct report *r, uint32_t from, uint32_t to)
{
	const struct profile *p = r->p;
	const char *process = "";
	int64_t totals[PROFILE_MAX_VALUES] = {0};
	uint32_t *tids, nthreads = 0, npartial = 0;

	tids = malloc((to - from) * sizeof(*tids));
	if (!tids)
		return -ENOMEM;
	for (uint32_t k = from; k < to; k++) {
		const struct profile_sample *s = &p->samples[r->order[k]];

		if (!*process && s->process)
			process = s->process;
		for (uint32_t t = 0; t < p->ntypes; t++)
			totals[t] += s->values[t];
		tids[k - from] = s->tid;
		npartial += s->partial;
	}
	qsort(tids, to - from, sizeof(*tids), cmp_u32);
	for (uint32_t i = 0; i < to - from; i++)
		nthreads += !i || tids[i] != tids[i - 1];
	free(tids);

	fprintf(r->f, "\npid %" PRIu32 " (%s): ", p->samples[r->order[from]].pid, process);
	for (uint32_t t = 0; t < p->ntypes; t++) {
		fprintf(r->f, "%s%s ", t ? ", " : "", p->types[t].type);
		print_quantity(r->f, totals[t], p->types[t].unit);
	}
	fprintf(r->f, "%s%" PRIu32 " thread%s", p->ntypes ? ", " : "", nthreads,
		nthreads == 1 ? "" : "s");
	if (npartial)
		fprintf(r->f, ", %" PRIu32 " partial stack%s", npartial, npartial == 1 ? "" : "s");
	fputc('\n', r->f);

	if (!r->top)
		return 0;
	for (uint32_t i = 0; i < p->ntext_types && i < 2; i++) {
		uint32_t t = p->text_types[i];

		if (t < p->ntypes)
			print_table(r, from, to, t, totals[t]);
	}
	return 0;
}

static void print_counters(struct report *r)
{
	const struct profile *p = r->p;

	unsigned drops = 0;

	/* Only what was lost: zero counters and bookkeeping would bury it. */
	for (uint32_t i = 0; i < p->ncounters; i++) {
		const struct profile_counter *c = &p->counters[i];

		if (!c->value || c->info)
			continue;
		if (!drops++)
			fprintf(r->f, "\ndrops:\n");
		fprintf(r->f, "  %s: %" PRIu64 "  %s\n", c->name, c->value, c->desc);
	}
	if (!drops)
		fprintf(r->f, "\nno drops\n");
}

int text__write(const struct profile *p, FILE *f, unsigned top)
{
	struct report r = {.p = p, .f = f, .top = top};
	uint32_t nprocs = 0;
	int err;

	err = strpool__new(&r.names);
	if (err)
		goto cleanup;
	err = build_nodes(&r);
	if (err)
		goto cleanup;
	r.order = malloc((p->nsamples ? p->nsamples : 1) * sizeof(*r.order));
	if (!r.order) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t i = 0; i < p->nsamples; i++)
		r.order[i] = i;
	qsort_r(r.order, p->nsamples, sizeof(*r.order), cmp_by_pid, (void *)p);
	for (uint32_t i = 0; i < p->nsamples; i++)
		nprocs += !i || p->samples[r.order[i]].pid != p->samples[r.order[i - 1]].pid;

	fprintf(f, "%s profile: %" PRIu32 " process%s", p->mode, nprocs, nprocs == 1 ? "" : "es");
	if (p->duration_nanos)
		fprintf(f, ", %.2f s", (double)p->duration_nanos / 1e9);
	fputc('\n', f);
	if (!p->nsamples)
		fprintf(f, "\nno samples\n");
	for (uint32_t i = 0; i < p->nsamples;) {
		uint32_t j = i + 1;

		while (j < p->nsamples && p->samples[r.order[j]].pid == p->samples[r.order[i]].pid)
			j++;
		err = print_process(&r, i, j);
		if (err)
			goto cleanup;
		i = j;
	}
	print_counters(&r);
	err = ferror(f) ? -EIO : 0;
cleanup:
	free(r.order);
	free(r.loc_node);
	free(r.nodes);
	free(r.touched);
	strpool__free(r.names);
	return err;
}
