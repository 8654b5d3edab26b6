/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A collector as the session opens one, without a loader: its parts first, closed after it. */
#ifndef TEST_COLLECT_FIXTURE_H
#define TEST_COLLECT_FIXTURE_H

#include "agg/collect.h"
#include "agg/parts.h"

static struct run_parts parts;

static inline int open_collect(struct collect **c, const struct collect_opts *o)
{
	int err = run_parts__open(
		&parts, NULL, &(struct run_parts_opts){.modes = o->modes, .unwind_tables = true});

	return err ? err : collect__new(c, o, &parts);
}

static inline void close_collect(struct collect *c)
{
	collect__free(c);
	run_parts__close(&parts);
}

#endif /* TEST_COLLECT_FIXTURE_H */
