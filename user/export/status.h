/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a run says about itself on stderr (never stdout: that is the data's): the start lines —
 * what is profiled and how, what it costs when the user did not choose it, where the result
 * goes and how to stop — and, on a terminal, a status line redrawn in place (elapsed, events,
 * samples, drops) like py-spy's, cleared before any other line and at the end.
 */
#ifndef PROF_STATUS_H
#define PROF_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What the start lines describe; strings may come from targets (they are printed escaped). */
struct status_plan {
	unsigned modes;	       /* enum prof_mode_bit */
	unsigned cpu_hz;       /* --cpu */
	uint64_t sample_bytes; /* --heap: 0 = every allocation */
	/* --heap, the path taken (loader stats after the attach): our sampler preloaded into
	 * -- CMD (no allocator probe), and the process images on their own otel_memory probes and
	 * on the allocator probes so far. */
	bool heap_preload;
	unsigned heap_otel, heap_uprobes;
	bool cmd_own_probes; /* -- CMD's executable carries them (its image is not attached yet) */
	/* The scope, one of: */
	const uint32_t *pids;
	const char *const *pid_names; /* NULL, or each pid's process name (NULL: unknown) */
	unsigned npids;
	const char *cmd; /* -- CMD: its name */
	const char *cgroup;
	const char *container;
	bool all;
	double duration; /* -d; 0: until the target exits or Ctrl-C */
	/* Where the result goes: files written at the end ("-": stdout), or a folder (-f
	 * codetracer), or one profile per interval into a directory, and/or a push. */
	const char *const *paths;
	unsigned npaths;
	bool folder;
	double interval;
	const char *output_dir;
	unsigned retain;
	const char *push_url;
};

/* The start lines, each ending in '\n', without the "bpftrace-prof: " prefix.  0 or -EIO. */
int status__start_lines(FILE *f, const struct status_plan *p);
/* The same through the log printer (escaped, shown unless -q).  0 or -errno. */
int status__say_start(const struct status_plan *p);
/* A --push URL as shown: without user:password@ and without ?query or #fragment (tokens). */
const char *status__url_shown(char *buf, size_t size, const char *url);

/* What the status line counts. */
struct status_counts {
	uint64_t events;  /* ring-buffer records consumed */
	uint64_t samples; /* of them, the ones with a stack (status__is_sample) */
	uint64_t drops;	  /* BPF loss counters summed */
};

/* Whether a ring-buffer record is a sample: an allocation, a cpu sample, an off-CPU period, a
 * call's return. */
bool status__is_sample(const void *data, size_t size);
/* The status line, cut to fit cols - 1 columns (so it never wraps and can be cleared by a
 * carriage return); cols 0: 80.  Returns buf. */
const char *status__format(char *buf, size_t size, int64_t elapsed_ns,
			   const struct status_counts *c, unsigned cols);

/* The first line shows this long after the start (a short run shows none)… */
#define STATUS_DELAY_NS	 (1000 * 1000000LL)
/* … and is redrawn at most this often. */
#define STATUS_PERIOD_NS (250 * 1000000LL)

struct status;
/*
 * A status line on f, a terminal (the caller checks: never with -q, --live or a file), from a
 * run that started at start_ns (CLOCK_MONOTONIC).  Hooks the log printer so every message
 * clears the line first.  0 or -ENOMEM.
 */
int status__new(struct status **out, FILE *f, int64_t start_ns);
/* Whether the line is due (STATUS_DELAY_NS, STATUS_PERIOD_NS): the counts cost system calls.
 * now_ns: CLOCK_MONOTONIC. */
bool status__due(const struct status *s, int64_t now_ns);
/* Draws the line (again) in place. */
void status__draw(struct status *s, int64_t now_ns, const struct status_counts *c);
/* Clears the line, unhooks the log printer.  NULL is a no-op. */
void status__free(struct status *s);

#endif /* PROF_STATUS_H */
