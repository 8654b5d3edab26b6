/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef HOLDS_H
#define HOLDS_H
/*
 * Processes BPF stopped for us (exec, loader-startup and exit holds: bpf/proc.bpf.c stop_self)
 * and their resumption, whatever happens to us.
 *
 * - Each hold is taken once its record is consumed: a pidfd is opened and checked against the
 *   start time the record carries, so a pid reused after the held process was killed is never
 *   signalled.  The hold is then resumed exactly once (SIGCONT through that pidfd, then its
 *   prof_held entry deleted): by whoever finishes its work, or at HOLDS_MAX_MS.
 * - The watchdog, a process of its own forked before any BPF object exists, holds prof_held's
 *   fd and, when we die (SIGKILL, a crash, the OOM killer: our end of its socket closes), resumes
 *   every process the map still lists — records still in the ring buffer included.
 */
#include <stdbool.h>
#include <stdint.h>

#include "prof_common.h"

/* No process stays held longer than this, whatever its work (an exit waits for the
 * symbolizer's whole queue): resumed, counted as hold_timeouts. */
#define HOLDS_MAX_MS 1000

struct holds;

struct holds_stats {
	uint64_t timeouts; /* resumed at HOLDS_MAX_MS */
	uint64_t gone;	   /* process gone or replaced before its record was read */
};

/* map_fd: prof_held (not owned). */
int holds__new(struct holds **out, int map_fd);
/* Resumes every hold still taken. */
void holds__free(struct holds *h);
/*
 * Take the hold that record e (a hold's record) announces: 0 and *out (a hold id, never 0);
 * -ESRCH when the process is gone or another process has its pid now (its entry is deleted,
 * counted in gone); -ENOMEM (the process is resumed first).
 */
int holds__take(struct holds *h, uint64_t *out, const struct prof_proc_event *e);
/* Resume hold id unless it was already (any thread). */
void holds__resume(struct holds *h, uint64_t id);
/* Resume the holds taken more than HOLDS_MAX_MS before now_ms (CLOCK_MONOTONIC). */
void holds__expire(struct holds *h, int64_t now_ms);
void holds__resume_all(struct holds *h);
/* The counts since the last reset. */
struct holds_stats holds__stats(struct holds *h, bool reset);

/*
 * Fork the watchdog.  Call from the main thread before any BPF object, thread or other child
 * exists: it inherits nothing but its socket.  *out: our end (close-on-exec), kept open until we
 * exit; 0 or -errno.
 */
int holds__watchdog_start(int *out);
/* Hand the watchdog prof_held's fd (SCM_RIGHTS).  0 or -errno. */
int holds__watchdog_arm(int sock, int map_fd);
/* We end normally, every hold resumed: the watchdog checks once more and exits now. */
void holds__watchdog_bye(int sock);

#endif /* HOLDS_H */
