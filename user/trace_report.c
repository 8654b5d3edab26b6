// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "trace_report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "export/folded.h"
#include "trace/memtrace_read.h"
#include "export/output.h"
#include "export/pprof.h"
#include "export/text.h"
#include "profile/profile.h"
#include "util/log.h"

static int write_profile(const struct profile *p, const struct report_env *env)
{
	struct output *o = NULL;
	int err;

	err = output__open(&o, env->output);
	if (err) {
		pr_err("cannot write %s: %s\n", env->output,
		       err == -ELOOP ? "it is a symbolic link (refusing to follow)"
				     : strerror(-err));
		return err;
	}
	switch (env->format) {
	case FMT_FOLDED:
		err = folded__write(p, output__file(o));
		break;
	case FMT_TEXT:
		err = text__write(p, output__file(o), env->top ? env->top : 10);
		break;
	default:
		err = pprof__write(p, output__file(o));
		break;
	}
	if (err) {
		output__abort(o);
		pr_err("writing %s failed: %s\n", env->output, strerror(-err));
		return err;
	}
	err = output__commit(o);
	if (err)
		pr_err("cannot write %s: %s\n", env->output, strerror(-err));
	else if (strcmp(env->output, "-"))
		pr_info("wrote heap profile to %s\n", env->output);
	return err;
}

int trace_report__run(const struct report_env *env)
{
	struct memtrace_read_opts o = {.at = env->at, .at_s = env->at_s};
	struct profile *p = NULL;
	char msg[256];
	FILE *f;
	int err;

	f = fopen(env->file, "rbe");
	if (!f) {
		err = errno;
		pr_err("cannot read %s: %s\n", env->file, strerror(err));
		return err == ENOENT || err == EACCES || err == EISDIR ? 2 : 1;
	}
	err = memtrace_read__profile(&p, NULL, f, &o, msg, sizeof(msg));
	fclose(f);
	if (err == -EBADMSG) {
		pr_err("%s: %s\n", env->file, msg[0] ? msg : "not a memtrace trace");
		return 2;
	}
	if (err) {
		pr_err("reading %s failed: %s\n", env->file, strerror(-err));
		return err == -EISDIR ? 2 : 1;
	}
	err = write_profile(p, env);
	profile__free(p);
	return err ? 1 : 0;
}
