// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "agg/live_cap.h"

#include <errno.h>
#include <stdlib.h>

#include "util/hashmap.h"

struct live_cap {
	struct hashmap *pids; /* pid -> its blocks (uint32_t; no entry at 0) */
	uint64_t total;
	uint32_t pid_cap, total_cap;
};

/* The per-process cap, 1 Mi, is too many blocks for a test to reach: the environment lowers it
 * (tests/e2e/test_caps.sh; the man page says it is for tests).  Read once, for every table. */
static uint32_t default_pid_cap(void)
{
	static uint32_t cap;
	const char *s;

	if (!cap) {
		s = getenv("BPFTRACE_PROF_LIVE_CAP");
		cap = s ? (uint32_t)strtoul(s, NULL, 10) : 0;
		if (!cap)
			cap = LIVE_CAP_PID;
	}
	return cap;
}

int live_cap__new(struct live_cap **out)
{
	struct live_cap *lc = calloc(1, sizeof(*lc));
	int err;

	if (!lc)
		return -ENOMEM;
	err = hashmap__new(&lc->pids, sizeof(uint32_t), sizeof(uint32_t));
	if (err) {
		free(lc);
		return err;
	}
	live_cap__set(lc, 0, 0);
	*out = lc;
	return 0;
}

void live_cap__free(struct live_cap *lc)
{
	if (!lc)
		return;
	hashmap__free(lc->pids);
	free(lc);
}

void live_cap__set(struct live_cap *lc, uint32_t per_pid, uint32_t total)
{
	lc->pid_cap = per_pid ? per_pid : default_pid_cap();
	lc->total_cap = total ? total : LIVE_CAP_TOTAL;
}

uint32_t live_cap__count(const struct live_cap *lc, uint32_t pid)
{
	const uint32_t *n = hashmap__find(lc->pids, &pid);

	return n ? *n : 0;
}

uint64_t live_cap__total(const struct live_cap *lc)
{
	return lc->total;
}

bool live_cap__room(const struct live_cap *lc, uint32_t pid)
{
	return lc->total < lc->total_cap && live_cap__count(lc, pid) < lc->pid_cap;
}

int live_cap__add(struct live_cap *lc, uint32_t pid)
{
	uint32_t *n;
	int err = hashmap__upsert(lc->pids, (void **)&n, &pid, NULL);

	if (err)
		return err;
	(*n)++;
	lc->total++;
	return 0;
}

void live_cap__sub(struct live_cap *lc, uint32_t pid)
{
	uint32_t *n = hashmap__find(lc->pids, &pid);

	if (!n)
		return;
	lc->total--;
	if (!--*n)
		hashmap__delete(lc->pids, &pid);
}

void live_cap__drop(struct live_cap *lc, uint32_t pid)
{
	uint32_t *n = hashmap__find(lc->pids, &pid);

	if (!n)
		return;
	lc->total -= *n;
	hashmap__delete(lc->pids, &pid);
}
