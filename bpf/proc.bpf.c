// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Process lifecycle: children of targets become targets at fork (so `-- CMD` misses none of
 * their allocations), and userspace learns of exec (re-read maps) and exit (final thread name,
 * stop condition).
 */
#include "common.bpf.h"
#include "events.bpf.h"
#include "heap_state.bpf.h"
#include "unwind_maps.bpf.h"

/* `-- CMD` follows children; `-p` does not. */
const volatile bool follow_children = false;

static __always_inline void emit(__u32 type, __u32 pid, __u32 tid, __u32 ppid, __u32 flags)
{
	struct prof_proc_event *e = prof_reserve(sizeof(*e));

	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->pid = pid;
	e->tid = tid;
	e->ppid = ppid;
	e->flags = flags;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/*
	 * Lifecycle events are rare and gate the stop condition: deliver them promptly.  A dlopen
	 * not held (the otel_memory path) forces the wake-up: behind records that did not wake the
	 * consumer (prof_wakeup_flags) it would wait for the consumer's 100 ms timer before its
	 * maps are read, and the new library's stacks are cut until its table is in.
	 */
	bpf_ringbuf_submit(e, type == PROF_REC_PROC_DLOPEN ? BPF_RB_FORCE_WAKEUP : 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid);
	__u32 pid = BPF_CORE_READ(child, tgid);
	struct prof_unwind_proc *m;
	__u8 one = 1, *path;

	/* New threads share the process's tgid and are covered already.  A Python process's new
	 * thread is announced: its threading name is read while it lives, since its first sample
	 * may be its last moments (a thread asleep since it started is sampled when it wakes). */
	if (pid == ppid) {
		m = bpf_map_lookup_elem(&prof_unwind_procs, &pid);
		if (m && m->py.version && prof_is_target(pid))
			emit(PROF_REC_PROC_THREAD, pid, BPF_CORE_READ(child, pid), ppid, 0);
		return 0;
	}
	if (prof_scope != PROF_SCOPE_PIDS) {
		/* The parent runs this: the child is in its cgroup, so in scope with it. */
		if (!prof_is_target(ppid))
			return 0;
	} else {
		if (!follow_children || !bpf_map_lookup_elem(&prof_targets, &ppid))
			return 0;
		if (bpf_map_update_elem(&prof_targets, &pid, &one, BPF_ANY)) {
			prof_count(PROF_CNT_TARGETS_FULL);
			return 0;
		}
	}
	prof_scope_birth(pid);
	/* Same image as the parent: its mappings hold for the child until userspace re-reads. */
	m = bpf_map_lookup_elem(&prof_unwind_procs, &ppid);
	if (m)
		bpf_map_update_elem(&prof_unwind_procs, &pid, m, BPF_ANY);
	/* ... and its heap path: its otel_memory probes fire in the child as in the parent.  Not
	 * links of the parent's own (PROF_PATH_OWN): the child is on the links for every process
	 * until userspace gives it its own. */
	path = bpf_map_lookup_elem(&prof_otel_procs, &ppid);
	if (path && *path != PROF_PATH_OWN)
		bpf_map_update_elem(&prof_otel_procs, &pid, path, BPF_ANY);
	emit(PROF_REC_PROC_FORK, pid, BPF_CORE_READ(child, pid), ppid, 0);
	return 0;
}

#define SIGSTOP 19

/*
 * Until when (bpf_ktime_get_ns) exits may be held: userspace pushes it forward at every turn of
 * its loop and sets 0 before its last drain.  A consumer that stalls (start-up, a long write,
 * a crash) stops the holding within PROF_HOLD_GATE_NS, so no process of the host waits on it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} prof_hold_gate SEC(".maps");

/*
 * Executables whose first exec userspace prepared (struct prof_exec_key): later execs of them
 * run on unheld.  An LRU: an entry pushed out costs one more hold, nothing else.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROF_EXEC_SEEN_ENTRIES);
	__type(key, struct prof_exec_key);
	__type(value, __u8);
} prof_exec_seen SEC(".maps");

/*
 * Processes whose exec was held, by tgid: the _dl_debug_state calls left until their loader's
 * startup is held too (PROF_PROC_DL_HELD).  glibc calls it twice at startup, before and after
 * mapping the DT_NEEDED libraries; a loader that calls it once is held at its next dlopen, or
 * never.  An LRU: an entry pushed out costs that hold only (its stacks are cut below main until
 * the maps are read, as without holds).
 */
