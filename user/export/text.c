// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/quantity.h"
#include "export/rank.h"
#include "profile/profile.h"
#include "util/escape.h"

struct report {
	const struct profile *p;
	FILE *f;
	unsigned top;
	struct rank *rank;
	uint32_t *order; /* sample indexes sorted by pid */
};

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

static void print_quantity(FILE *f, int64_t v, const char *unit)
{
	char buf[QUANTITY_MAX];

	fputs(quantity__format(buf, sizeof(buf), v, unit, true), f);
}

/* A table cell: times in ms/s as people read them (the exact ns are in the pprof); counts and
 * bytes exact. */
static const char *cell(char *buf, int64_t v, const char *unit)
{
	if (!strcmp(unit, "nanoseconds"))
		return quantity__format(buf, QUANTITY_MAX, v, unit, false);
	snprintf(buf, QUANTITY_MAX, "%" PRId64, v);
	return buf;
}

static double percent(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* Top table of one value type for the samples order[from..to) of one process. */
static int print_table(struct report *r, uint32_t from, uint32_t to, uint32_t t, int64_t total)
{
	const struct profile *p = r->p;
	const char *unit = p->types[t].unit;
	const struct rank_row *rows;
	char flat[QUANTITY_MAX], cum[QUANTITY_MAX];
	uint32_t nrows;
	int err;

	err = rank__compute(r->rank, &rows, &nrows, r->order + from, to - from, t, RANK_BY_FLAT);
	if (err)
		return err;
	fprintf(r->f, "\n  top %u by %s (%s), total ", r->top, p->types[t].type, p->types[t].unit);
	print_quantity(r->f, total, p->types[t].unit);
	fputc('\n', r->f);
	if (nrows > r->top)
		nrows = r->top;
	if (!nrows)
		fprintf(r->f, "    (no samples)\n");
	else
		fprintf(r->f, "  %16s %7s %16s %7s  %s\n", "flat", "flat%", "cum", "cum%",
			"function");
	for (uint32_t i = 0; i < nrows; i++) {
		fprintf(r->f, "  %16s %6.2f%% %16s %6.2f%%  ", cell(flat, rows[i].flat, unit),
			percent(rows[i].flat, total), cell(cum, rows[i].cum, unit),
			percent(rows[i].cum, total));
		escape__write(r->f, rows[i].name, strlen(rows[i].name));
		fputc('\n', r->f);
	}
	return 0;
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

	/* Names come from targets (comm, cmdline, symbols): escaped for the terminal. */
	fprintf(r->f, "\npid %" PRIu32 " (", p->samples[r->order[from]].pid);
	escape__write(r->f, process, strlen(process));
	fputs("): ", r->f);
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

		if (t < p->ntypes) {
			int err = print_table(r, from, to, t, totals[t]);

			if (err)
				return err;
		}
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

		if (!c->value || !profile_counter__is_drop(c))
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

	err = rank__new(&r.rank, p);
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
	rank__free(r.rank);
	return err;
}
