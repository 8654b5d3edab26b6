/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A background worker's priority: the unwind-table builder and the DWARF line indexer run at
 * nice 19 while nobody waits on them, so that on a small machine their catching up does not
 * take a core from the processes we profile (a sampled `import torch` on 2 cores: 1.66x
 * untraced at nice 0, 1.30x with the builder at 19). Whoever waits on a worker (processes held
 * for tables, a start, the end) raises it to its own nice for that long: a profiled process
 * must never stay stopped behind a thread the scheduler starves.
 * BPFTRACE_PROF_WORKER_NICE=N (0-19) sets the background nice; 0 turns this off, and so does
 * a profiler that could not raise a worker again (no CAP_SYS_NICE, RLIMIT_NICE too low).
 */
#ifndef PROF_BGPRIO_H
#define PROF_BGPRIO_H

#include <pthread.h>
#include <sys/types.h>

struct bgprio {
	pthread_mutex_t lock;
	pid_t tid;   /* the worker's thread id, 0 until it runs */
	int waiters; /* callers blocked on it: > 0 means raised */
	int low;     /* the background nice */
	int high;    /* the nice of the thread that set it up */
};

/* Before the worker starts (on the thread that creates it). */
void bgprio__init(struct bgprio *p);
void bgprio__destroy(struct bgprio *p);
/* First thing in the worker thread: name it (ps, top, perf show the name), record it and lower
 * it (unless raised meanwhile). */
void bgprio__worker(struct bgprio *p, const char *name);
/* Around a wait on the worker; they nest and may come from several threads. */
void bgprio__raise(struct bgprio *p);
void bgprio__lower(struct bgprio *p);

#endif /* PROF_BGPRIO_H */
