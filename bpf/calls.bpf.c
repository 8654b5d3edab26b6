// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --calls: interpreter function entry/return USDT probes (python, ruby, php, hotspot).
 * Each probe sends one fixed 56-byte event; userspace rebuilds the per-thread call stacks.
 *
 * Why not rebuild the stacks here: measured (docs-calls.md), a prototype keeping them in task
 * storage with node and count maps saved ~100 ns of the ~660 ns an event costs the target,
 * but it cannot close the frames HotSpot's compiled code unwinds without returns (that needs
 * the sequence of entries), recover frames entered before attach, resynchronise a thread
 * after drops, or go deeper than a fixed per-thread array.  Userspace sees the whole
 * sequence and can, for ~45 ns of profiler CPU per event.
 *
 * Names: an event carries a name id (include/prof_calls.h); the strings travel once, in a
 * prof_call_name record sent by the first event that uses the id (prof_call_names remembers
 * which ids were sent).  Copying three strings into every event would cost ~3 user-memory
 * string reads (~100-300 ns each) and 500 bytes of ring buffer per event instead of one map
 * lookup.
 *
 * Markers (-f firefox only; the programs at the end): exceptions, imports, class loads and
 * logs, each a prof_call_marker with its text in it — they are rare next to calls, and their
 * texts (messages, modules) do not repeat by pointer the way function names do.
 */
#include "common.bpf.h"
#include "events.bpf.h"

#include <bpf/usdt.bpf.h>

#include "prof_calls.h"

/* name id -> 1 once its prof_call_name record was queued. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROF_CALL_NAME_ENTRIES);
	__type(key, __u64);
	__type(value, __u8);
} prof_call_names SEC(".maps");

/* pid_tgid -> 1: a call event of this thread was dropped and it has not been told yet. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PROF_CALL_LOST_ENTRIES);
	__type(key, __u64);
	__type(value, __u8);
} prof_call_lost SEC(".maps");

/* Scratch for hashing a class name by content (too big for the 512-byte BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[PROF_CALL_CLS_LEN / 8]);
} call_scratch SEC(".maps");

/* Each target thread's on-CPU clock (struct prof_call_oncpu), kept by calls_switch below. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct prof_call_oncpu);
} prof_call_oncpu SEC(".maps");

/*
 * The on-CPU clock of the targets' threads, for the busy time of calls.  The scheduler's own
 * count of a thread's run time (se.sum_exec_runtime) is exact only at a switch (between
 * switches it advances at the scheduler tick, 4 ms here), so it is taken at each switch-out,
 * and the time of the switch-in that follows it; a probe adds the time since.  The switch
 * count tells a switch-in that follows the recorded switch-out from a later one.  Task storage:
 * no lookup by key, and it goes with the thread.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(calls_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct prof_call_oncpu *c;

	if (prev->pid && prof_is_target(prev->tgid)) {
		c = bpf_task_storage_get(&prof_call_oncpu, prev, NULL,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (c) {
			c->run_ns = prev->se.sum_exec_runtime;
			c->nsw = prev->nvcsw + prev->nivcsw;
			c->in_ns = 0;
		}
	}
	c = bpf_task_storage_get(&prof_call_oncpu, next, NULL, 0);
	if (c && c->nsw == next->nvcsw + next->nivcsw)
		c->in_ns = bpf_ktime_get_ns();
	return 0;
}

/*
 * The current thread's on-CPU clock at now.  Until its switches are seen (it was running when
 * we attached; or its switch-in was not reported) the scheduler's count, up to a tick behind.
 */
static __always_inline __u64 busy_clock(struct task_struct *task, __u64 now)
{
	struct prof_call_oncpu *c = bpf_task_storage_get(&prof_call_oncpu, task, NULL, 0);

	if (c && c->in_ns && now >= c->in_ns && c->nsw == task->nvcsw + task->nivcsw)
		return c->run_ns + (now - c->in_ns);
	prof_count(PROF_CNT_CALL_BUSY_COARSE);
	return task->se.sum_exec_runtime;
}

/* Call events dropped so far: while 0, no event pays the prof_call_lost lookup. */
__u64 call_drops = 0;

/* Probe arguments, normalised: three strings (NUL-terminated, or length-delimited when
 * len > 0: HotSpot) and a line. */
struct call_args {
	__u64 cls, fn, file;
	__u32 cls_len, fn_len, file_len;
	__u32 line;
	bool cls_by_content; /* the class pointer is not stable: hash the string instead */
};

/*
 * Ruby passes rb_class_path(klass), which 3.x returns as a fresh rb_str_dup() copy: a new
 * pointer on every call (measured: no return ever matched its entry by pointer).  Its
 * content is what identifies the class, so it is hashed, 8 bytes at a time.
 */
