/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Debug files fetched by build id from the debuginfod servers of DEBUGINFOD_URLS, as perf and gdb
 * do, through libdebuginfod (elfutils) on a thread of its own: never on the event path, never in
 * the symbolizer's queue (a stalled server delays nothing but other fetches).  The symbolizer
 * asks for a file whose frames it cannot name fully (no .symtab, no local debug file); what
 * arrives is taken by the thread that symbolizes and names those frames from then on.
 *
 * libdebuginfod keeps the files in its disk cache (DEBUGINFOD_CACHE_PATH, else
 * $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client) and remembers there a
 * build id no server has (its negative cache, 10 min by default).  Here: each build id is asked
 * for once per run (a failure again after DBGFETCH_RETRY_S), one fetch at a time, each cut at a
 * timeout and a size cap.  The files are foreign bytes: the caller reads them with the same
 * limits as a target's own (elf_file__use_debug_file).
 */
#ifndef PROF_SYM_DEBUGINFOD_H
#define PROF_SYM_DEBUGINFOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DBGFETCH_TIMEOUT_S 30		/* one file's fetch, at most (--debuginfod-timeout) */
#define DBGFETCH_MAX_BYTES (2ULL << 30) /* a larger file is not fetched (DEBUGINFOD_MAXSIZE) */
#define DBGFETCH_RETRY_S   600		/* a build id whose fetch failed is asked again after */

struct dbgfetch;

struct dbgfetch_opts {
	unsigned timeout_s; /* 0: DBGFETCH_TIMEOUT_S */
	uint64_t max_bytes; /* 0: DBGFETCH_MAX_BYTES, or DEBUGINFOD_MAXSIZE when smaller */
};

/* Written by the fetch thread, read with dbgfetch__stats. */
struct dbgfetch_stats {
	uint64_t fetched;  /* files received (from a server or libdebuginfod's cache) */
	uint64_t missing;  /* build ids no server has */
	uint64_t timeouts; /* fetches cut at the timeout */
	uint64_t failed;   /* other failures: server errors, over the size cap */
};

/* A file received: build id (lowercase hex) and its path in libdebuginfod's cache. */
struct dbgfetch_file {
	char *build_id, *path;
};

/*
 * A fetcher for the servers of DEBUGINFOD_URLS: *out NULL (and 0) when it names none.  Its thread
 * starts with the first request.  0 or -ENOMEM.
 */
int dbgfetch__new(struct dbgfetch **out, const struct dbgfetch_opts *opts);
/* A fetch under way is cut (within a second), then the thread ends. */
void dbgfetch__free(struct dbgfetch *f);
/*
 * Fetch the debug file of build id (lowercase hex, 2 to 128 digits) unless asked before: queued,
 * never waited for.  Any thread.  0, -EINVAL (not such a build id) or -ENOMEM.
 */
int dbgfetch__want(struct dbgfetch *f, const char *build_id);
/* Requests queued or under way (any thread). */
unsigned dbgfetch__pending(struct dbgfetch *f);
/* Wait until none is pending or ms have passed; true when none is. */
bool dbgfetch__wait(struct dbgfetch *f, unsigned ms);
/*
 * The run's last profile is next: wait for what is pending up to ms, then cut it (counted as
 * timeouts) and ask for nothing more.  Any thread.
 */
void dbgfetch__finish(struct dbgfetch *f, unsigned ms);
/* Files received and not taken yet (any thread, no lock: a hint for whether to take). */
bool dbgfetch__arrived(const struct dbgfetch *f);
/* The files received since the last take: *out (free with dbgfetch__free_files), *n of them. */
int dbgfetch__take(struct dbgfetch *f, struct dbgfetch_file **out, size_t *n);
void dbgfetch__free_files(struct dbgfetch_file *files, size_t n);
void dbgfetch__stats(struct dbgfetch *f, struct dbgfetch_stats *out);
/* One fetch's timeout. */
unsigned dbgfetch__timeout_s(const struct dbgfetch *f);

#endif /* PROF_SYM_DEBUGINFOD_H */
