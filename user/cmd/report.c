// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cmd/report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export/format.h"
#include "trace/memtrace_read.h"
#include "profile/profile.h"
#include "util/log.h"

static int write_profile(const struct profile *p, const struct report_env *env)
{
	struct format_opts o = {.format = env->format, .top = env->top};
	int err = format__write(p, env->output, &o);

	if (!err && strcmp(env->output, "-"))
		pr_info("wrote heap profile to %s\n", env->output);
	return err;
}

int report__run(const struct report_env *env)
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
