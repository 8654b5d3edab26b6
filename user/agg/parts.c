// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/parts.h"

#include <errno.h>
#include <string.h>

#include "agg/collect.h"
#include "proc/procinfo.h"
#include "sym/stackres.h"
#include "sym/symbolizer.h"
#include "track/tracker.h"

int run_parts__open(struct run_parts *p, struct loader *l, const struct run_parts_opts *o)
{
	int err;

	memset(p, 0, sizeof(*p));
	p->loader = l;
	err = symbolizer__new(&p->sym, &(struct symbolizer_opts){
					       .debuginfod = !o->no_debuginfod,
					       .debuginfod_timeout_s = o->debuginfod_timeout,
					       .no_inline = o->no_inline,
				       });
	if (!err)
		err = procinfo__new(&p->procs, NULL);
	/* Wide scopes label each process with its container, cgroup and own pid. */
	if (!err && o->wide)
		err = procinfo__enable_labels(p->procs);
	if (!err)
		err = stackres__new(&p->stacks, p->sym);
	if (!err)
		stackres__set_python_frames(p->stacks, o->python_frames);
	/* Symbols are read on a thread of their own: the event loop never waits for them. */
	if (!err)
		err = stackres__start_worker(p->stacks);
	if (!err)
		err = tracker__new(
			&p->tracker,
			&(struct tracker_opts){
				.loader = l,
				.stacks = p->stacks,
				.procs = p->procs,
				.wide = o->wide,
				.cmd = o->cmd,
				.hold_exits = o->hold_exits,
				.unwind_tables = o->unwind_tables &&
						 (o->modes &
						  (MODE_HEAP | MODE_CPU | MODE_OFFCPU | MODE_DUMP)),
				.unwind_memory = o->unwind_memory,
				.unwind_max_rows = o->unwind_max_rows,
				.unwind_max_cfi = o->unwind_max_cfi,
				.probe_allocators = (o->modes & MODE_HEAP) && (o->wide || o->cmd),
			});
	if (err)
		run_parts__close(p);
	return err;
}

void run_parts__close(struct run_parts *p)
{
	stackres__free(p->stacks);
	tracker__free(p->tracker);
	procinfo__free(p->procs);
	symbolizer__free(p->sym);
	memset(p, 0, sizeof(*p));
}
