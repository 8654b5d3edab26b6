/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The bounds of every table of live heap blocks (the heap aggregator's, -f memtrace's and the
 * event traces' heap counter): a count of blocks per process and in all, checked against two
 * caps, so that one leaking process can neither grow our memory without limit nor take the
 * room the others need.  Each table counts its own blocks; the caps are the same for all.
 */
#ifndef PROF_LIVE_CAP_H
#define PROF_LIVE_CAP_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A heap_agg entry costs 49 bytes a slot (16 key + 32 value + 1 used byte) and a table keeps at
 * most half its slots used: 98-196 bytes a live block.  1 Mi blocks of one process is then at
 * most ~200 MiB; 4 Mi in all at most 8 Mi slots, ~400 MiB (+ the half-size table while it
 * grows); the writers' entries are half that.  Sampled runs never come near: BPF tracks at most
 * PROF_SAMPLED_ENTRIES (1 Mi) sampled blocks, a quarter of them per process.
 */
#define LIVE_CAP_PID   (1u << 20)
#define LIVE_CAP_TOTAL (4u << 20)

struct live_cap;

/* Caps as live_cap__set(lc, 0, 0).  0 or -ENOMEM. */
int live_cap__new(struct live_cap **out);
void live_cap__free(struct live_cap *lc);
/*
 * Blocks allowed per process and in all; 0: the default, LIVE_CAP_PID (lowered for tests by
 * the environment's BPFTRACE_PROF_LIVE_CAP, read once a run) and LIVE_CAP_TOTAL.
 */
void live_cap__set(struct live_cap *lc, uint32_t per_pid, uint32_t total);
/* Room for one more block of pid under both caps. */
bool live_cap__room(const struct live_cap *lc, uint32_t pid);
/* One more block of pid (whether there was room is the caller's check).  0 or -ENOMEM. */
int live_cap__add(struct live_cap *lc, uint32_t pid);
/* One block of pid fewer (none counted: nothing). */
void live_cap__sub(struct live_cap *lc, uint32_t pid);
/* pid's count back to zero (its blocks all gone: exec, exit). */
void live_cap__drop(struct live_cap *lc, uint32_t pid);
uint32_t live_cap__count(const struct live_cap *lc, uint32_t pid);
uint64_t live_cap__total(const struct live_cap *lc);

#endif /* PROF_LIVE_CAP_H */