#define PROF_DL_STARTUP_CALLS 2
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROF_DL_PENDING_ENTRIES);
	__type(key, __u32);
	__type(value, __u32);
} prof_dl_pending SEC(".maps");

/* Wide scopes with holds on: stop the first exec of each executable for userspace. */
const volatile bool prof_hold_execs = false;
/* Unwind tables on: stop a dlopen after mapping, before constructors (PROF_PROC_DLOPEN_HELD). */
const volatile bool prof_hold_dlopen = false;
/* `-- CMD`: every thread is ptraced, so our SIGSTOP is a signal-delivery-stop the tracer takes
 * (user/session.c): no shell ever sees the process stop, whatever its terminal. */
const volatile bool prof_hold_traced = false;
/* Only --heap walks stacks: a process on its own otel_memory probes (rare, sampled records) is
 * not held at its dlopens (PROF_CNT_DLOPEN_UNHELD_OTEL). */
const volatile bool prof_dlopen_skip_otel = false;

/* A process's dlopen holds: how many are left, and whether its loader is adding objects. */
struct prof_dl_state {
	__u32 left;
	__u16 adding;  /* the last _dl_debug_state said RT_ADD */
	__u16 started; /* its first set of objects was mapped (startup, or a first dlopen) */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROF_DL_STATE_ENTRIES);
	__type(key, __u32);
	__type(value, struct prof_dl_state);
} prof_dl_state SEC(".maps");
/* Holds per cgroup (v2 id) and second; 0: no limit (--hold-rate). */
const volatile __u32 prof_hold_rate = PROF_HOLD_RATE_DEFAULT;

/* Every process stopped for us and not yet resumed (include/prof_common.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_HELD_ENTRIES);
	__type(key, struct prof_held_key);
	__type(value, struct prof_held_val);
} prof_held SEC(".maps");

/* A cgroup's holds in the current second: a tenant that execs and exits in a loop pays for its
 * own holds, not everyone's (they share our consumer and symbolizer). */
struct prof_hold_window {
	__u64 start_ns;
	__u32 count;
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROF_HOLD_RATE_ENTRIES);
	__type(key, __u64);
	__type(value, struct prof_hold_window);
} prof_hold_rate_map SEC(".maps");

static __always_inline bool hold_budget(void)
{
	struct prof_hold_window *w, fresh = {0};
	__u64 cg = bpf_get_current_cgroup_id(), now = bpf_ktime_get_ns();

	if (!prof_hold_rate)
		return true;
	w = bpf_map_lookup_elem(&prof_hold_rate_map, &cg);
	if (!w || now - w->start_ns >= 1000000000ULL) {
		fresh.start_ns = now;
		fresh.count = 1;
		bpf_map_update_elem(&prof_hold_rate_map, &cg, &fresh, BPF_ANY);
		return true;
	}
	if (w->count >= prof_hold_rate) {
		prof_count(PROF_CNT_HOLD_RATE_LIMITED);
		return false;
	}
	__sync_fetch_and_add(&w->count, 1);
	return true;
}

/*
 * May this process be stopped for us?  Not with a controlling terminal (a job-control shell
 * would report its foreground job as stopped), nor in a process group of its own (a job-control
 * shell puts each job in one, and its wait would see the job stop); children of plain parents
 * share their group.  A session leader without a terminal is no shell's job (a job-control
 * shell makes groups, not sessions): daemons, and what `docker run` and `docker exec` start
 * (runc calls setsid), are held.  Only while the gate is open (fail_counter counts the
 * refusals then).
 */
