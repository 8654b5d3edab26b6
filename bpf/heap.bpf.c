// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocator tracing.  Entry probes remember the arguments per thread; return probes, whose
 * user stack is complete (DESIGN.md §7: at the entry of glibc's malloc the frame-pointer walk
 * skips the immediate caller), emit the allocation with its stack id.  The uprobe cookie says
 * which allocator function fired, so one program serves them all.
 */
#include "common.bpf.h"
#include "prof_heap.h"

/* --sample-bytes: per-thread bytes left until the next sampled allocation. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __s64);
} prof_sample_left SEC(".maps");

/* --sample-bytes: exponentially distributed intervals (mean = sample_bytes), from userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROF_SAMPLE_TABLE);
	__type(key, __u32);
	__type(value, __u64);
} prof_sample_intervals SEC(".maps");

/* --sample-bytes: addresses of sampled live blocks, so only their frees travel. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, __u64);
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

	left = bpf_map_lookup_elem(&prof_sample_left, &tid);
	if (!left) {
		first = next_interval() - (__s64)size;
		if (first > 0) {
			bpf_map_update_elem(&prof_sample_left, &tid, &first, BPF_ANY);
			return false;
		}
		first = next_interval();
		bpf_map_update_elem(&prof_sample_left, &tid, &first, BPF_ANY);
		return true;
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
	if (sample_bytes) {
		/* An inner call (new -> malloc) must not draw from the sampling budget twice. */
		if (bpf_map_lookup_elem(&prof_pending, &tid) || !sample_take(tid, size))
			return 0;
	}
	p.size = size;
	p.old_addr = old_addr;
	p.sp = PT_REGS_SP(ctx);
	p.fn = fn;
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
		if (fn >= PROF_FN_CXX_NEW && fn < PROF_FN__COUNT)
			return enter(ctx, fn, a0, 0); /* every operator new takes the size first */
		return 0;
	}
}

SEC("uretprobe")
int BPF_KRETPROBE(heap_return, long ret)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct prof_heap_pending *p;
	struct prof_heap_event *e;
	__u64 addr = (__u64)ret;
	long stack_id;

	/* Only a target's entry probe records a pending call: that lookup is the filter. */
	p = bpf_map_lookup_elem(&prof_pending, &tid);
	if (!p) {
		if (!sample_bytes && heap_target(id >> 32))
			prof_count(PROF_CNT_PENDING_MISSING); /* entered before attach */
		return 0;				      /* (or not sampled) */
	}
	/* An inner call of an outer entry point (or a tail call of one): the outer reports it. */
	if (p->fn != fn || p->sp + 8 != PT_REGS_SP(ctx))
		return 0;

	if (fn == PROF_FN_POSIX_MEMALIGN) {
		addr = 0;
		if (ret == 0)
			bpf_probe_read_user(&addr, sizeof(addr), (void *)p->old_addr);
	}

	e = prof_reserve(sizeof(*e));
	if (!e)
		goto out;
	stack_id = bpf_get_stackid(ctx, &prof_stacks, BPF_F_USER_STACK);
	if (stack_id < 0)
		prof_count(stack_id == -EEXIST ? PROF_CNT_STACK_COLLISION : PROF_CNT_STACK_FAIL);
	e->type = (fn == PROF_FN_REALLOC || fn == PROF_FN_REALLOCARRAY) ? PROF_REC_HEAP_REALLOC
									: PROF_REC_HEAP_ALLOC;
	e->pid = id >> 32;
	e->tid = tid;
	e->stack_id = (__s32)stack_id;
	e->addr = addr;
	e->old_addr = e->type == PROF_REC_HEAP_REALLOC ? p->old_addr : 0;
	e->size = p->size;
	if (sample_bytes && addr) {
		__u8 one = 1;

		if (bpf_map_update_elem(&prof_sampled, &addr, &one, BPF_ANY))
			prof_count(PROF_CNT_SAMPLED_FULL);
	}
	prof_submit(e);
out:
	bpf_map_delete_elem(&prof_pending, &tid);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(heap_free, __u64 addr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_heap_free *e;

	if (!addr || !heap_target(id >> 32))
		return 0;
	/* Sampling: only blocks that were sampled are of interest to userspace. */
	if (sample_bytes && bpf_map_delete_elem(&prof_sampled, &addr))
		return 0;
	e = prof_reserve(sizeof(*e));
	if (!e)
		return 0;
	e->type = PROF_REC_HEAP_FREE;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->pad = 0;
	e->addr = addr;
	prof_submit(e);
	return 0;
}
