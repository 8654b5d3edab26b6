// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "collect.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls_agg.h"
#include "calls_attach.h"
#include "cli.h"
#include "cpu_profile.h"
#include "hashmap.h"
#include "heap_agg.h"
#include "heap_attach.h"
#include "loader.h"
#include "log.h"
#include "procinfo.h"
#include "prof_calls.h"
#include "prof_heap.h"
#include "stackres.h"
#include "symbolizer.h"

struct collect {
	const struct env *env;
	struct loader *loader;
	struct symbolizer *sym;
	struct procinfo *procs;
	struct stackres *stacks;
	struct heap_agg *heap;
	struct calls_agg *calls;
	struct calls_attach *calls_at;
	uint64_t calls_last_thread; /* pid << 32 | tid whose name was last noted */
	struct hashmap *targets;    /* pid -> uint8_t alive */
	uint64_t bad_records;
	uint32_t last_tid, last_stack_pid; /* on_heap's last-seen cache */
	int32_t last_stack_id;
};

int collect__new(struct collect **out, const struct env *env, struct loader *l)
{
	struct collect *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	c->env = env;
	c->loader = l;
	err = symbolizer__new(&c->sym, NULL);
	if (!err)
		err = procinfo__new(&c->procs, NULL);
	if (!err)
		err = stackres__new(&c->stacks, l, c->sym);
	if (!err)
		err = hashmap__new(&c->targets, sizeof(uint32_t), sizeof(uint8_t));
	if (!err && (env->modes & MODE_HEAP))
		err = heap_agg__new(&c->heap, env->sample_bytes);
	if (!err && (env->modes & MODE_CALLS))
		err = calls_agg__new(&c->calls);
	if (!err && (env->modes & MODE_CALLS))
		err = calls_attach__new(&c->calls_at, l, c->calls);
	if (err) {
		collect__free(c);
		return err;
	}
	*out = c;
	return 0;
}

void collect__free(struct collect *c)
{
	if (!c)
		return;
	heap_agg__free(c->heap);
	calls_attach__free(c->calls_at);
	calls_agg__free(c->calls);
	stackres__free(c->stacks);
	procinfo__free(c->procs);
	symbolizer__free(c->sym);
	hashmap__free(c->targets);
	free(c);
}

static int track(struct collect *c, uint32_t pid)
{
	uint8_t *alive;

	if (hashmap__upsert(c->targets, (void **)&alive, &pid, NULL))
		return -ENOMEM;
	*alive = 1;
	return 0;
}

int collect__add_pid(struct collect *c, uint32_t pid)
{
	int err = track(c, pid);

	if (err)
		return err;
	procinfo__note(c->procs, pid, pid);
	err = symbolizer__load_pid(c->sym, pid);
	return err == -ESRCH || err == -ENOENT ? 0 : err;
}

int collect__add_child(struct collect *c, uint32_t pid)
{
	return track(c, pid);
}

/* --calls: the runtimes of every -p process, or those `-- CMD` will run (attached before it
 * execs, for every process, filtered in BPF, so its first call is seen). */
static int attach_calls(struct collect *c)
{
	int n, total = 0;

	if (c->env->cmd) {
		n = calls_attach__cmd(c->calls_at, c->env->cmd);
		if (n < 0)
			goto failed;
		if (!n) {
			calls_attach__explain_none(c->calls_at, c->env->cmd[0]);
			return -ENOENT;
		}
		return 0;
	}
	for (unsigned i = 0; i < c->env->npids; i++) {
		char who[32];

		n = calls_attach__pid(c->calls_at, c->env->pids[i]);
		if (n < 0)
			goto failed;
		/* With several pids, the others may still have an interpreter: say which not. */
		if (!n) {
			snprintf(who, sizeof(who), "process %u", c->env->pids[i]);
			calls_attach__explain_none(c->calls_at, who);
		}
		total += n;
	}
	return total ? 0 : -ENOENT;
failed:
	pr_err("attaching the --calls probes failed: %s\n", strerror(-n));
	return n == -ESRCH ? -ENOENT : n;
}

int collect__attach_modes(struct collect *c)
{
	int err;

	if (c->env->modes & MODE_CALLS) {
		err = attach_calls(c);
		if (err)
			return err;
	}

	if (c->env->modes & MODE_CPU) {
		err = loader__attach_cpu(c->loader);
		if (err) {
			pr_err("starting CPU sampling failed: %s\n", strerror(-err));
			return err;
		}
	}
	return 0;
}

void collect__process_exiting(struct collect *c, uint32_t pid)
{
	/* Its mappings are final and still readable: reload, then let queued events resolve. */
	symbolizer__forget_pid(c->sym, pid);
	symbolizer__load_pid(c->sym, pid);
	while (loader__poll(c->loader, 0) > 0)
		;
	collect__tick(c);
}

/* `-- CMD`: a followed child may have exec'd another interpreter, or loaded one (dlopen):
 * attach to runtimes its maps show now (each file once). */
static void rescan_calls(struct collect *c)
{
	const uint32_t *pid;
	size_t it = 0;
	uint8_t *alive;

	while (hashmap__next(c->targets, &it, (const void **)&pid, (void **)&alive))
		if (*alive)
			calls_attach__rescan(c->calls_at, *pid);
}

void collect__tick(struct collect *c)
{
	if (c->env->modes & MODE_CPU)
		cpu_profile__scan(c);
	if (c->calls_at && c->env->cmd)
		rescan_calls(c);
}