static __always_inline bool may_hold(struct task_struct *task, __u32 fail_counter, bool traced)
{
	__u32 zero = 0;
	__u64 *gate;

	if (!traced && BPF_CORE_READ(task, signal, tty))
		return false;
	if (!traced &&
	    BPF_CORE_READ(task, signal, pids[PIDTYPE_PGID]) !=
		    BPF_CORE_READ(task, real_parent, signal, pids[PIDTYPE_PGID]) &&
	    BPF_CORE_READ(task, signal, pids[PIDTYPE_SID]) !=
		    BPF_CORE_READ(task, signal, pids[PIDTYPE_TGID]))
		return false;
	gate = bpf_map_lookup_elem(&prof_hold_gate, &zero);
	if (!gate || bpf_ktime_get_ns() > *gate) {
		prof_count(fail_counter);
		return false;
	}
	/* -p and -- CMD: one tree or a few processes, capped per process instead. */
	return prof_scope == PROF_SCOPE_PIDS || hold_budget();
}

/*
 * Stop the current process (SIGSTOP, delivered on its way back to user space) with a record of
 * type that tells userspace to resume it.  The record is reserved first: a process stopped
 * without one would never be resumed.  False when it is not stopped (fail counted).
 */
static __always_inline bool stop_self(__u32 type, __u32 flags, const struct prof_exec_key *exe,
				      __u32 fail)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	struct prof_held_key key = {.tgid = id >> 32, .seq = bpf_ktime_get_ns()};
	struct prof_held_val val = {.type = type};
	struct prof_proc_event *e = prof_reserve(sizeof(*e));

	if (!e)
		return false;
	/* Known to the watchdog before it is stopped: nothing we stop can outlive us stopped. */
	val.start_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	if (bpf_map_update_elem(&prof_held, &key, &val, BPF_NOEXIST)) {
		bpf_ringbuf_discard(e, 0);
		prof_count(fail);
		return false;
	}
	if (bpf_send_signal(SIGSTOP)) {
		bpf_map_delete_elem(&prof_held, &key);
		bpf_ringbuf_discard(e, 0);
		prof_count(fail);
		return false;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->flags = flags;
	e->hold_seq = key.seq;
	e->start_ns = val.start_ns;
	if (exe)
		e->exe = *exe;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
	return true;
}

/*
 * Wide scopes: attached to _exit of every libc in scope.  A process that lives a few
 * milliseconds may be gone before userspace reads its maps and symbols; stopped here, at its
 * last instruction in user space, it waits until userspace has consumed everything it sent
 * (this record comes after all of it) and resumes it (see may_hold for who is never held).
 * Attached only when holds are on (--cgroup/--container by default, -a with --hold-exits).
 */
