/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * OOM kills: the lifecycle object's mark_victim program (bpf/proc.bpf.c) attached to the
 * kernel's oom/mark_victim tracepoint.  Optional: a kernel without it loads everything else,
 * and the caller says and counts that OOM kills go unseen.
 */
#ifndef PROF_OOM_ATTACH_H
#define PROF_OOM_ATTACH_H

struct loader;

/* 0, or -errno (-ENOENT: the kernel has no such tracepoint). */
int oom_attach__watch(struct loader *l);

#endif /* PROF_OOM_ATTACH_H */
