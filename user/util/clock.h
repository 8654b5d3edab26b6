/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The clocks we read, in one place.  CLOCK_MONOTONIC is bpf_ktime_get_ns()'s clock, so deadlines
 * and elapsed times compare with the events' timestamps; CLOCK_REALTIME only says when (wall
 * time in a file), never how long.
 */
#ifndef PROF_CLOCK_H
#define PROF_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns, us and ms (each truncated from the same reading's ns). */
int64_t clock__mono_ns(void);
int64_t clock__mono_us(void);
int64_t clock__mono_ms(void);
/* CLOCK_REALTIME in ns since the epoch. */
int64_t clock__real_ns(void);
/* Tests only (BPFTRACE_PROF_FAULT_*_MS): sleep as many milliseconds as the environment variable
 * name holds; nothing when it is unset or not positive. */
void clock__fault_delay(const char *name);
/* ns (>= 0) as a timespec: an absolute time on a clock, e.g. pthread_cond_timedwait's. */
void clock__timespec(struct timespec *out, int64_t ns);

#endif /* PROF_CLOCK_H */
