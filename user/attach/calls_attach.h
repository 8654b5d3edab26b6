/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --calls attach: find the interpreters a target runs (from its mappings, or for `-- CMD`
 * from the command's executable, shebang and needed libraries), know which of their USDT
 * probes actually fire for that version, check what the runtime needs to fire them
 * (USE_ZEND_DTRACE=1, -XX:+ExtendedDTraceProbes), warn about the limits, and attach.
 * The classification and checks are pure functions over text, for the unit tests: in
 * calls_plan.h.
 */
#ifndef PROF_CALLS_ATTACH_H
#define PROF_CALLS_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loader;
struct maps;

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
