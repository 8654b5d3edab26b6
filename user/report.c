// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "report.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg/collect.h"
#include "attach/calls_attach.h"
#include "attach/loader.h"
#include "cli.h"
#include "export/folded.h"
#include "export/output.h"
#include "export/pprof.h"
#include "export/text.h"
#include "profile/build.h"
#include "profile/calls_profile.h"
#include "profile/cpu_profile.h"
#include "profile/heap_profile.h"
#include "profile/profile.h"
#include "profile/run.h"
#include "util/log.h"

static int write_one(const struct profile *p, const struct env *env, const char *path)
{
	struct output *o = NULL;
	int err;

	err = output__open(&o, path);
	if (err) {
		pr_err("cannot write %s: %s\n", path,
		       err == -ELOOP ? "it is a symbolic link (refusing to follow)"
				     : strerror(-err));
		return err;
	}
	switch (env->format) {
	case FMT_PPROF:
		err = pprof__write(p, output__file(o));
		break;
	case FMT_FOLDED:
		err = folded__write(p, output__file(o));
		break;
	case FMT_TEXT:
		err = text__write(p, output__file(o), env->top ? env->top : 10);
		break;
	}
	if (err) {
		output__abort(o);
		pr_err("writing %s failed: %s\n", path, strerror(-err));
		return err;
	}
	err = output__commit(o);
	if (err)
		pr_err("cannot write %s: %s\n", path, strerror(-err));
	else if (strcmp(path, "-"))
		pr_info("wrote %s profile to %s\n", p->mode, path);
	return err;
}

static int build(struct profile **out, unsigned mode, struct collect *c, const struct env *env,
		 const struct build_inputs *in)
{
	const char *const *notes = NULL;
	size_t nnotes = 0;

	switch (mode) {
	case MODE_HEAP:
		return heap_profile__build(out, collect__heap(c), in, env->sample_bytes);
	case MODE_CPU:
		return cpu_profile__build(out, collect__cpu(c), in, env->cpu_hz);
	case MODE_CALLS:
		if (collect__calls_attach(c))
			nnotes = calls_attach__notes(collect__calls_attach(c), &notes);
		return calls_profile__build(out, collect__calls(c), in, notes, nnotes);
	}
	return -EINVAL;
}

int report__write(struct collect *c, const struct env *env, int64_t start_wall_ns,
		  int64_t duration_ns)
{
	static const struct {
		unsigned bit;
		const char *name;
	} modes[] = {
		{MODE_HEAP, "heap"},
		{MODE_CPU, "cpu"},
		{MODE_CALLS, "calls"},
	};
	struct profile_run run = {
		.cmdline = env->cmdline,
		.time_nanos = start_wall_ns,
		.duration_nanos = duration_ns,
		.collect = {.bad_records = collect__bad_records(c)},
		.sym = collect__symbolizer_stats(c),
		.unw = collect__unwinder_stats(c),
	};
	struct build_inputs in = {
		.stacks = collect__stacks(c),
		.procs = collect__procinfo(c),
		.run = &run,
	};
	bool to_stdout = !strcmp(env->output, "-");
	int ret = 0;

	ret = loader__counters(collect__loader(c), run.bpf);
	if (ret) {
		pr_err("reading the BPF counters failed: %s\n", strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct profile *p = NULL;
		char path[PATH_MAX];
		int err;

		if (!(env->modes & modes[i].bit))
			continue;
		err = build(&p, modes[i].bit, c, env, &in);
		if (err) {
			pr_err("building the %s profile failed: %s\n", modes[i].name,
			       strerror(-err));
			ret = err;
			continue;
		}
		err = write_one(p, env, cli__output_path(env, modes[i].name, path, sizeof(path)));
		if (err)
			ret = err;
		/* The summary: on stdout, unless the profile itself went there. */
		if (env->top && !(to_stdout && env->format == FMT_TEXT))
			text__write(p, to_stdout ? stderr : stdout, env->top);
		profile__free(p);
	}
	return ret;
}
