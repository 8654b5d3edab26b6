// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/clock.h"

#include <stdlib.h>

/* clock_gettime cannot fail for these two clocks with a valid pointer. */
static int64_t read_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t clock__mono_ns(void)
{
	return read_ns(CLOCK_MONOTONIC);
}

int64_t clock__mono_us(void)
{
	return read_ns(CLOCK_MONOTONIC) / 1000;
}

int64_t clock__mono_ms(void)
{
	return read_ns(CLOCK_MONOTONIC) / 1000000;
}

int64_t clock__real_ns(void)
{
	return read_ns(CLOCK_REALTIME);
}

void clock__timespec(struct timespec *out, int64_t ns)
{
	out->tv_sec = (time_t)(ns / 1000000000LL);
	out->tv_nsec = (long)(ns % 1000000000LL);
}

void clock__fault_delay(const char *name)
{
	const char *v = getenv(name);
	long ms = v ? atol(v) : 0;

	if (ms > 0)
		nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L},
			  NULL);
}
