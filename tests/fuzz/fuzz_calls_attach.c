// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What --calls reads from a target to classify its runtimes: mapped file names, and its
 * command line and environment (NUL-separated lists) for the runtime's probe switches.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attach/calls_plan.h"

/* An exact-size copy (no final NUL): reading past it is an ASan error. */
static char *dup_exact(const uint8_t *p, size_t n)
{
	char *c = malloc(n ? n : 1);

	if (c)
		memcpy(c, p, n);
	return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t split = size ? data[0] % (size + 1) : 0;
	char *cmdline = dup_exact(data, split), *env = dup_exact(data + split, size - split);
	char *path = malloc(size + 1);
	struct calls_runtime_file rf;

	if (!cmdline || !env || !path)
		goto cleanup;
	calls_plan__java_probes_enabled(cmdline, split, env, size - split);
	calls_plan__env_enabled(env, size - split, "USE_ZEND_DTRACE");
	calls_plan__list_has(cmdline, split, "-XX:+ExtendedDTraceProbes");
	/* The whole input as one mapped file's path. */
	memcpy(path, data, size);
	path[size] = '\0';
	if (calls_plan__classify(path, &rf)) {
		struct calls_plan plan;

		calls_plan__init(&plan, rf.runtime, rf.major, rf.minor);
		if (plan.nprobes > CALLS_MAX_PROBES)
			__builtin_trap();
	}
cleanup:
	free(cmdline);
	free(env);
	free(path);
	return 0;
}