SEC("uprobe")
int BPF_KPROBE(proc_exit_hold)
{
	if (prof_is_target(bpf_get_current_pid_tgid() >> 32) &&
	    may_hold(bpf_get_current_task_btf(), PROF_CNT_EXIT_HOLD_FAIL, false))
		stop_self(PROF_REC_PROC_EXIT_HOLD, 0, NULL, PROF_CNT_EXIT_HOLD_FAIL);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_exec_key key = {0};
	__u32 pid = id >> 32;
	struct inode *ino;

	if (!prof_is_target(pid))
		return 0;
	prof_scope_birth(pid); /* a process that joined the cgroup is its own from its exec on */
	/* The old image's mappings: wrong from now on (frame pointers until userspace re-reads). */
	bpf_map_delete_elem(&prof_unwind_procs, &pid);
	bpf_map_delete_elem(&prof_dl_state, &pid);   /* a new image: its own dlopens */
	bpf_map_delete_elem(&prof_otel_procs, &pid); /* and its own probes, if any */
	/* its count of sampled blocks: they went with the image */
	bpf_map_delete_elem(&prof_sampled_procs, &pid);
	/*
	 * A new executable (wide scopes, holds on): stopped before its first instruction until
	 * userspace has probed its allocators, hooked its exit and loader, attached its runtime:
	 * its first allocations and calls are seen, and its exit held, however short its life.
	 */
	if (prof_hold_execs) {
		ino = BPF_CORE_READ(bprm, file, f_inode);
		key.dev = BPF_CORE_READ(ino, i_sb, s_dev);
		key.ino = BPF_CORE_READ(ino, i_ino);
		bpf_map_delete_elem(&prof_dl_pending, &pid); /* the old image's */
		if (!bpf_map_lookup_elem(&prof_exec_seen, &key) &&
		    may_hold(bpf_get_current_task_btf(), PROF_CNT_EXEC_HOLD_FAIL, false) &&
		    stop_self(PROF_REC_PROC_EXEC, PROF_PROC_EXEC_HELD, &key,
			      PROF_CNT_EXEC_HOLD_FAIL)) {
			__u32 calls = PROF_DL_STARTUP_CALLS;

			bpf_map_update_elem(&prof_dl_pending, &pid, &calls, BPF_ANY);
			return 0;
		}
	}
	emit(PROF_REC_PROC_EXEC, pid, (__u32)id, 0, 0);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id, flags = 0;

	if (!prof_is_target(pid))
		return 0;
	/*
	 * do_exit() decrements signal->live before this tracepoint: zero means the whole thread
	 * group is gone.  Its tgid leaves the target set, so a process that later reuses the pid is
	 * not profiled (nor its children followed).
	 */
	if (BPF_CORE_READ(p, signal, live.counter) == 0) {
		bpf_map_delete_elem(&prof_unwind_procs, &pid);
		bpf_map_delete_elem(&prof_dl_pending, &pid);
		bpf_map_delete_elem(&prof_dl_state, &pid);
		bpf_map_delete_elem(&prof_otel_procs, &pid);
		bpf_map_delete_elem(&prof_sampled_procs, &pid);
		flags |= PROF_PROC_GROUP_DEAD;
		if (prof_scope == PROF_SCOPE_PIDS)
			bpf_map_delete_elem(&prof_targets, &pid);
	}
	/* One record per thread: carries its final name; the last one marks the process gone. */
	emit(PROF_REC_PROC_EXIT, pid, tid, 0, flags);
	return 0;
}

/*
 * A dlopen's objects are mapped, their constructors not run (r_state RT_CONSISTENT right after
 * RT_ADD; a dlclose's RT_DELETE → RT_CONSISTENT is not held): stop until userspace has read the
 * maps and loaded the new files' unwind tables, so that even the constructors' stacks unwind
 * through them.  The attach cookie is the offset from _dl_debug_state to _r_debug.r_state in
 * this ld.so (0: not found, no holds).  True when stopped.
 */
