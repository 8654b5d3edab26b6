/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `bpftrace-prof dump`'s output: each thread of each process with its state and its stack
 * (locations of a profile, leaf first), as text for people or one JSON document for machines.
 */
#ifndef PROF_STACKDUMP_H
#define PROF_STACKDUMP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct profile;

struct stackdump_thread {
	uint32_t tid;
	const char *comm;	 /* the kernel's thread name */
	const char *thread_name; /* Python's threading name; NULL: none */
	const char *state;    /* "running", "runnable", "sleeping", "disk-sleep", "stopped", … */
	const char *syscall;  /* the system call it is in; NULL: none (or not known by name) */
	int64_t syscall_nr;   /* < 0: not in a system call */
	const char *gil;      /* Python threads: "held" | "released"; NULL: not Python */
	const char *note;     /* why the stack is missing or short; NULL: nothing to say */
	const uint32_t *locs; /* profile location ids, leaf first */
	uint32_t nlocs;
};

struct stackdump_process {
	uint32_t pid;
	const char *name; /* process name */
	const char *exe;  /* executable path, "" when unknown */
	const struct stackdump_thread *threads;
	size_t nthreads;
};

/* Text: a header per process, per thread a line then one frame a line (leaf first). */
int stackdump__write_text(FILE *f, const struct profile *p, const struct stackdump_process *procs,
			  size_t n);
/* JSON: {"processes":[{"pid", "name", "exe", "threads":[{…, "frames":[…]}]}], "counters":{}}
 * with the profile's non-zero counters. */
int stackdump__write_json(FILE *f, const struct profile *p, const struct stackdump_process *procs,
			  size_t n);

#endif /* PROF_STACKDUMP_H */
