/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Exact --heap in a Python process: a probe on CPython's code_dealloc (PyCode_Type's
 * tp_dealloc) for that process alone, so that the heap walker may name a frame from its
 * per-CPU cache of code objects instead of reading the object again (bpf/python.bpf.h): every
 * code object freed in the process moves its entry's code_epoch, which ends what was cached
 * for it.  Not in sampled mode, where a stack is walked for one allocation in thousands: the
 * trap per code object freed (15,000 for `import torch` and its exit) would buy nothing.
 */
#ifndef PROF_PY_WATCH_H
#define PROF_PY_WATCH_H

#include <stdint.h>

#include "unwind/unwinder.h"

struct loader;

/*
 * Probe code (the mapping of the process's interpreter file holding code_dealloc, opened
 * through /proc/PID/map_files: the mapped file itself) for pid: 0 once attached, -EOPNOTSUPP
 * when this run has no such probe (sampled or no --heap), else -errno.  A probe pid had
 * before (another image) goes first.
 */
int py_watch__attach(struct loader *l, const char *proc_root, uint32_t pid,
		     const struct unwinder_py_code *code);

/* pid's probe goes (it left, or its image is no longer Python). */
void py_watch__gone(struct loader *l, uint32_t pid);

#endif /* PROF_PY_WATCH_H */
