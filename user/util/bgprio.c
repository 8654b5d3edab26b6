// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Background workers at a low nice, raised while someone waits on them: bgprio.h. */
#include "util/bgprio.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BGPRIO_LOW 19

static int env_nice(void)
{
	const char *s = getenv("BPFTRACE_PROF_WORKER_NICE");
	char *end;
	long v;

	if (!s || !*s)
		return BGPRIO_LOW;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 19)
		return BGPRIO_LOW;
	return (int)v;
}

/* Whether a nice of 19 may go back to want: CAP_SYS_NICE, or RLIMIT_NICE's ceiling (a limit of
 * r allows down to 20 - r). */
static bool may_raise_to(int want)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {0};
	struct rlimit rl;

	if (!syscall(SYS_capget, &hdr, caps) &&
	    (caps[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE)))
		return true;
	return !getrlimit(RLIMIT_NICE, &rl) &&
	       (rl.rlim_cur == RLIM_INFINITY || 20 - (long)rl.rlim_cur <= want);
}

void bgprio__init(struct bgprio *p)
{
	int cur;

	pthread_mutex_init(&p->lock, NULL);
	p->tid = 0;
	p->waiters = 0;
	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0); /* this thread's nice (Linux: per thread) */
	p->high = (cur == -1 && errno) ? 0 : cur;
	p->low = env_nice();
	/* Never above what we were started with, and never lowered if a wait could not raise it
	 * back (without CAP_SYS_NICE): a held process must not wait behind a starved thread. */
	if (p->low < p->high || !may_raise_to(p->high))
		p->low = p->high;
}

void bgprio__destroy(struct bgprio *p)
{
	pthread_mutex_destroy(&p->lock);
}

/* Under p->lock. A failure (e.g. no CAP_SYS_NICE to go back up) leaves the nice as it was. */
static void apply(struct bgprio *p)
{
	if (p->tid && p->low != p->high)
		setpriority(PRIO_PROCESS, (id_t)p->tid, p->waiters ? p->high : p->low);
}

void bgprio__worker(struct bgprio *p, const char *name)
{
	pthread_setname_np(pthread_self(), name);
	pthread_mutex_lock(&p->lock);
	p->tid = (pid_t)syscall(SYS_gettid);
	apply(p);
	pthread_mutex_unlock(&p->lock);
}

void bgprio__raise(struct bgprio *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->waiters++ == 0)
		apply(p);
	pthread_mutex_unlock(&p->lock);
}

void bgprio__lower(struct bgprio *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->waiters > 0 && --p->waiters == 0)
		apply(p);
	pthread_mutex_unlock(&p->lock);
}
