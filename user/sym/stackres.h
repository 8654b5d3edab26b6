/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks as they arrive in records (raw frames) -> small ids -> symbolized frames -> profile
 * frames (profile/build.c makes them profile locations).  A stack is interned the first time it
 * is seen and symbolized soon after, while its process is alive (so mappings added by dlopen are
 * still readable).
 *
 * The symbolizer is used through stackres only.  With stackres__start_worker, every use of it
 * (resolving new stacks, reading a process's mappings, forgetting one) runs on a thread of its
 * own, in the order asked: the thread that consumes events never waits for ELF files or /proc
 * reads (host-wide, it would fall behind and the ring buffer would drop).  Symbols are read
 * only after stackres__sync; between a sync and the next call that queues work, that thread may
 * use the symbolizer directly.  Without the worker (unit tests), everything runs at once.
 */
#ifndef PROF_STACKRES_H
#define PROF_STACKRES_H

#include <stdbool.h>
#include <stdint.h>

#include "sym/symbolizer.h"

struct hashmap;
struct py_version;
struct stackres;

enum stack_kind {
	STACK_USER_RET, /* user stack whose every frame is a return address (taken at a uretprobe)
			 */
	STACK_USER,	/* user stack whose leaf is the interrupted instruction */
	STACK_KERNEL,
};

/*
 * What stackres__frames shows of a stack with Python frames (--python-frames).  Python frames
 * already stand where the eval loop ran them (bpf/python.bpf.h); PYTHON also leaves out the
 * interpreter's own native frames between the innermost and the outermost Python frame (frames
 * of the file its CPython runs from: libpython's call path, builtins such as sorted), as py-spy
 * shows stacks.  Frames of other files there (C extensions, libc, libffi) stay, and so does every
 * frame leafward of the innermost Python frame (the C code a Python line is in) and rootward of
 * the outermost (main, Py_RunMain; an eval frame whose Python frames could not be read is
 * always rootward of every Python frame read: the walk stops following the chain there).
 * Stacks without Python frames are never changed.
 */
enum stackres_py_frames {
	STACKRES_PY_PYTHON = 0, /* the default */
	STACKRES_PY_ALL,	/* every native frame, as walked */
};

/* The id of the empty stack (no frames, or lost): it adds no location. */
#define STACKRES_NONE (-1)

int stackres__new(struct stackres **out, struct symbolizer *s);
void stackres__free(struct stackres *r);
/* How stacks interned from now on are shown (STACKRES_PY_PYTHON until set): before the first. */
void stackres__set_python_frames(struct stackres *r, enum stackres_py_frames how);

/*
 * The id of the stack ips[0..n) (leaf first) of process pid: the same (pid, kind, frames) give
 * the same id; kernel stacks are shared by every process.  A stack seen for the first time is
 * symbolized now.  n == 0 gives STACKRES_NONE.  0 or -ENOMEM.
 */
int stackres__intern(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		     const uint64_t *ips, unsigned n);

/*
 * The memory of the allocation stacks held (STACK_USER_RET: the heap's) is capped per process
 * and in all, so one process with ever new stacks (an exact --heap of a program whose Python
 * lines make every allocation's stack new) neither grows ours without limit nor takes the
 * others' room: a new stack past either cap is not kept; its event goes to the process's one
 * stack [stacks capped] (PROF_STACK_CAPPED_NAME), counted (stackres__capped).  A stack is
 * charged its frames, 64 bytes each, and 128 bytes of bookkeeping (a view of Python frames or
 * inlined calls can add as much again); a process's charge goes when it is forgotten.  Sample
 * stacks (cpu, off-cpu) are not capped: a continuous profile of a long-lived process would lose
 * its new stacks for good, and nothing frees a live process's old ones yet.
 */
#define STACKRES_CAP_PID   (512ULL << 20)
#define STACKRES_CAP_TOTAL (2048ULL << 20)
/* Bytes allowed per process and in all; 0: the defaults (the per-process one lowered for tests
 * by the environment's BPFTRACE_PROF_STACK_CAP, in bytes). */
void stackres__set_caps(struct stackres *r, uint64_t per_pid, uint64_t total);
/* Allocations whose stack was not kept since the start (or the last reset). */
uint64_t stackres__capped(struct stackres *r, bool reset);

/* Symbolize on a worker thread from now on.  0 or -errno (then still on the caller's). */
int stackres__start_worker(struct stackres *r);
/*
 * Wait until everything asked so far is done.  Returns the first -ENOMEM any of it met (the
 * worker's error stays: the session ends on it).
 */
int stackres__sync(struct stackres *r);
/* That error without waiting (0 while none). */
int stackres__error(const struct stackres *r);

/*
 * The symbolizer's view of pid, in order with the stacks: its mappings (first sight, fork, the
 * loader mapped libraries), afresh (exec, or its final mappings at exit), drop it (gone for
 * good).  m: the tracker's read of them at the event (the worker takes a reference), or NULL:
 * the worker reads them.  0 or -ENOMEM (queueing); a process gone is no error.
 */
int stackres__load_pid(struct stackres *r, uint32_t pid, struct maps *m);
int stackres__reload_pid(struct stackres *r, uint32_t pid, struct maps *m);
int stackres__drop_pid(struct stackres *r, uint32_t pid);
/* Call fn(ctx, arg) once all asked before is done (on the worker): e.g. resume a process held
 * at its exit once its stacks are symbolized.  0 or -ENOMEM (not queued, not called). */
int stackres__after(struct stackres *r, void (*fn)(void *ctx, uint64_t arg), void *ctx,
		    uint64_t arg);

/* pid runs the CPython of layout v (NULL: none) as py says (its _PyRuntime, PyCode_Type and
 * _PyEval_EvalFrameDefault): its Python frames are named (and its interpreter's frames known)
 * from now on, in order with the stacks.  0 or -ENOMEM. */
int stackres__python(struct stackres *r, uint32_t pid, const struct py_version *v,
		     const struct prof_py_proc *py);

/* Thread tid of Python process pid was seen: learn its Python thread name (in order).  0 or
 * -ENOMEM. */
int stackres__python_thread(struct stackres *r, uint32_t pid, uint32_t tid);
/* Its name once learnt (after stackres__sync), NULL when none. */
const char *stackres__thread_name(const struct stackres *r, uint32_t pid, uint32_t tid);
/* Read Python process pid's thread names now (0: every Python process's; in order): at its
 * exit stop, and before a profile is built.  0 or -ENOMEM. */
int stackres__python_names(struct stackres *r, uint32_t pid);
/* Read again the names of Python processes with a thread seen unnamed (at most every 100 ms
 * each; symbolizer__python_retry).  0 or -ENOMEM. */
int stackres__python_retry(struct stackres *r);

/*
 * Debug files debuginfod sent and DWARF indexed since the last call (symbolizer_opts.debuginfod,
 * symbolizer__defer_dwarf): taken, in order with the stacks, and every stack's frames of their
 * files named again.  The event loop calls it now and then (STACKRES_TICK), the writers before
 * a profile: the first profile's (STACKRES_PROFILE) waits for the DWARF asked for so far, which
 * is indexed from then on; before the run's final profiles (STACKRES_LAST) it waits for that and
 * for the files still being fetched, at most one fetch timeout (said on stderr).  0 or -ENOMEM.
 */
enum stackres_when {
	STACKRES_TICK,
	STACKRES_PROFILE,
	STACKRES_LAST,
};
int stackres__debug(struct stackres *r, enum stackres_when when);

/* pid exec'd: its addresses now mean other code, so its later stacks are interned afresh. */
int stackres__exec(struct stackres *r, uint32_t pid);

/*
 * Continuous mode: pid is gone and its interval written; its user stacks are freed and their
 * ids reused.  The caller guarantees no aggregate refers to them any more.
 */
void stackres__forget_pid(struct stackres *r, uint32_t pid);
/* Add every pointer the interned stacks hold from the symbolizer (each frame's map, name,
 * system_name and file, as `const void *` keys) to used, for symbolizer__sweep (waits for the
 * worker first).  0 or -ENOMEM. */
int stackres__used(struct stackres *r, struct hashmap *used);

/* Stacks interned so far (STACKRES_NONE is not one). */
unsigned stackres__count(const struct stackres *r);

/* A frame of an interned stack: its address and what it symbolized to (at intern time). */
struct stackres_frame {
	uint64_t addr;
	struct sym_result sym;
};

/* The frames (leaf first) of stack id as stackres__set_python_frames says; STACKRES_NONE or an
 * unknown id: none (*n = 0).  With the worker, their symbols are complete after stackres__sync
 * only.  Every output takes its frames from here: they all show the same stack. */
const struct stackres_frame *stackres__frames(const struct stackres *r, int32_t id, unsigned *n);

#endif /* PROF_STACKRES_H */
