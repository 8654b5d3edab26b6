// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Background workers at a low nice, raised while someone waits on them: bgprio.h. */
#include "util/bgprio.h"

#include <errno.h>
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
	if (p->low < p->high)
		p->low = p->high; /* never above what we were started with */
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
