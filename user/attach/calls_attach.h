/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --calls attach: find the interpreters a target runs (from its mappings, or for `-- CMD`
 * from the command's executable, shebang and needed libraries), know which of their USDT
 * probes actually fire for that version, check what the runtime needs to fire them
 * (USE_ZEND_DTRACE=1, -XX:+ExtendedDTraceProbes), warn about the limits, and attach.
 * The classification and checks are pure functions over text, for the unit tests.
 */
#ifndef PROF_CALLS_ATTACH_H
#define PROF_CALLS_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof_calls.h"

struct loader;
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
bool calls_attach__classify(const char *path, struct calls_runtime_file *out);
/* Every distinct runtime file mapped executable in m.  Returns how many were stored. */
size_t calls_attach__detect(const struct maps *m, struct calls_runtime_file *out, size_t max);
/* JAVA_VERSION="17.0.15" / "1.8.0_392" from the len bytes of a JDK's release file (no NUL
 * needed) -> major (17, 8), -1. */
int calls_attach__java_release_major(const char *text, size_t len);
/* Biggest release file read: OpenJDK's is about 1.5 KiB. */
#define CALLS_RELEASE_MAX (64 * 1024)
/* *out = the major version in the release file at path, resolved inside root_fd (-1: on the
 * host; safe_open__at), -1 when it names none.  Only a
 * regular file, not through a final symlink, first CALLS_RELEASE_MAX bytes: -ELOOP for a
 * symlink, -EINVAL for a FIFO or device, -errno. */
int calls_attach__java_release_read(int *out, int root_fd, const char *path);
void calls_attach__plan(struct calls_plan *out, enum prof_runtime rt, int major, int minor);

/* A marker probe (exceptions, imports, logs: enum prof_marker_kind), for the traces that show
 * them.  Each is optional: a runtime built without it still has its calls. */
struct calls_marker_probe {
	const char *provider, *name;
	enum prof_marker_kind kind;
};
#define CALLS_MAX_MARKERS 4
/* The marker probes of a runtime into out (at most CALLS_MAX_MARKERS); how many. */
int calls_attach__marker_plan(struct calls_marker_probe *out, enum prof_runtime rt);
/* Whether a NUL-separated list (environ, cmdline) has NAME=VALUE with VALUE a nonzero
 * integer (PHP's getenv test) / holds the string exactly. */
bool calls_attach__env_enabled(const char *list, size_t len, const char *name);
bool calls_attach__list_has(const char *list, size_t len, const char *s);
/* Whether a HotSpot command line / option variables enable the method probes. */
bool calls_attach__java_probes_enabled(const char *cmdline, size_t cmdline_len, const char *environ,
				       size_t environ_len);

struct calls_attach;

/* on_thread(ctx, pid, tid, ts) is told of every thread alive when a process is attached (it may
 * be mid-call: its first returns have no entry). */
typedef int (*calls_thread_fn)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ts);
int calls_attach__new(struct calls_attach **out, struct loader *l, calls_thread_fn on_thread,
		      void *ctx);
void calls_attach__free(struct calls_attach *ca);
/* Attach to the runtimes of running process pid (probes limited to it).  Its threads alive
 * now are marked as seen mid-call.  m, here and below: pid's mappings as the tracker read them
 * at the event (NULL: read now).  Returns probes attached (0: none found) or -errno. */
int calls_attach__pid(struct calls_attach *ca, uint32_t pid, const struct maps *m);
/* Attach, for every process (filtered in BPF), to the runtimes `cmd` will run, before it
 * execs.  Returns probes attached or -errno. */
int calls_attach__cmd(struct calls_attach *ca, char *const *cmd);
/* A followed child exec'd: attach to runtimes its maps show that were not attached yet. */
int calls_attach__rescan(struct calls_attach *ca, uint32_t pid, const struct maps *m);
/* A process of `-- CMD`'s tree is stopped at its exec (ptrace), the new image not yet run:
 * attach (every process, filtered in BPF) to the runtime it is, the runtime libraries its
 * DT_NEEDED names and, for a JDK launcher, the libjvm.so it will dlopen — all resolved
 * inside its root — and check its own environment and command line for the flags the
 * runtime needs.  Returns probes newly attached or -errno. */
int calls_attach__exec(struct calls_attach *ca, uint32_t pid, const struct maps *m);
/* Every exec of `-- CMD`'s tree will reach calls_attach__exec (the tree is traced): the flags
 * are checked there, against the process itself, and calls_attach__cmd does not guess them. */
void calls_attach__set_exec_stops(struct calls_attach *ca, bool on);
/* Also attach the runtimes' marker probes (exceptions, imports, logs) next to their call
 * probes, for a trace that shows them (-f firefox).  Off by default: profiles have no use
 * for them. */
void calls_attach__set_markers(struct calls_attach *ca, bool on);
/* Probes attached so far over the session (0: no runtime seen yet). */
int calls_attach__total(const struct calls_attach *ca);
/* Print why nothing could be attached (one line) — after calls_attach__pid/cmd found none —
 * and forget the reasons. */
void calls_attach__explain_none(struct calls_attach *ca, const char *target);
/* Notes for the profile's comments: limits and warnings met while attaching. */
size_t calls_attach__notes(const struct calls_attach *ca, const char *const **out);

#endif /* PROF_CALLS_ATTACH_H */