static __always_inline __u64 hash_str(__u64 ptr)
{
	__u64 *w, h = 0x84222325cbf29ce4ULL;
	__u32 zero = 0;
	long len;

	w = bpf_map_lookup_elem(&call_scratch, &zero);
	if (!w || !ptr)
		return ptr;
	len = bpf_probe_read_user_str(w, PROF_CALL_CLS_LEN, (const void *)ptr) - 1;
	if (len < 0) {
		prof_count(PROF_CNT_CALL_READ_FAIL);
		return ptr;
	}
	for (int i = 0; i < PROF_CALL_CLS_LEN / 8; i++) {
		__u64 v = w[i];
		long rest = len - i * 8;

		if (rest <= 0)
			break;
		if (rest < 8) /* bytes past the NUL are stale */
			v &= (1ULL << (rest * 8)) - 1;
		h = prof_mix64(h ^ v);
	}
	return h;
}

static __always_inline __u16 read_str(char *dst, __u32 size, __u64 src, __u32 len)
{
	long n;

	if (!src)
		return 0;
	if (!len) {
		n = bpf_probe_read_user_str(dst, size, (const void *)src);
		if (n < 0) {
			prof_count(PROF_CNT_CALL_READ_FAIL);
			return 0;
		}
		return n > 0 ? (__u16)(n - 1) : 0;
	}
	/* Length-delimited: copy at most size bytes, NUL-terminate only when shorter. */
	if (len >= size) {
		if (bpf_probe_read_user(dst, size, (const void *)src)) {
			prof_count(PROF_CNT_CALL_READ_FAIL);
			return 0;
		}
		return (__u16)size;
	}
	len &= size - 1; /* size is a power of two (prof_calls.h asserts it): proves the bound */
	if (bpf_probe_read_user(dst, len, (const void *)src)) {
		prof_count(PROF_CNT_CALL_READ_FAIL);
		return 0;
	}
	dst[len] = 0;
	return (__u16)len;
}

/* Queue the strings of id, once.  A failed send forgets the id so a later event retries. */
static __noinline int send_name(__u64 id, __u32 pid, __u32 runtime, struct call_args *a)
{
	struct prof_call_name *n;
	__u8 one = 1;

	if (bpf_map_lookup_elem(&prof_call_names, &id))
		return 0;
	if (bpf_map_update_elem(&prof_call_names, &id, &one, BPF_ANY)) {
		prof_count(PROF_CNT_CALL_NAME_FULL);
		return 0;
	}
	n = prof_reserve(sizeof(*n));
	if (!n) {
		bpf_map_delete_elem(&prof_call_names, &id);
		return 0;
	}
	n->type = PROF_REC_CALL_NAME;
	n->pid = pid;
	n->name_id = id;
	n->runtime = runtime;
	n->cls_len = read_str(n->cls, sizeof(n->cls), a->cls, a->cls_len);
	n->fn_len = read_str(n->fn, sizeof(n->fn), a->fn, a->fn_len);
	n->file_len = read_str(n->file, sizeof(n->file), a->file, a->file_len);
	prof_submit(n, sizeof(*n));
	return 0;
}

static __always_inline int on_call(struct pt_regs *ctx, __u32 type, __u32 runtime,
				   struct call_args *a)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 pid = id >> 32;
	struct prof_call_event *e;
	__u8 flags = 0, one = 1;
	__u64 name_id;

	if (!prof_is_target(pid))
		return 0;
	name_id = prof_call_name_id(pid, task->self_exec_id, runtime,
				    a->cls_by_content ? hash_str(a->cls) : a->cls, a->fn, a->file);
	send_name(name_id, pid, runtime, a);

	if (call_drops && bpf_map_lookup_elem(&prof_call_lost, &id))
		flags |= PROF_CALL_F_LOST;
	e = prof_reserve(sizeof(*e));
	if (!e) {
		/* The thread's stack is now unknown: tell userspace with its next event. */
		__sync_fetch_and_add(&call_drops, 1);
		if (bpf_map_update_elem(&prof_call_lost, &id, &one, BPF_ANY))
			prof_count(PROF_CNT_CALL_LOST_FULL);
		return 0;
	}
	if (flags & PROF_CALL_F_LOST)
		bpf_map_delete_elem(&prof_call_lost, &id);
	flags |= (__u8)bpf_usdt_cookie(ctx);
	if ((flags & PROF_CALL_F_FRAME) && type == PROF_REC_CALL_ENTRY) {
		/* The probe's function was entered by a call from the Java frame: its saved
		 * frame pointer sits under the return address, the caller's SP above them. */
		__u64 bp = PT_REGS_FP(ctx), ret = 0;

		if (bp && !bpf_probe_read_user(&ret, sizeof(ret), (const void *)(bp + 8))) {
			e->frame_sp = bp + 16;
			e->site = (__u32)ret;
		} else {
			prof_count(PROF_CNT_CALL_READ_FAIL); /* the frame stays unknown (0) */
		}
	}
	e->type = type;
	e->pid = pid;
	e->tid = (__u32)id;
	e->line = a->line;
	e->ts = bpf_ktime_get_ns();
	e->busy = busy_clock(task, e->ts);
	e->name_id = name_id;
	e->runtime = runtime;
	e->flags = flags;
	prof_submit(e, sizeof(*e));
	return 0;
}

