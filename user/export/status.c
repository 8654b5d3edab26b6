// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "agg/collect.h" /* enum prof_mode_bit */
#include "prof_common.h"
#include "util/log.h"

/* -p with many pids: the first few named, the rest counted. */
#define STATUS_PIDS_SHOWN 8

/* "a", "a and b", "a, b and c": item i of n is preceded by this. */
static const char *sep(unsigned i, unsigned n)
{
	return i == 0 ? "" : i == n - 1 ? " and " : ", ";
}

/*
 * Every target of -p or -- CMD so far on its own otel_memory probes (-- CMD: its executable
 * carries them): no allocator probe, and the program's sampler chose its rate.  The wide scopes
 * probe libc file-wide whatever comes.
 */
static bool heap_otel_only(const struct status_plan *p)
{
	return (p->npids || p->cmd) && (p->heap_otel || (p->cmd && p->cmd_own_probes)) &&
	       !p->heap_uprobes;
}

static void put_modes(FILE *f, const struct status_plan *p)
{
	unsigned n = (unsigned)__builtin_popcount(
			 p->modes & (MODE_HEAP | MODE_CPU | MODE_OFFCPU | MODE_CALLS)),
		 i = 0;

	if (p->modes & MODE_HEAP) {
		fputs(sep(i++, n), f);
		if (p->heap_preload)
			fprintf(f,
				"heap (sampled in the program by our preloaded sampler: about one "
				"allocation per %" PRIu64 " bytes; no allocator probe)",
				p->sample_bytes);
		else if (heap_otel_only(p))
			fputs("heap (through the program's own otel_memory probes, its own "
			      "sampling: no allocator probe)",
			      f);
		else if (p->sample_bytes)
			fprintf(f, "heap (sampled: about one allocation per %" PRIu64 " bytes)",
				p->sample_bytes);
		else
			fputs("heap (every allocation)", f);
	}
	if (p->modes & MODE_CPU)
		fprintf(f, "%scpu (%u Hz)", sep(i++, n), p->cpu_hz);
	if (p->modes & MODE_OFFCPU)
		fprintf(f, "%soffcpu", sep(i++, n));
	if (p->modes & MODE_CALLS)
		fprintf(f, "%scalls", sep(i++, n));
}

static void put_scope(FILE *f, const struct status_plan *p)
{
	unsigned shown = p->npids < STATUS_PIDS_SHOWN ? p->npids : STATUS_PIDS_SHOWN;

	if (p->cmd) {
		fprintf(f, "%s and its children", p->cmd);
	} else if (p->cgroup) {
		fprintf(f, "cgroup %s", p->cgroup);
	} else if (p->container) {
		fprintf(f, "container %s", p->container);
	} else if (p->all) {
		fputs("every process on the host", f);
	} else {
		fputs(p->npids == 1 ? "pid " : "pids ", f);
		for (unsigned i = 0; i < shown; i++) {
			const char *name = p->pid_names ? p->pid_names[i] : NULL;

			fprintf(f, "%s%" PRIu32, i ? ", " : "", p->pids[i]);
			if (name && *name)
				fprintf(f, " (%s)", name);
		}
		if (p->npids > shown)
			fprintf(f, " and %u more", p->npids - shown);
	}
}

const char *status__url_shown(char *buf, size_t size, const char *url)
{
	const char *rest = strstr(url, "://"), *at, *end;
	size_t scheme = rest ? (size_t)(rest - url) + 3 : 0, host;

	rest = url + scheme;
	host = strcspn(rest, "/?#");
	at = memchr(rest, '@', host);
	if (at) {
		host -= (size_t)(at + 1 - rest);
		rest = at + 1;
	}
	end = rest + host + strcspn(rest + host, "?#");
	snprintf(buf, size, "%.*s%.*s", (int)scheme, url, (int)(end - rest), rest);
	return buf;
}

/* Where the result goes, and how to stop. */
static void put_destination(FILE *f, const struct status_plan *p)
{
	char url[1024];
	bool said = false;

	if (p->output_dir) {
		fprintf(f, "writing a profile per mode every %g s to %s/", p->interval,
			p->output_dir);
		if (p->retain)
			fprintf(f, " (keeping the newest %u)", p->retain);
		said = true;
	} else if (p->npaths == 1 && !strcmp(p->paths[0], "-")) {
		fputs("writing to stdout at the end", f);
		said = true;
	} else if (p->npaths) {
		fputs(p->folder ? "writing the folder " : "writing ", f);
		for (unsigned i = 0; i < p->npaths; i++)
			fprintf(f, "%s%s", sep(i, p->npaths), p->paths[i]);
		fputs(" at the end", f);
		said = true;
	}
	if (p->push_url)
		fprintf(f, "%spushing every %g s to %s", said ? ", " : "", p->interval,
			status__url_shown(url, sizeof(url), p->push_url));
	/* With -d the run ends by itself; Ctrl-C still works, but it is not how it stops. */
	if (p->duration <= 0)
		fputs("; Ctrl-C to stop", f);
	fputc('\n', f);
}

