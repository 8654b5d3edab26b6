/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --metrics [ADDR:]PORT: our own health for Prometheus, at /metrics in its text exposition
 * format (version 0.0.4): every counter of the run (the lists of include/prof_common.h: drops,
 * events, bookkeeping) as bpftrace_prof_<name>_total with its # HELP and # TYPE lines, and a few
 * gauges (memory, processes tracked, BPF maps).  No per-process series, no label a target
 * controls, nothing secret.  The event loop renders the text about once a second
 * (metrics__set); a thread of our own serves the latest copy, one request at a time, each
 * read capped in size and time, so a slow or hostile client can hold nothing of ours.
 */
#ifndef PROF_METRICS_H
#define PROF_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "attach/ring.h"

struct profile;
struct metrics;

/* Our own levels, besides the counters. */
struct metrics_gauges {
	uint64_t rss_bytes;		   /* our resident memory */
	uint64_t bpf_map_bytes;		   /* kernel memory of our BPF maps (their memlock) */
	uint64_t processes_tracked;	   /* processes the tracker follows now */
	uint64_t uptime_ns;		   /* since profiling started */
	uint64_t events;		   /* ring-buffer records consumed (a counter) */
	struct ring_backlog_stats backlog; /* held: a gauge; full: a counter */
};

/* The default address: the loopback only (a port alone binds 127.0.0.1). */
#define METRICS_DEFAULT_ADDR "127.0.0.1"
/* A request's bytes read at most, and how long a client may take to send them. */
#define METRICS_REQUEST_MAX  4096
#define METRICS_TIMEOUT_MS   2000

/* "PORT", "ADDR:PORT" or "[ADDR6]:PORT" into *sa.  0 or -EINVAL. */
int metrics__parse_addr(const char *spec, struct sockaddr_storage *sa, socklen_t *len);
/* Listens now (an address in use is said at start, not later) and serves from a thread.
 * 0 or -errno. */
int metrics__start(struct metrics **out, const char *spec);
/* Stops the thread and closes the socket.  NULL is a no-op. */
void metrics__free(struct metrics *m);
/* The text served from now on (copied).  0 or -ENOMEM. */
int metrics__set(struct metrics *m, const char *text, size_t len);
/* p's counters and g as exposition text into a malloc'ed *out (*len bytes).  0 or -ENOMEM. */
int metrics__render(char **out, size_t *len, const struct profile *p,
		    const struct metrics_gauges *g);
/* Our RSS and our BPF maps' kernel memory, read from /proc/self. */
void metrics__read_self(struct metrics_gauges *g);

#endif /* PROF_METRICS_H */