static __always_inline bool dlopen_hold(struct pt_regs *ctx, __u32 pid)
{
	struct prof_dl_state *st, fresh = {.left = PROF_DL_HOLDS_MAX};
	__s64 off = (__s64)bpf_get_attach_cookie(ctx);
	int state = -1;

	if (!off || bpf_probe_read_user(&state, sizeof(state), (void *)(PT_REGS_IP(ctx) + off)))
		return false;
	st = bpf_map_lookup_elem(&prof_dl_state, &pid);
	if (!st) {
		if (state != PROF_RT_ADD)
			return false;
		fresh.adding = 1;
		bpf_map_update_elem(&prof_dl_state, &pid, &fresh, BPF_ANY);
		return false;
	}
	if (state != PROF_RT_CONSISTENT || !st->adding) {
		st->adding = state == PROF_RT_ADD;
		return false;
	}
	st->adding = 0;
	/*
	 * Its stacks come only at its sampler's records, one per --sample-bytes: a stop per
	 * library costs it far more than the few records that fall before the table is in (frame
	 * pointers meanwhile, counted as such) — `import torch`, 300 libraries: 2.2x its time.
	 * Not so its first set (an exec's startup): its maps are not read yet, and a preloaded
	 * library's constructor allocates before userspace could have read them.  Userspace may
	 * have moved it onto the probes already, at the report of the first call (RT_ADD).
	 */
	if (st->started && prof_dlopen_skip_otel && prof_heap_otel(pid)) {
		prof_count(PROF_CNT_DLOPEN_UNHELD_OTEL);
		return false;
	}
	st->started = 1;
	if (!st->left) {
		prof_count(PROF_CNT_DLOPEN_HOLDS_SPENT);
		return false;
	}
	if (!may_hold(bpf_get_current_task_btf(), PROF_CNT_DLOPEN_HOLD_FAIL, prof_hold_traced) ||
	    !stop_self(PROF_REC_PROC_DLOPEN, PROF_PROC_DLOPEN_HELD, NULL,
		       PROF_CNT_DLOPEN_HOLD_FAIL))
		return false;
	st->left--;
	return true;
}

/*
 * --calls with `-- CMD`: attached (every process, filtered here) to _dl_debug_state of the
 * dynamic loaders the tree's processes run, the hook glibc calls for debuggers before and after
 * it maps objects (startup, dlopen).  Userspace then rescans the process's maps for a runtime
 * (a JDK launcher's libjvm, mod_php's libphp): asynchronously, the process runs on.
 */
SEC("uprobe")
int BPF_KPROBE(proc_dl_state)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, *left;

	if (!prof_is_target(pid))
		return 0;
	/*
	 * A held exec's startup libraries are mapped (the second call): stopped until userspace
	 * has read the maps (and loaded any table still building), so that even the first stacks
	 * through them — constructors, main — unwind with the process's entry, needing no vma
	 * lookup (bpf_find_vma fails while the mm's lock is contended: a uprobe being attached).
	 */
	left = bpf_map_lookup_elem(&prof_dl_pending, &pid);
	if (left && *left > 1) {
		*left -= 1;
	} else if (left) {
		bpf_map_delete_elem(&prof_dl_pending, &pid);
		if (may_hold(bpf_get_current_task_btf(), PROF_CNT_EXEC_HOLD_FAIL, false) &&
		    stop_self(PROF_REC_PROC_DLOPEN, PROF_PROC_DL_HELD, NULL,
			      PROF_CNT_EXEC_HOLD_FAIL))
			return 0;
	} else if (prof_hold_dlopen && dlopen_hold(ctx, pid)) {
		return 0;
	}
	emit(PROF_REC_PROC_DLOPEN, pid, (__u32)id, 0, 0);
	return 0;
}

