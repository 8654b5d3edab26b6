// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/folded.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/escape.h"

struct line {
	char *text; /* "process;root;…;leaf", without the value */
	int64_t value;
};

/* Names come from targets.  Through the one escaper of terminal text (util/escape.h): a
 * control byte (a newline would split a line), DEL, a C1 control or a byte that is not UTF-8
 * becomes \xNN, so the file is safe to cat and valid UTF-8 for flamegraph.pl and speedscope;
 * names without such bytes stay as pprof has them.  ';' separates frames: it becomes '_'.
 * Spaces stay: readers split the value off at the last space. */
static char *sanitized(const char *s)
{
	char *out = escape__dup(s);

	if (!out)
		return NULL;
	for (char *c = out; *c; c++)
		if (*c == ';')
			*c = '_';
	return out;
}

/* Frame text per location id, computed once: stacks share most of their frames. */
static int frame_names(const struct profile *p, char ***out)
{
	char **names = calloc(p->nlocations + 1, sizeof(*names));
	char buf[256];

	if (!names)
		return -ENOMEM;
	for (uint32_t id = 1; id <= p->nlocations; id++) {
		names[id] = sanitized(profile__location_name(p, id, buf, sizeof(buf)));
		if (!names[id]) {
			for (uint32_t j = 1; j < id; j++)
				free(names[j]);
			free(names);
			return -ENOMEM;
		}
	}
	*out = names;
	return 0;
}

static int render(const struct profile *p, char *const *names, const struct profile_sample *s,
		  char **out)
{
	const char *process = *s->process ? s->process : *s->comm ? s->comm : "[unknown]";
	char *text = NULL, *proc;
	size_t len = 0;
	FILE *m;
	int err = 0;

	proc = sanitized(process);
	if (!proc)
		return -ENOMEM;
	m = open_memstream(&text, &len);
	if (!m) {
		err = -errno;
		goto cleanup;
	}
	fputs(proc, m);
	/* loc_ids are leaf first; flame graphs want the root first. */
	for (uint32_t i = s->nlocs; i-- > 0;) {
		fputc(';', m);
		fputs(names[s->loc_ids[i]], m);
	}
	if (ferror(m))
		err = -ENOMEM;
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (err) {
		free(text);
		goto cleanup;
	}
	*out = text;
cleanup:
	free(proc);
	return err;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/*
 * The value written: a sampled profile's sample count when it has one (--cpu: `samples`), as
 * stackcollapse-perf and py-spy write (a viewer's axis then reads samples, not 2.4 G of
 * nanoseconds); otherwise the default type (off-CPU and call times in nanoseconds, bytes).
 */
static uint32_t folded_type(const struct profile *p)
{
	for (uint32_t i = 0; i < p->ntypes; i++)
		if (!strcmp(p->types[i].type, "samples") && !strcmp(p->types[i].unit, "count"))
			return i;
	return p->default_type;
}

int folded__write(const struct profile *p, FILE *f)
{
	struct line *lines = NULL;
	char **names = NULL;
	uint32_t nlines = 0, t = folded_type(p);
	int err;

	if (t >= p->ntypes && p->nsamples)
		return -EINVAL;
	err = frame_names(p, &names);
	if (err)
		return err;
	lines = calloc(p->nsamples ? p->nsamples : 1, sizeof(*lines));
	if (!lines) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		if (!p->samples[i].values[t])
			continue;
		err = render(p, names, &p->samples[i], &lines[nlines].text);
		if (err)
			goto cleanup;
		lines[nlines++].value = p->samples[i].values[t];
	}

	/* Sorting brings together what must be merged: other threads of the same process, and
	 * different addresses inside the same functions, which print the same. */
	qsort(lines, nlines, sizeof(*lines), cmp_line);
	for (uint32_t i = 0; i < nlines;) {
		int64_t sum = 0;
		uint32_t j = i;

		for (; j < nlines && strcmp(lines[j].text, lines[i].text) == 0; j++)
			sum += lines[j].value;
		/* Negative totals (more freed than seen allocated) have no place in a flame graph.
		 */
		if (sum > 0)
			fprintf(f, "%s %" PRId64 "\n", lines[i].text, sum);
		i = j;
	}
	err = ferror(f) ? -EIO : 0;
cleanup:
	for (uint32_t i = 0; lines && i < nlines; i++)
		free(lines[i].text);
	free(lines);
	for (uint32_t id = 1; names && id <= p->nlocations; id++)
		free(names[id]);
	free(names);
	return err;
}
