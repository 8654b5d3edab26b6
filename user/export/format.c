// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/format.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "export/folded.h"
#include "export/output.h"
#include "export/pprof.h"
#include "export/svg.h"
#include "export/text.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "util/log.h"

static const char *const names[] = {
	[FMT_PPROF] = "pprof",	     [FMT_FOLDED] = "folded",	      [FMT_TEXT] = "text",
	[FMT_MEMTRACE] = "memtrace", [FMT_CHROME] = "chrome",	      [FMT_PERFETTO] = "perfetto",
	[FMT_FIREFOX] = "firefox",   [FMT_CODETRACER] = "codetracer", [FMT_SVG] = "svg",
};

const char *format__name(enum out_format f)
{
	return names[f];
}

int format__parse(enum out_format *out, const char *name)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i])) {
			*out = (enum out_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool format__event_trace(enum out_format f)
{
	return f == FMT_CHROME || f == FMT_PERFETTO || f == FMT_FIREFOX || f == FMT_CODETRACER;
}

/*
 * -o's extension picks the format when -f is absent, and -f must be one it may hold.  The JSON
 * traces: chrome, the documented bpftrace-prof.json, unless the name is Firefox's
 * *.profile.json[.gz]; either may be gzip'd (a .gz name) or hold the other.  .txt may hold
 * folded stacks (plain text too).
 */
static const struct format_ext exts[] = {
	{".pb.gz", FMT_PPROF, 0},
	{".pb", FMT_PPROF, 0},
	{".pprof", FMT_PPROF, 0},
	{".folded", FMT_FOLDED, 0},
	{".txt", FMT_TEXT, 1u << FMT_FOLDED},
	{".svg", FMT_SVG, 0},
	{".json", FMT_CHROME, 1u << FMT_FIREFOX},
	{".json.gz", FMT_CHROME, 1u << FMT_FIREFOX},
	{".profile.json", FMT_FIREFOX, 1u << FMT_CHROME},
	{".profile.json.gz", FMT_FIREFOX, 1u << FMT_CHROME},
	{".pftrace", FMT_PERFETTO, 0},
	{".pftrace.gz", FMT_PERFETTO, 0},
	{".perfetto-trace", FMT_PERFETTO, 0},
	{".memtrace", FMT_MEMTRACE, 0},
	{".ctf", FMT_MEMTRACE, 0}, /* memtrace files are CTF (Common Trace Format) */
};

const struct format_ext *format__ext(const char *path)
{
	const char *base = strrchr(path, '/');
	const struct format_ext *best = NULL;
	size_t len, best_len = 0;

	base = base ? base + 1 : path;
	len = strlen(base);
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t n = strlen(exts[i].ext);

		/* A name that is only the extension ("-o .svg") has none: it is a hidden file. */
		if (len > n && n > best_len && !strcasecmp(base + len - n, exts[i].ext)) {
			best = &exts[i];
			best_len = n;
		}
	}
	return best;
}

static int write_svg(const struct profile *p, FILE *f, const struct format_opts *o)
{
	struct svg_opts so = {
		.type = p->default_type,
		.icicle = o->icicle,
		.cmdline = o->cmdline,
		.min_share = SVG_MIN_SHARE,
	};
	/* With several modes, one lacking the type asked for keeps its default. */
	int t = o->svg_type ? profile__type_index(p, o->svg_type) : -ENOENT;

	if (t >= 0) {
		so.type = (uint32_t)t;
		so.exact_type = true;
	}
	return svg__write(p, f, &so);
}

int format__write(const struct profile *p, const char *path, const struct format_opts *o)
{
	struct output *out = NULL;
	int err;

	err = output__open(&out, path);
	if (err) {
		pr_err("cannot write %s: %s\n", path,
		       err == -ELOOP ? "it is a symbolic link (refusing to follow)"
				     : strerror(-err));
		return err;
	}
	if (o->no_backup)
		output__no_backup(out);
	switch (o->format) {
	case FMT_PPROF:
		err = pprof__write(p, output__file(out));
		break;
	case FMT_FOLDED:
		err = folded__write(p, output__file(out));
		break;
	case FMT_TEXT:
		err = text__write(p, output__file(out), o->top ? o->top : 10);
		break;
	case FMT_SVG:
		err = write_svg(p, output__file(out), o);
		break;
	case FMT_MEMTRACE: /* event traces are recorded as they run (trace/memtrace_rec.h, */
	case FMT_CHROME:   /* tracefile.c) */
	case FMT_PERFETTO:
	case FMT_FIREFOX:
	case FMT_CODETRACER:
	default:
		err = -EINVAL;
		break;
	}
	if (err) {
		output__abort(out);
		pr_err("writing %s failed: %s\n", path, strerror(-err));
		return err;
	}
	err = output__commit(out);
	if (err)
		pr_err("cannot write %s: %s\n", path, strerror(-err));
	run__log_bookkeeping(p);
	return err;
}