/* Before Linux 6.15 a kernfs node's parent was "parent", since "__parent" (RCU-protected). */
struct kernfs_node___old {
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

static __always_inline struct kernfs_node *kn_parent(struct kernfs_node *kn)
{
	if (bpf_core_field_exists(kn->__parent))
		return BPF_CORE_READ(kn, __parent);
	return BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
}

/*
 * The cgroup's path, named now: a container runtime removes the cgroup of a container whose
 * last process died, before userspace could look its id up.  The names of the levels below the
 * hierarchy's root, the leaf first; userspace joins them.
 */
static __always_inline void oom_memcg_names(struct kernfs_node *kn, struct prof_oom_event *e)
{
	struct kernfs_node *parent;
	__u32 n = 0;

	for (int i = 0; i < PROF_OOM_NAME_LEVELS && kn; i++) {
		long len;

		parent = kn_parent(kn);
		if (!parent)
			break; /* kn is the root: no name of its own in the path */
		len = bpf_probe_read_kernel_str(e->memcg_names[i], PROF_OOM_NAME_LEN,
						BPF_CORE_READ(kn, name));
		if (len <= 0)
			return;
		if (len >= PROF_OOM_NAME_LEN)
			e->flags |= PROF_OOM_NAMES_CUT;
		n++;
		kn = parent;
	}
	if (kn && kn_parent(kn))
		e->flags |= PROF_OOM_NAMES_CUT;
	e->memcg_levels = n;
	e->flags |= PROF_OOM_NAMES;
}

/* The victim's memory cgroup and the limit that binds it (enum prof_oom_flags' PROF_OOM_MEMCG). */
static __always_inline void oom_memcg(struct task_struct *task, struct prof_oom_event *e)
{
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	struct cgroup_subsys_state *css = NULL;
	struct page_counter *pc;
	__u64 min = ~0ULL;
	struct css_set *cs;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id) || id < 0 ||
	    id >= CGROUP_SUBSYS_COUNT)
		return;
	cs = BPF_CORE_READ(task, cgroups);
	if (!cs || bpf_core_read(&css, sizeof(css), &cs->subsys[id]) || !css)
		return;
	e->memcg_id = BPF_CORE_READ(css, cgroup, kn, id);
	/* /proc/PID/cgroup's first field: hierarchy 0 is the unified (v2) one. */
	if (BPF_CORE_READ(css, cgroup, root, hierarchy_id) != 0)
		e->flags |= PROF_OOM_MEMCG_V1;
	oom_memcg_names(BPF_CORE_READ(css, cgroup, kn), e);
	/* css is a mem_cgroup's first member */
	pc = &((struct mem_cgroup *)css)->memory;
	for (int i = 0; i < PROF_OOM_MEMCG_DEPTH && pc; i++) {
		__u64 max = BPF_CORE_READ(pc, max);

		if (max < min)
			min = max;
		pc = BPF_CORE_READ(pc, parent);
	}
	e->memcg_max_pages = min;
	e->flags |= PROF_OOM_MEMCG;
}

/*
 * The OOM killer marked a victim (tracepoint oom/mark_victim).  It is killed without ever being
 * held at its exit, so userspace writes its heap profile from this record.  "raw_tp" without a
 * name: the skeleton leaves it unattached and user/attach/oom_attach.c attaches it where the
 * kernel has the tracepoint (loading needs nothing of it).  Since Linux 6.8 its first argument
 * is the victim's task (trace_event_raw_mark_victim then has uid); before, the victim's pid.
 * Wide scopes send every victim: whether the heap profile covers it is decided in userspace.
 */
SEC("raw_tp")
int proc_oom_victim(struct bpf_raw_tracepoint_args *ctx)
{
	struct prof_oom_event *e;
	struct task_struct *task;
	__u32 pid, tid, flags = 0;
	__s32 adj = 0;

	if (bpf_core_field_exists(struct trace_event_raw_mark_victim, uid)) {
		task = (struct task_struct *)ctx->args[0];
		pid = BPF_CORE_READ(task, tgid);
		tid = BPF_CORE_READ(task, pid);
		adj = BPF_CORE_READ(task, signal, oom_score_adj);
		flags |= PROF_OOM_ADJ_KNOWN;
	} else {
		task = NULL;
		pid = tid = (__u32)ctx->args[0];
		flags |= PROF_OOM_TID_ONLY;
	}
	if (prof_scope == PROF_SCOPE_PIDS ? !bpf_map_lookup_elem(&prof_targets, &pid)
					  : pid == prof_self_tgid)
		return 0;
	e = bpf_ringbuf_reserve(&prof_events, sizeof(*e), 0);
	if (!e) {
		prof_count(PROF_CNT_OOM_LOST);
		return 0;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = PROF_REC_OOM_VICTIM;
	e->pid = pid;
	e->tid = tid;
	e->oom_score_adj = adj;
	e->flags = flags;
	e->ts = bpf_ktime_get_ns();
	if (task) {
		BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
		oom_memcg(task, e);
	}
	/* Rare, and the victim's memory goes soon: delivered at once. */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}
