// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/pidns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/safe_open.h"

/* /proc/PID/status is about 1.5 KiB; NSpid comes in its first third. */
#define STATUS_MAX (64 * 1024)

int pidns__parse_nspid(uint32_t *out, const char *buf, size_t len)
{
	const char *end = buf + len;

	for (const char *l = buf; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;
		uint64_t v = 0, last = 0;
		bool digits = false, any = false;

		if (le - l < 6 || memcmp(l, "NSpid:", 6) != 0) {
			l = nl ? nl + 1 : end;
			continue;
		}
		/* Tab-separated pids, outermost (ours) first. */
		for (const char *s = l + 6; s <= le; s++) {
			if (s < le && *s >= '0' && *s <= '9') {
				v = v * 10 + (uint64_t)(*s - '0');
				if (v > UINT32_MAX)
					return -EINVAL;
				digits = true;
			} else if (s == le || *s == '\t' || *s == ' ') {
				if (digits) {
					last = v;
					any = true;
				}
				v = 0;
				digits = false;
			} else {
				return -EINVAL;
			}
		}
		if (!any || !last)
			return -EINVAL;
		*out = (uint32_t)last;
		return 0;
	}
	return -ENOENT;
}

int pidns__read_nspid(uint32_t *out, int proc_fd, uint32_t pid)
{
	char name[32], *buf;
	size_t n = 0;
	int err;

	snprintf(name, sizeof(name), "%u/status", pid);
	buf = malloc(STATUS_MAX);
	if (!buf)
		return -ENOMEM;
	/* A status file is ~1.5 KiB: 64 KiB more is not one. */
	err = safe_open__read_small(buf, STATUS_MAX, &n, proc_fd, name);
	if (!err)
		err = pidns__parse_nspid(out, buf, n);
	free(buf);
	return err;
}