int status__start_lines(FILE *f, const struct status_plan *p)
{
	fputs("profiling ", f);
	put_modes(f, p);
	fputs(" of ", f);
	put_scope(f, p);
	if (p->duration > 0)
		fprintf(f, " for %g s", p->duration);
	fputc('\n', f);
	/* The default for -p and -- CMD: the user may not know what it costs.  Only when the
	 * allocator probes were attached exactly. */
	if ((p->modes & MODE_HEAP) && !p->sample_bytes && !p->heap_preload && !heap_otel_only(p))
		fputs("exact heap tracing: every malloc and free is probed (slows "
		      "allocation-heavy programs several-fold); --sample-bytes N samples instead\n",
		      f);
	put_destination(f, p);
	return ferror(f) ? -EIO : 0;
}

int status__say_start(const struct status_plan *p)
{
	char *text = NULL, *line, *nl;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int err;

	if (!f)
		return -errno;
	err = status__start_lines(f, p);
	if (fclose(f) && !err)
		err = -EIO;
	for (line = text; !err && line && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			break;
		*nl = '\0';
		pr_note("%s\n", line);
	}
	free(text);
	return err;
}

bool status__is_sample(const void *data, size_t size)
{
	uint32_t type;

	if (size < sizeof(type))
		return false;
	memcpy(&type, data, sizeof(type));
	switch (type) {
	case PROF_REC_HEAP_ALLOC:
	case PROF_REC_HEAP_REALLOC:
	case PROF_REC_CPU_SAMPLE:
	case PROF_REC_OFFCPU:
	case PROF_REC_CALL_RETURN:
		return true;
	default:
		return false;
	}
}

/* v with thousands separated: 1,234,567. */
static const char *grouped(char *buf, size_t size, uint64_t v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t o = 0;

	for (int i = 0; i < n && o + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

const char *status__format(char *buf, size_t size, int64_t elapsed_ns,
			   const struct status_counts *c, unsigned cols)
{
	char ev[32], sa[32], dr[32], t[32];
	int64_t s = elapsed_ns > 0 ? elapsed_ns / 1000000000LL : 0;
	size_t width = (cols ? cols : 80) - 1;

	if (s >= 3600)
		snprintf(t, sizeof(t), "%" PRId64 ":%02d:%02d", s / 3600, (int)(s / 60 % 60),
			 (int)(s % 60));
	else
		snprintf(t, sizeof(t), "%d:%02d", (int)(s / 60), (int)(s % 60));
	snprintf(buf, size, "bpftrace-prof: %s elapsed, %s events, %s samples, %s drops", t,
		 grouped(ev, sizeof(ev), c->events), grouped(sa, sizeof(sa), c->samples),
		 grouped(dr, sizeof(dr), c->drops));
	if (size && width < size - 1)
		buf[width] = '\0'; /* plain ASCII: one byte a column */
	return buf;
}

struct status {
	FILE *f;
	int64_t start_ns;
	int64_t drawn_ns; /* when the line was last drawn; 0: never */
	bool shown;	  /* a line is on the terminal now */
};

/* Erase the line the cursor is on (ours). */
static void clear_line(struct status *s)
{
	if (!s->shown)
		return;
	fputs("\r\033[K", s->f);
	fflush(s->f);
	s->shown = false;
}

/* The log printer's hook: it holds the lock of stderr (our f). */
static void on_log_line(void *ctx)
{
	clear_line(ctx);
}

int status__new(struct status **out, FILE *f, int64_t start_ns)
{
	struct status *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->f = f;
	s->start_ns = start_ns;
	log__set_line_hook(on_log_line, s);
	*out = s;
	return 0;
}

bool status__due(const struct status *s, int64_t now_ns)
{
	return now_ns - s->start_ns >= STATUS_DELAY_NS &&
	       (!s->drawn_ns || now_ns - s->drawn_ns >= STATUS_PERIOD_NS);
}

void status__draw(struct status *s, int64_t now_ns, const struct status_counts *c)
{
	struct winsize ws = {0};
	char line[256];

	/* Read each time: a resized terminal is followed. */
	if (ioctl(fileno(s->f), TIOCGWINSZ, &ws))
		ws.ws_col = 0;
	status__format(line, sizeof(line), now_ns - s->start_ns, c, ws.ws_col);
	/* The log printer's lock: a worker thread's message cannot land inside the line. */
	flockfile(s->f);
	fputs("\r\033[K", s->f);
	fputs(line, s->f);
	fflush(s->f);
	s->shown = true;
	funlockfile(s->f);
	s->drawn_ns = now_ns;
}

void status__free(struct status *s)
{
	if (!s)
		return;
	log__set_line_hook(NULL, NULL);
	flockfile(s->f);
	clear_line(s);
	funlockfile(s->f);
	free(s);
}
