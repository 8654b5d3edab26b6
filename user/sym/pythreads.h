/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The names Python code gave its threads (threading.Thread(name=...)), read from a live
 * interpreter: CPython 3.8–3.13 never hands them to the OS, so the thread's comm stays
 * "python3.X".  The names live in the threading module: sys.modules["threading"]._active maps
 * each thread's ident (its pthread_t, PyThreadState.thread_id) to its Thread object, whose
 * instance attribute _name is the name.  The OS thread id comes from the matching thread state
 * (native_thread_id, 3.11+) or, before 3.11, from the Thread's own _native_id attribute (set by
 * threading in the thread itself since 3.8), so no libc layout is assumed.
 */
#ifndef PROF_SYM_PYTHREADS_H
#define PROF_SYM_PYTHREADS_H

#include <stddef.h>
#include <stdint.h>

#include "sym/pycode.h"
#include "sym/python.h"

/* Caps on what one read walks: every count is foreign. */
#define PYTHREADS_MAX_DICT    16384 /* entries of sys.modules or a module's dict */
#define PYTHREADS_MAX_THREADS 4096  /* thread states and _active entries of one interpreter */
#define PYTHREADS_MAX_ATTRS   1024  /* attributes of one Thread object */
#define PYTHREADS_MAX_INTERPS 16    /* interpreters (the main one and sub-interpreters) */
#define PYTHREADS_NAME_MAX    64    /* bytes of a name with its NUL, cut at a character */

struct pythread_name {
	uint32_t tid;		       /* the OS thread id */
	char name[PYTHREADS_NAME_MAX]; /* UTF-8, NUL-terminated */
};

/*
 * Thread names of the Python interpreter whose _PyRuntime lies at runtime_addr (read through
 * read/ctx, user/sym/pycode.h): tid -> name, each tid once, at most max of them (*n says how
 * many; further threads are left out).  Threads of _active with no live thread state, or whose
 * name or id cannot be read, are left out.  0 (also when the threading module was never
 * imported: *n = 0), or -errno: -EINVAL bad arguments or a version without these offsets,
 * -EFAULT the runtime, interpreter or a dict unreadable, -E2BIG a dict over its cap,
 * -ENOMEM.
 */
int pythreads__read(struct pythread_name *out, size_t max, size_t *n, const struct py_version *v,
		    pycode_read_fn read, void *ctx, uint64_t runtime_addr);

#endif /* PROF_SYM_PYTHREADS_H */