/* One probe argument; a spec libbpf cannot fetch leaves it 0, counted. */
static __always_inline __u64 usdt_arg(struct pt_regs *ctx, __u64 i)
{
	long v;

	if (bpf_usdt_arg(ctx, i, &v)) {
		prof_count(PROF_CNT_CALL_ARG_FAIL);
		return 0;
	}
	return (__u64)v;
}

/* python:function__entry/return(const char *file, const char *function, int line) */
static __always_inline int python_call(struct pt_regs *ctx, __u32 type)
{
	struct call_args a = {};

	a.file = usdt_arg(ctx, 0);
	a.fn = usdt_arg(ctx, 1);
	a.line = (__u32)usdt_arg(ctx, 2);
	return on_call(ctx, type, PROF_RT_PYTHON, &a);
}

SEC("usdt")
int python_entry(struct pt_regs *ctx)
{
	return python_call(ctx, PROF_REC_CALL_ENTRY);
}

SEC("usdt")
int python_return(struct pt_regs *ctx)
{
	return python_call(ctx, PROF_REC_CALL_RETURN);
}

/* ruby:[c]method__entry/return(const char *class, const char *method, const char *file,
 * int line) */
static __always_inline int ruby_call(struct pt_regs *ctx, __u32 type)
{
	struct call_args a = {};

	a.cls = usdt_arg(ctx, 0);
	a.fn = usdt_arg(ctx, 1);
	a.file = usdt_arg(ctx, 2);
	a.line = (__u32)usdt_arg(ctx, 3);
	a.cls_by_content = true;
	return on_call(ctx, type, PROF_RT_RUBY, &a);
}

SEC("usdt")
int ruby_entry(struct pt_regs *ctx)
{
	return ruby_call(ctx, PROF_REC_CALL_ENTRY);
}

SEC("usdt")
int ruby_return(struct pt_regs *ctx)
{
	return ruby_call(ctx, PROF_REC_CALL_RETURN);
}

/* php:function__entry/return(const char *function, const char *file, int line,
 * const char *class, const char *scope) */
static __always_inline int php_call(struct pt_regs *ctx, __u32 type)
{
	struct call_args a = {};

	a.fn = usdt_arg(ctx, 0);
	a.file = usdt_arg(ctx, 1);
	a.line = (__u32)usdt_arg(ctx, 2);
	a.cls = usdt_arg(ctx, 3);
	return on_call(ctx, type, PROF_RT_PHP, &a);
}

SEC("usdt")
int php_entry(struct pt_regs *ctx)
{
	return php_call(ctx, PROF_REC_CALL_ENTRY);
}

SEC("usdt")
int php_return(struct pt_regs *ctx)
{
	return php_call(ctx, PROF_REC_CALL_RETURN);
}

/* hotspot:method__entry/return(long thread, const char *class, int class_len,
 * const char *method, int method_len, const char *signature, int signature_len):
 * Symbol bytes, not NUL-terminated. */
static __always_inline int java_call(struct pt_regs *ctx, __u32 type)
{
	struct call_args a = {};

	a.cls = usdt_arg(ctx, 1);
	a.cls_len = (__u32)usdt_arg(ctx, 2);
	a.fn = usdt_arg(ctx, 3);
	a.fn_len = (__u32)usdt_arg(ctx, 4);
	a.file = usdt_arg(ctx, 5);
	a.file_len = (__u32)usdt_arg(ctx, 6);
	/* A zero length would read as "NUL-terminated": an empty symbol has no bytes to read. */
	if (!a.cls_len)
		a.cls = 0;
	if (!a.fn_len)
		a.fn = 0;
	if (!a.file_len)
		a.file = 0;
	return on_call(ctx, type, PROF_RT_JAVA, &a);
}

