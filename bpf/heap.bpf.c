// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocator tracing.  Entry probes remember the arguments per thread; return probes, whose
 * user stack is complete (DESIGN.md §7: at the entry of glibc's malloc the frame-pointer walk
 * skips the immediate caller), emit the allocation with its stack id.  The uprobe cookie says
 * which allocator function fired, so one program serves them all.
 */
#include "common.bpf.h"
#include "events.bpf.h"
#include "heap_state.bpf.h"
#include "prof_heap.h"
#include "stacks.bpf.h"

/* --sample-bytes: exponentially distributed intervals (mean = sample_bytes), from userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROF_SAMPLE_TABLE);
	__type(key, __u32);
	__type(value, __u64);
} prof_sample_intervals SEC(".maps");

/* --sample-bytes: sampled live blocks, so only their frees travel. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_SAMPLED_ENTRIES);
	__type(key, struct prof_sampled_key);
	__type(value, __u8);
} prof_sampled SEC(".maps");

const volatile __u64 sample_bytes = 0;
/* -p: the uprobes are attached per process, so the kernel filters already. */
const volatile bool pid_filtered = false;

static __always_inline bool heap_target(__u32 tgid)
{
	return pid_filtered || prof_is_target(tgid);
}

static __always_inline __s64 next_interval(void)
{
	__u32 idx = bpf_get_prandom_u32() % PROF_SAMPLE_TABLE;
	__u64 *v = bpf_map_lookup_elem(&prof_sample_intervals, &idx);

	return v ? (__s64)*v : (__s64)sample_bytes;
}

/* True if an allocation of size bytes by this thread is to be recorded. */
static __always_inline bool sample_take(__u32 tid, __u64 size)
{
	__s64 *left, first;
	bool taken;

	left = bpf_map_lookup_elem(&prof_sample_left, &tid);
	if (!left) {
		first = next_interval() - (__s64)size;
		taken = first <= 0;
		if (taken)
			first = next_interval();
		/* Full: the draw above still holds (the interval is memoryless), but counted. */
		if (bpf_map_update_elem(&prof_sample_left, &tid, &first, BPF_ANY))
			prof_count(PROF_CNT_SAMPLE_LEFT_FULL);
		return taken;
	}
	*left -= (__s64)size;
	if (*left > 0)
		return false;
	/* Several intervals may be crossed by one big block; it is taken once and weighted. */
	*left = next_interval();
	return true;
}

static __always_inline int enter(struct pt_regs *ctx, __u32 fn, __u64 size, __u64 old_addr)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct prof_heap_pending p = {}, *cur;

	if (!heap_target(id >> 32))
		return 0;
	p.size = size;
	p.old_addr = old_addr;
	p.sp = PT_REGS_SP(ctx);
	p.fn = fn;
	if (sample_bytes) {
		/*
		 * An outer call in flight (higher on the stack, or at the same sp for a tail call)
		 * drew for this one: operator new -> malloc, realloc(NULL) -> malloc draw once.
		 * Unsampled outer calls leave an entry too, so that their inner calls see them.
		 */
		cur = bpf_map_lookup_elem(&prof_pending, &tid);
		if (cur && cur->sp >= p.sp)
			return 0;
		if (!sample_take(tid, size))
			p.flags = PROF_PENDING_UNSAMPLED;
		if (cur) {
			*cur = p; /* stale: its return never came (longjmp, exception) */
			return 0;
		}
		if (bpf_map_update_elem(&prof_pending, &tid, &p, BPF_NOEXIST))
			prof_count(PROF_CNT_PENDING_FULL);
		return 0;
	}
	/*
	 * BPF_NOEXIST: a call already in flight on this thread is an outer allocator entry point
	 * (operator new calling malloc, reallocarray calling realloc); only the outer one counts.
	 */
	if (!bpf_map_update_elem(&prof_pending, &tid, &p, BPF_NOEXIST))
		return 0;
	cur = bpf_map_lookup_elem(&prof_pending, &tid);
	if (!cur) {
		prof_count(PROF_CNT_PENDING_FULL);
		return 0;
	}
	/*
	 * An outer call lives higher on the stack (or at the same sp for a tail call).  An entry
	 * deeper than us is stale — its return never came (longjmp, a thread that died): replace.
	 */
	if (cur->sp < p.sp)
		*cur = p;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(heap_enter)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a2 = PT_REGS_PARM3(ctx);

	switch (fn) {
	case PROF_FN_MALLOC:
	case PROF_FN_VALLOC:
	case PROF_FN_PVALLOC:
		return enter(ctx, fn, a0, 0);
	case PROF_FN_CALLOC:
		return enter(ctx, fn, a0 * a1, 0);
	case PROF_FN_REALLOC:
		return enter(ctx, fn, a1, a0);
	case PROF_FN_REALLOCARRAY:
		return enter(ctx, fn, a1 * a2, a0);
	case PROF_FN_POSIX_MEMALIGN:
		return enter(ctx, fn, a2, a0);
	case PROF_FN_ALIGNED_ALLOC:
	case PROF_FN_MEMALIGN:
		return enter(ctx, fn, a1, 0);
	default:
		if (prof_fn_is_cxx_new(fn))
			return enter(ctx, fn, a0, 0); /* every operator new takes the size first */
		return 0;
	}
}

