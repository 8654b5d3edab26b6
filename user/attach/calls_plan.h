/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --calls planning, pure functions over text for the unit tests and fuzzers: which runtime a
 * file is (by name), which of its USDT probes to attach for its version and what to tell the
 * user about them, and the checks of what the runtime needs to fire them (USE_ZEND_DTRACE=1,
 * -XX:+ExtendedDTraceProbes) in a target's environment and command line.  calls_attach.c
 * attaches what these plan.
 */
#ifndef PROF_CALLS_PLAN_H
#define PROF_CALLS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof_calls.h"

struct maps;

/* A file that can carry a runtime's probes, as found by name. */
struct calls_runtime_file {
	enum prof_runtime runtime;
	int major, minor; /* -1 when the name does not say */
	char path[4096];
};

/* One probe to attach. */
struct calls_probe {
	const char *provider, *name;
	bool ret;      /* the return program (else the entry one) */
	uint8_t flags; /* PROF_CALL_F_* passed as the USDT cookie */
};

#define CALLS_MAX_PROBES 4

/* What to attach for a runtime version and what to tell the user about it. */
struct calls_plan {
	struct calls_probe probes[CALLS_MAX_PROBES];
	int nprobes;	   /* 0: this version has no usable call probes */
	const char *limit; /* a known limit of this version, or NULL */
};

/* Runtime of a file from its name ("libpython3.11.so.1.0", "php8.2", "libjvm.so", …); the
 * version when the name carries it.  false when it is none of ours. */
bool calls_plan__classify(const char *path, struct calls_runtime_file *out);
/* Every distinct runtime file mapped executable in m.  Returns how many were stored. */
size_t calls_plan__detect(const struct maps *m, struct calls_runtime_file *out, size_t max);
/* JAVA_VERSION="17.0.15" / "1.8.0_392" from the len bytes of a JDK's release file (no NUL
 * needed) -> major (17, 8), -1. */
int calls_plan__java_release_major(const char *text, size_t len);
/* Biggest release file read: OpenJDK's is about 1.5 KiB. */
#define CALLS_RELEASE_MAX (64 * 1024)
/* *out = the major version in the release file at path, resolved inside root_fd (-1: on the
 * host; safe_open__at), -1 when it names none.  Only a
 * regular file, not through a final symlink, first CALLS_RELEASE_MAX bytes: -ELOOP for a
 * symlink, -EINVAL for a FIFO or device, -errno. */
int calls_plan__java_release_read(int *out, int root_fd, const char *path);
void calls_plan__init(struct calls_plan *out, enum prof_runtime rt, int major, int minor);

/* A marker probe (exceptions, imports, logs: enum prof_marker_kind), for the traces that show
 * them.  Each is optional: a runtime built without it still has its calls. */
struct calls_marker_probe {
	const char *provider, *name;
	enum prof_marker_kind kind;
};
#define CALLS_MAX_MARKERS 4
/* The marker probes of a runtime into out (at most CALLS_MAX_MARKERS); how many. */
int calls_plan__markers(struct calls_marker_probe *out, enum prof_runtime rt);
/* Whether a NUL-separated list (environ, cmdline) has NAME=VALUE with VALUE a nonzero
 * integer (PHP's getenv test) / holds the string exactly. */
bool calls_plan__env_enabled(const char *list, size_t len, const char *name);
bool calls_plan__list_has(const char *list, size_t len, const char *s);
/* Whether a HotSpot command line / option variables enable the method probes. */
bool calls_plan__java_probes_enabled(const char *cmdline, size_t cmdline_len, const char *environ,
				     size_t environ_len);

/* The last component of path (path itself when it has no '/'). */
const char *calls_plan__base_name(const char *path);

#endif /* PROF_CALLS_PLAN_H */