SEC("usdt")
int java_entry(struct pt_regs *ctx)
{
	return java_call(ctx, PROF_REC_CALL_ENTRY);
}

SEC("usdt")
int java_return(struct pt_regs *ctx)
{
	return java_call(ctx, PROF_REC_CALL_RETURN);
}

/* ---- markers (-f firefox): exceptions, imports, logs ---------------------------------- */

/* A NUL-terminated string of the target into dst; its length, 0 when unreadable (counted). */
static __always_inline __u16 marker_str(char *dst, __u32 size, __u64 src)
{
	long n;

	if (!src)
		return 0;
	n = bpf_probe_read_user_str(dst, size, (const void *)src);
	if (n < 0) {
		prof_count(PROF_CNT_MARKER_READ_FAIL);
		return 0;
	}
	return n > 0 ? (__u16)(n - 1) : 0;
}

/*
 * One marker: text (NUL-terminated, or text_len bytes when text_len > 0: HotSpot's symbols),
 * file and line where the probe gives them.
 */
static __always_inline int on_marker(__u32 runtime, __u32 kind, __u64 text, __u32 text_len,
				     __u64 file, __u32 line, __u32 arg)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32;
	struct prof_call_marker *m;

	if (!prof_is_target(pid))
		return 0;
	m = prof_reserve(sizeof(*m));
	if (!m) {
		prof_count(PROF_CNT_MARKER_LOST);
		return 0;
	}
	m->type = PROF_REC_CALL_MARKER;
	m->pid = pid;
	m->tid = (__u32)id;
	m->ts = bpf_ktime_get_ns();
	m->runtime = runtime;
	m->kind = kind;
	m->line = line;
	m->arg = arg;
	if (text_len) {
		/* Length-delimited: at most the field (the record is zeroed: a NUL follows when
		 * shorter). */
		text_len = prof_bound(text_len, sizeof(m->text));
		if (bpf_probe_read_user(m->text, text_len, (const void *)text)) {
			prof_count(PROF_CNT_MARKER_READ_FAIL);
			text_len = 0;
		}
		m->text_len = (__u16)text_len;
	} else {
		m->text_len = marker_str(m->text, sizeof(m->text), text);
	}
	m->file_len = marker_str(m->file, sizeof(m->file), file);
	prof_submit(m, sizeof(*m));
	return 0;
}

/* php:exception__thrown(char *classname): NULL when PHP rethrows without an object. */
SEC("usdt")
int php_exc_thrown(struct pt_regs *ctx)
{
	return on_marker(PROF_RT_PHP, PROF_MARK_EXC_THROWN, usdt_arg(ctx, 0), 0, 0, 0, 0);
}

/* php:exception__caught(char *classname): PHP passes ce->name, a zend_string *, cast. */
SEC("usdt")
int php_exc_caught(struct pt_regs *ctx)
{
	__u64 zs = usdt_arg(ctx, 0);

	return on_marker(PROF_RT_PHP, PROF_MARK_EXC_CAUGHT, zs ? zs + PROF_PHP_ZSTR_VAL_OFF : 0, 0,
			 0, 0, 0);
}

/* php:error(char *message, char *file, int line) */
SEC("usdt")
int php_error(struct pt_regs *ctx)
{
	return on_marker(PROF_RT_PHP, PROF_MARK_ERROR, usdt_arg(ctx, 0), 0, usdt_arg(ctx, 1),
			 (__u32)usdt_arg(ctx, 2), 0);
}

/* python:import__find__load__start(char *modulename) */
SEC("usdt")
int python_import_start(struct pt_regs *ctx)
{
	return on_marker(PROF_RT_PYTHON, PROF_MARK_IMPORT_START, usdt_arg(ctx, 0), 0, 0, 0, 0);
}

/* python:import__find__load__done(char *modulename, int found) */
SEC("usdt")
int python_import_done(struct pt_regs *ctx)
{
	return on_marker(PROF_RT_PYTHON, PROF_MARK_IMPORT_DONE, usdt_arg(ctx, 0), 0, 0, 0,
			 usdt_arg(ctx, 1) ? 1 : 0);
}

/* hotspot:class__loaded(char *name, int len, void *loader_data, bool shared): Symbol bytes,
 * not NUL-terminated. */
SEC("usdt")
int java_class_loaded(struct pt_regs *ctx)
{
	__u64 name = usdt_arg(ctx, 0);
	__u32 len = (__u32)usdt_arg(ctx, 1);

	if (!len)
		name = 0;
	return on_marker(PROF_RT_JAVA, PROF_MARK_CLASS_LOAD, name, len, 0, 0,
			 usdt_arg(ctx, 3) ? 1 : 0);
}
