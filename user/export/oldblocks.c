// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/oldblocks.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg/heap_agg.h"
#include "export/quantity.h"
#include "export/suppress.h"
#include "sym/stackres.h"
#include "util/escape.h"
#include "util/hashmap.h"

/* Frames of a stack shown, leaf first; deeper ones end in " < …". */
#define OLDBLOCKS_FRAMES 5

struct old_key {
	uint32_t pid;
	int32_t stack_id;
};

struct old_sum {
	struct old_key key;
	double bytes, blocks;
	uint64_t oldest; /* the earliest birth */
};

const char *oldblocks__age(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000ULL;

	if (s < 10)
		snprintf(buf, len, "%.1fs", ns / 1e9);
	else if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	return buf;
}

static int by_bytes(const void *a, const void *b)
{
	const struct old_sum *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->key.pid != y->key.pid)
		return x->key.pid < y->key.pid ? -1 : 1;
	return x->key.stack_id < y->key.stack_id ? -1 : x->key.stack_id > y->key.stack_id;
}

/* The blocks old enough, summed per (process, stack), into a malloc'ed array. */
static int sum_old(struct old_sum **out, size_t *n, const struct heap_agg *h, uint64_t now,
		   uint64_t min_age_ns)
{
	struct hashmap *m = NULL;
	struct heap_live_block b;
	struct old_sum *v, *all;
	const void *k;
	size_t it = 0, i = 0;
	int err;

	*out = NULL;
	*n = 0;
	err = hashmap__new(&m, sizeof(struct old_key), sizeof(struct old_sum));
	while (!err && heap_agg__next_live(h, &it, &b)) {
		struct old_key key = {.pid = b.pid, .stack_id = b.stack_id};

		if (!b.born || now < b.born || now - b.born < min_age_ns)
			continue;
		err = hashmap__upsert(m, (void **)&v, &key, NULL);
		if (err)
			break;
		if (!v->blocks)
			v->oldest = b.born;
		v->key = key;
		v->bytes += b.bytes;
		v->blocks += b.objects;
		if (b.born < v->oldest)
			v->oldest = b.born;
	}
	all = err ? NULL : malloc((hashmap__count(m) ? hashmap__count(m) : 1) * sizeof(*all));
	if (!err && !all)
		err = -ENOMEM;
	it = 0;
	while (!err && hashmap__next(m, &it, &k, (void **)&v))
		all[i++] = *v;
	hashmap__free(m);
	if (err) {
		free(all);
		return err;
	}
	qsort(all, i, sizeof(*all), by_bytes);
	*out = all;
	*n = i;
	return 0;
}

void oldblocks__write_stack(FILE *f, const struct stackres *stacks, int32_t id)
{
	unsigned n;
	const struct stackres_frame *fr = stackres__frames(stacks, id, &n);

	if (!n) {
		fputs("[no stack]", f);
		return;
	}
	for (unsigned i = 0; i < n && i < OLDBLOCKS_FRAMES; i++) {
		const char *name = fr[i].sym.name ? fr[i].sym.name : "[unknown]";

		if (i)
			fputs(" < ", f);
		escape__write(f, name, strlen(name));
	}
	if (n > OLDBLOCKS_FRAMES)
		fputs(" < …", f);
}

int oldblocks__write(FILE *f, const struct heap_agg *h, const struct stackres *stacks, uint64_t now,
		     uint64_t min_age_ns, unsigned top, const struct suppress *sup,
		     const char *title, struct oldblocks_totals *tot)
{
	struct oldblocks_totals t = {0};
	char age[32], bytes[QUANTITY_MAX];
	struct old_sum *all;
	size_t n, kept = 0;
	int err;

	err = sum_old(&all, &n, h, now, min_age_ns);
	if (err)
		return err;
	/* Suppressed stacks out, the order kept. */
	for (size_t i = 0; i < n; i++) {
		unsigned nf;
		const struct stackres_frame *fr =
			stackres__frames(stacks, all[i].key.stack_id, &nf);

		if (suppress__match(sup, fr, nf)) {
			t.suppressed_bytes += all[i].bytes;
			t.suppressed_blocks += all[i].blocks;
			t.suppressed_stacks++;
			continue;
		}
		t.bytes += all[i].bytes;
		t.blocks += all[i].blocks;
		all[kept++] = all[i];
	}
	t.stacks = kept;
	if (tot)
		*tot = t;
	if (!f)
		goto out;
	fprintf(f, "\n%s: ", title);
	if (!kept)
		fputs("none", f);
	else
		fprintf(f, "%s in %.0f block%s, %zu stack%s, top %zu by bytes",
			quantity__format(bytes, sizeof(bytes), llround(t.bytes), "bytes", true),
			t.blocks, t.blocks == 1 ? "" : "s", kept, kept == 1 ? "" : "s",
			kept < top ? kept : top);
	fputc('\n', f);
	if (kept)
		fprintf(f, "  %16s %10s %8s  %-8s %s\n", "bytes", "blocks", "oldest", "pid",
			"stack (leaf first)");
	for (size_t i = 0; i < kept && i < top; i++) {
		fprintf(f, "  %16s %10.0f %8s  %-8" PRIu32 " ",
			quantity__format(bytes, sizeof(bytes), llround(all[i].bytes), "bytes",
					 false),
			all[i].blocks, oldblocks__age(age, sizeof(age), now - all[i].oldest),
			all[i].key.pid);
		oldblocks__write_stack(f, stacks, all[i].key.stack_id);
		fputc('\n', f);
	}
	if (t.suppressed_stacks)
		fprintf(f,
			"  suppressed: %s in %.0f blocks, %zu stacks (the leak rules: man page)\n",
			quantity__format(bytes, sizeof(bytes), llround(t.suppressed_bytes), "bytes",
					 false),
			t.suppressed_blocks, t.suppressed_stacks);
out:
	free(all);
	return 0;
}
