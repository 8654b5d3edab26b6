// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What containers control in cgroup discovery: the names of the cgroup directories they create
 * (a delegated subtree), hence /proc/PID/cgroup lines, container ids and mount points; and the
 * /proc/PID/status lines around NSpid (a process names itself); the memory cgroup's path and
 * limit files, and the cgroup names BPF reads at an OOM kill.  Every parser gets the same
 * bytes; what each returns is checked against its contract. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof_common.h"
#include "proc/cgroup.h"
#include "proc/memlimit.h"
#include "proc/pidns.h"

static int count_pid(void *ctx, uint32_t pid)
{
	if (!pid)
		__builtin_trap();
	(*(uint64_t *)ctx)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[CGROUP_PATH_MAX], id[CGROUP_ID_SIZE], *text;
	struct cgroup_stats st = {0};
	uint64_t npids = 0;
	uint32_t u32;
	FILE *f;

	/* Exact-length buffers: ASan sees any read past the input. */
	if (!cgroup__parse_proc(path, sizeof(path), (const char *)data, size)) {
		size_t n = strlen(path);

		if (path[0] != '/' || n >= sizeof(path) || n > size)
			__builtin_trap();
		if (!cgroup__container_id(id, path) && (!id[0] || strlen(id) >= CGROUP_ID_SIZE))
			__builtin_trap();
		if (cgroup__level(&u32, path) || u32 > n)
			__builtin_trap();
	}
	/* a short out buffer: too long is an error, never an overflow */
	if (!cgroup__parse_proc(path, 16, (const char *)data, size) && strlen(path) >= 16)
		__builtin_trap();
	pidns__parse_nspid(&u32, (const char *)data, size);
	{
		char mpath[MEMLIMIT_PATH_MAX];
		bool v1;

		if (!memlimit__parse_proc(mpath, sizeof(mpath), &v1, (const char *)data, size) &&
		    (mpath[0] != '/' || strlen(mpath) > size))
			__builtin_trap();
	}
	/* the input as an OOM record's names, slot by slot (NUL or not), cut or whole */
	{
		char mpath[MEMLIMIT_PATH_MAX];
		unsigned n = (unsigned)(size / PROF_OOM_NAME_LEN);

		n = n > PROF_OOM_NAME_LEVELS ? PROF_OOM_NAME_LEVELS : n;
		for (int cut = 0; cut < 2; cut++)
			if (!memlimit__join_names(mpath, sizeof(mpath), (const char *)data,
						  PROF_OOM_NAME_LEN, n, cut) &&
			    (strlen(mpath) >= sizeof(mpath) || (!cut && mpath[0] != '/') ||
			     strlen(mpath) > 4 + n * (PROF_OOM_NAME_LEN + 1)))
				__builtin_trap();
	}

	/* The id extractor takes a string: the input, NUL-terminated. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	if (!cgroup__container_id(id, text)) {
		size_t n = strlen(id);

		if (!n || n >= CGROUP_ID_SIZE || !strstr(text, id))
			__builtin_trap();
	}
	{
		uint64_t v;

		memlimit__parse_value(&v, text);
	}
	free(text);

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "r");
	if (f) {
		if (!cgroup__parse_mounts(path, sizeof(path), f) && path[0] != '/')
			__builtin_trap();
		fclose(f);
	}
	f = fmemopen((void *)data, size, "r");
	if (f) {
		cgroup__parse_procs(f, count_pid, &npids, &st);
		/* a pid needs at least two bytes ("1\n" or a last "1") */
		if (npids > size || st.procs_lines_skipped > size)
			__builtin_trap();
		fclose(f);
	}
	return 0;
}