/*
 * --sample-bytes: a block of this process left the heap (freed, or moved by a realloc).  Only
 * a sampled block is news to userspace: the others it never saw.
 */
static __always_inline void emit_free(__u64 id, __u64 addr)
{
	struct prof_sampled_key key = {.tgid = id >> 32, .addr = addr};
	struct prof_heap_free *e;

	if (sample_bytes && bpf_map_delete_elem(&prof_sampled, &key))
		return;
	e = prof_reserve(sizeof(*e));
	if (!e)
		return;
	e->type = PROF_REC_HEAP_FREE;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->addr = addr;
	prof_submit(e);
}

static __always_inline bool is_realloc(__u32 fn)
{
	return fn == PROF_FN_REALLOC || fn == PROF_FN_REALLOCARRAY;
}

SEC("uretprobe")
int BPF_KRETPROBE(heap_return, long ret)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_sampled_key key = {.tgid = id >> 32};
	__u32 tid = (__u32)id;
	struct prof_heap_pending *p;
	struct prof_heap_event *e;
	__u64 addr = (__u64)ret;
	long stack_id;
	__u8 one = 1;

	/* Only a target's entry probe records a pending call: that lookup is the filter. */
	p = bpf_map_lookup_elem(&prof_pending, &tid);
	if (!p) {
		if (heap_target(id >> 32))
			prof_count(PROF_CNT_PENDING_MISSING); /* entered before attach */
		return 0;
	}
	/* An inner call of an outer entry point (or a tail call of one): the outer reports it. */
	if (p->fn != fn || p->sp + 8 != PT_REGS_SP(ctx))
		return 0;

	if (p->flags & PROF_PENDING_UNSAMPLED) {
		/*
		 * A realloc that was not sampled still ends the old block: if that one was sampled,
		 * it must leave the in-use values.  (A failed realloc keeps it; realloc(p, 0) frees
		 * it through free, which the free probe sees.)
		 */
		if (is_realloc(fn) && p->old_addr && addr)
			emit_free(id, p->old_addr);
		goto out;
	}
	if (fn == PROF_FN_POSIX_MEMALIGN) {
		addr = 0;
		if (ret == 0 && bpf_probe_read_user(&addr, sizeof(addr), (void *)p->old_addr)) {
			prof_count(PROF_CNT_HEAP_READ_FAIL);
			addr = 0;
		}
	}

	e = prof_reserve(sizeof(*e));
	if (!e)
		goto out;
	stack_id = bpf_get_stackid(ctx, &prof_stacks, BPF_F_USER_STACK);
	if (stack_id < 0)
		prof_count(stack_id == -EEXIST ? PROF_CNT_STACK_COLLISION : PROF_CNT_STACK_FAIL);
	e->type = is_realloc(fn) ? PROF_REC_HEAP_REALLOC : PROF_REC_HEAP_ALLOC;
	e->pid = id >> 32;
	e->tid = tid;
	e->stack_id = (__s32)stack_id;
	e->addr = addr;
	e->size = p->size;
	if (is_realloc(fn)) {
		e->old_addr = p->old_addr;
		/* Sampling: the old block is userspace's only if it was sampled, and it is gone. */
		key.addr = p->old_addr;
		if (sample_bytes && addr && p->old_addr && bpf_map_delete_elem(&prof_sampled, &key))
			e->old_addr = 0;
	}
	if (sample_bytes && addr) {
		key.addr = addr;
		if (bpf_map_update_elem(&prof_sampled, &key, &one, BPF_ANY))
			prof_count(PROF_CNT_SAMPLED_FULL);
	}
	prof_submit(e);
out:
	bpf_map_delete_elem(&prof_pending, &tid);
	return 0;
}

/*
 * An exception thrown while operator new is in flight (std::bad_alloc, from operator new or a
 * new_handler): the allocation failed and its return never comes.  Counted, never live.
 */
static __always_inline int cxx_throw(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_heap_pending *p;
	__u32 tid = (__u32)id;

	p = bpf_map_lookup_elem(&prof_pending, &tid);
	if (!p || !prof_fn_is_cxx_new(p->fn) || p->sp <= PT_REGS_SP(ctx))
		return 0; /* no operator new in flight above the throw */
	prof_count(PROF_CNT_CXX_THROWS);
	bpf_map_delete_elem(&prof_pending, &tid);
	return 0;
}

/* Entry-only probes: free, and __cxa_throw (by its cookie). */
SEC("uprobe")
int BPF_KPROBE(heap_free, __u64 addr)
{
	__u64 id;

	if (bpf_get_attach_cookie(ctx) == PROF_FN_CXX_THROW)
		return cxx_throw(ctx);
	id = bpf_get_current_pid_tgid();
	if (!addr || !heap_target(id >> 32))
		return 0;
	emit_free(id, addr);
	return 0;
}