bool collect__any_alive(struct collect *c)
{
	const uint32_t *pid;
	size_t it = 0;
	uint8_t *alive;

	while (hashmap__next(c->targets, &it, (const void **)&pid, (void **)&alive)) {
		if (*alive && kill((pid_t)*pid, 0) == 0)
			return true;
		if (*alive && errno == EPERM)
			return true;
		*alive = 0;
	}
	return false;
}

void collect__signal_all(struct collect *c, int sig)
{
	const uint32_t *pid;
	size_t it = 0;
	uint8_t *alive;

	while (hashmap__next(c->targets, &it, (const void **)&pid, (void **)&alive))
		if (*alive)
			kill((pid_t)*pid, sig);
}

static void on_heap(struct collect *c, const struct prof_heap_event *e)
{
	/* Runs of events from one thread and one call site are the common case: skip the lookups.
	 */
	if (e->tid != c->last_tid) {
		procinfo__note(c->procs, e->pid, e->tid);
		c->last_tid = e->tid;
	}
	if (e->stack_id != c->last_stack_id || e->pid != c->last_stack_pid) {
		stackres__note(c->stacks, e->pid, e->stack_id, STACK_USER_RET);
		c->last_stack_id = e->stack_id;
		c->last_stack_pid = e->pid;
	}
	if (e->type == PROF_REC_HEAP_ALLOC)
		heap_agg__alloc(c->heap, e->pid, e->tid, e->stack_id, e->addr, e->size);
	else
		heap_agg__realloc(c->heap, e->pid, e->tid, e->stack_id, e->old_addr, e->addr,
				  e->size);
}

static void on_call(struct collect *c, const struct prof_call_event *e)
{
	uint64_t thread = (uint64_t)e->pid << 32 | e->tid;

	/* Events come in runs per thread: look its name up only when the thread changes. */
	if (thread != c->calls_last_thread) {
		procinfo__note(c->procs, e->pid, e->tid);
		c->calls_last_thread = thread;
	}
	calls_agg__event(c->calls, e);
}

static void on_proc(struct collect *c, const struct prof_proc_event *e)
{
	char comm[PROF_COMM_LEN + 1];
	uint8_t *alive;

	memcpy(comm, e->comm, PROF_COMM_LEN);
	comm[PROF_COMM_LEN] = 0;
	switch (e->type) {
	case PROF_REC_PROC_FORK:
		pr_debug("following child %u of %u\n", e->pid, e->ppid);
		track(c, e->pid);
		/* Same image as the parent until it execs: same mappings, same symbols. */
		symbolizer__load_pid(c->sym, e->pid);
		procinfo__note(c->procs, e->pid, e->pid);
		break;
	case PROF_REC_PROC_EXEC:
		pr_debug("%u exec'd %s\n", e->pid, comm);
		symbolizer__forget_pid(c->sym, e->pid);
		symbolizer__load_pid(c->sym, e->pid);
		procinfo__set_comm(c->procs, e->pid, e->pid, comm);
		if (c->calls)
			calls_agg__process_exec(c->calls, e->pid);
		if (c->heap && c->env->cmd) {
			int n = 0;

			/* A new image may bring an allocator of its own (static binary). */
			heap_attach__process(c->loader, e->pid, -1, &n);
		}
		break;
	case PROF_REC_PROC_EXIT:
		procinfo__set_comm(c->procs, e->pid, e->tid, comm);
		if (c->calls)
			calls_agg__thread_exit(c->calls, e->pid, e->tid);
		if (e->flags & PROF_PROC_GROUP_DEAD) {
			alive = hashmap__find(c->targets, &e->pid);
			if (alive)
				*alive = 0;
		}
		break;
	}
}

int collect__on_event(void *ctx, void *data, size_t size)
{
	struct collect *c = ctx;
	uint32_t type;

	if (size < sizeof(type)) {
		c->bad_records++;
		return 0;
	}
	memcpy(&type, data, sizeof(type));
	switch (type) {
	case PROF_REC_HEAP_ALLOC:
	case PROF_REC_HEAP_REALLOC:
		if (size < sizeof(struct prof_heap_event) || !c->heap)
			break;
		on_heap(c, data);
		return 0;
	case PROF_REC_HEAP_FREE:
		if (size < sizeof(struct prof_heap_free) || !c->heap)
			break;
		heap_agg__free_block(c->heap, ((struct prof_heap_free *)data)->pid,
				     ((struct prof_heap_free *)data)->addr);
		return 0;
	case PROF_REC_PROC_FORK:
	case PROF_REC_PROC_EXEC:
	case PROF_REC_PROC_EXIT:
		if (size < sizeof(struct prof_proc_event))
			break;
		on_proc(c, data);
		return 0;
	case PROF_REC_CALL_ENTRY:
	case PROF_REC_CALL_RETURN:
		if (size < sizeof(struct prof_call_event) || !c->calls)
			break;
		on_call(c, data);
		return 0;
	case PROF_REC_CALL_NAME:
		if (size < sizeof(struct prof_call_name) || !c->calls)
			break;
		calls_agg__name(c->calls, data);
		return 0;
	default:
		break;
	}
	c->bad_records++;
	return 0;
}

struct loader *collect__loader(struct collect *c)
{
	return c->loader;
}

struct heap_agg *collect__heap(struct collect *c)
{
	return c->heap;
}

struct calls_agg *collect__calls(struct collect *c)
{
	return c->calls;
}

struct calls_attach *collect__calls_attach(struct collect *c)
{
	return c->calls_at;
}

struct stackres *collect__stacks(struct collect *c)
{
	return c->stacks;
}

struct procinfo *collect__procinfo(struct collect *c)
{
	return c->procs;
}

struct symbolizer *collect__symbolizer(struct collect *c)
{
	return c->sym;
}

uint64_t collect__bad_records(struct collect *c)
{
	return c->bad_records;
}
