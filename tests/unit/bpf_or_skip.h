/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The unit tests that load BPF (as root): whether this run can, asked by creating a map.  Where
 * it cannot, the tests skip, except under CI=true, where that fails their group's setup.
 */
#ifndef TESTS_BPF_OR_SKIP_H
#define TESTS_BPF_OR_SKIP_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

/* 0 with *no_bpf set as BPF is there or not; -1 when it is not and CI=true. */
static inline int bpf_or_skip(bool *no_bpf)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "probe", 4, 4, 1, NULL);
	const char *ci = getenv("CI");

	*no_bpf = fd < 0;
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return ci && strcmp(ci, "true") == 0 ? -1 : 0;
}

#endif /* TESTS_BPF_OR_SKIP_H */
