/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The names of one CPython process's frames and threads, for the symbolizer: code objects read
 * from the live process once and cached (sym/pycode.c), thread names read from the interpreter
 * (sym/pythreads.c) and read again while a thread seen is still unnamed.  Strings are interned
 * in the symbolizer's pool, which keeps what pynames__mark marks.
 *
 * The state outlives the symbolizer's forget (exec, the final re-read at exit): stacks queued
 * before the exit stop are still to be named, and thread names are wanted when the profile is
 * built, after the process is gone.  An exec that changes the interpreter says so
 * (pynames__set_python).
 */
#ifndef PROF_SYM_PYNAMES_H
#define PROF_SYM_PYNAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "sym/symbolizer.h"
#include "util/strpool.h"

struct py_version;
struct pynames;

/* Empty (no interpreter known yet); strings go to pool, which outlives it.  0 or -ENOMEM. */
int pynames__new(struct pynames **out, struct strpool *pool);
void pynames__free(struct pynames *py);
/* The process runs the CPython of layout v (NULL: no more): symbolizer__set_python. */
void pynames__set_python(struct pynames *py, const struct py_version *v, uint64_t runtime,
			 uint64_t code_type);
/* It runs a CPython (pynames__set_python gave a layout). */
bool pynames__running(const struct pynames *py);
/*
 * Name the Python frame of pid as symbolizer__resolve_python says, into out's name, file and
 * lines; out->name NULL when the code object could not be read (or is another).  0 or -ENOMEM.
 */
int pynames__resolve(struct pynames *py, uint32_t pid, uint64_t frame, uint64_t print,
		     struct sym_result *out);
/* Thread tid of pid was seen: symbolizer__python_thread.  0 or -ENOMEM. */
int pynames__thread(struct pynames *py, uint32_t pid, uint32_t tid);
/* Read again if a thread is wanted and the last read is 100 ms old: symbolizer__python_retry. */
int pynames__retry(struct pynames *py, uint32_t pid);
/* Read the thread names now (when it runs a CPython).  0 or -ENOMEM. */
int pynames__read(struct pynames *py, uint32_t pid);
/* tid's Python thread name (interned), NULL when none is known. */
const char *pynames__thread_name(const struct pynames *py, uint32_t tid);
/* Call mark(ctx, s) on every pool string it holds; stops at (and returns) the first error. */
int pynames__mark(const struct pynames *py, int (*mark)(void *ctx, const void *s), void *ctx);

#endif
