// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/oom_attach.h"

#include <errno.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

#include "attach/loader.h"

int oom_attach__watch(struct loader *l)
{
	struct bpf_program *prog = loader__oom_prog(l);
	struct bpf_link *link;
	int err;

	/* A test seam: the kernel without the tracepoint, as older ones are. */
	if (getenv("BPFTRACE_PROF_FAULT_NO_OOM"))
		return -ENOENT;
	if (!prog)
		return -ENOENT;
	link = bpf_program__attach_raw_tracepoint(prog, "mark_victim");
	if (!link)
		return -errno;
	err = loader__keep_link(l, link);
	return err;
}
