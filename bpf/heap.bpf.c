// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocator tracing.  Entry probes remember the arguments per thread; return probes, whose
 * user stack is complete (DESIGN.md §7: at the entry of glibc's malloc the frame-pointer walk
 * skips the immediate caller), emit the allocation with its frames.  The uprobe cookie says
 * which allocator function fired, so one program serves them all.
 */
#include "common.bpf.h"
#include "events.bpf.h"
#include "heap_state.bpf.h"
#include "prof_heap.h"
/* Allocations repeat their stacks: whole walks are kept (bpf/unwind.bpf.h). */
#define PROF_WALK_CACHE
#define PROF_PY_CODE_CACHE
#include "unwind.bpf.h"

#include <bpf/usdt.bpf.h>

/* Uprobe sessions' kfunc (Linux 6.13); weak, so the object loads where it is missing. */
extern bool bpf_session_is_return(void) __ksym __weak;

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

struct heap_scratch {
	struct prof_heap_record r; /* first: heap_record_from moves its head within it */
	/* The sampled set's keys of the block made and of a realloc's old one: here, not on the
	 * stack the walk's calls share (heap_return's chain is at the 512-byte limit). */
	struct prof_sampled_key key, nkey;
};

/* An allocation record with its frames, built here and copied into the ring buffer at its
 * real size (too big for the 512-byte BPF stack, and its size is known only at the end). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct heap_scratch);
} prof_heap_scratch SEC(".maps");

/*
 * Per thread, in task-local storage (freed with the thread, so none outlives it or is found by
 * a thread that reuses its id): the outermost allocator call in flight, and --sample-bytes'
 * countdown.  A probe reaches it by one pointer from the task, where a hash map costs an update
 * at the entry and a lookup and a delete at the return.
 */
struct prof_heap_thread {
	struct prof_heap_pending call;
	__s64 left;   /* bytes until the thread's next sampled allocation */
	bool in_call; /* call holds an allocator call in flight */
	bool drawn;   /* left holds a draw (the first is drawn at the thread's first call) */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct prof_heap_thread);
} prof_heap_threads SEC(".maps");

/* This thread's state; made at its first allocator call (NULL: no memory, counted there). */
static __always_inline struct prof_heap_thread *heap_thread(bool create)
{
	return bpf_task_storage_get(&prof_heap_threads, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

const volatile __u64 sample_bytes = 0;
/* --sample-bytes: prof_sampled entries one process may hold (PROF_SAMPLED_SHARE). */
const volatile __s64 sampled_share = PROF_SAMPLED_SHARE;
/* -p: the uprobes are attached per process, so the kernel filters already. */
const volatile bool pid_filtered = false;
/*
 * Set by userspace once every probe of the start is in (loader__arm): a -p target's probes go
 * in one by one over milliseconds, and a free probe live before its allocation probes would see
 * frees of blocks it never saw made, a return probe before its entry returns with no entry.
 */
volatile bool heap_armed = false;

/*
 * Set by userspace before the first process goes onto its otel_memory probes
 * (loader__heap_path): until then the allocator probes skip the lookup of prof_otel_procs.
 */
volatile bool heap_otel_any = false;

/*
 * Is an allocator probe of this link (cookie) not the one that serves tgid?  A process on the
 * otel_memory path has its own probes report its heap (its hit counted: a trap it pays for
 * nothing); one on PROF_PATH_OWN is served by its own links only, every other by the links
 * attached for every process.  count: an entry or a free (a return is its entry's).
 */
static __always_inline bool path_skips(__u32 tgid, __u64 cookie, bool count)
{
	__u8 path;

	if (!heap_otel_any)
		return false;
	path = prof_heap_path(tgid);
	if (path == PROF_PATH_OTEL) {
		if (count)
			prof_count(PROF_CNT_HEAP_TRAPS_OTEL);
		return true;
	}
	return (path == PROF_PATH_OWN) != !!(cookie & PROF_COOKIE_OWN);
}

/*
 * The time of a heap record.  Only the event traces (-f chrome, perfetto, firefox, codetracer;
 * memtrace stamps events itself) place heap events in time finer than a clock tick; ages, peaks and
 * OOM snapshots count in milliseconds at least.  Without a trace, a CPU reads the clock once per
 * tick (the first record after jiffies moved) and stamps the tick's later records with that
 * reading: the same clock as bpf_ktime_get_ns, never ahead of it, at most a tick behind, without a
 * TSC read per record (about 25 ns on a VM; two per malloc+free pair).  bpf_jiffies64 is a load
 * (inlined by the verifier); tracing programs may not call bpf_ktime_get_coarse_ns.
 */
const volatile bool heap_fine_ts = true;

struct heap_clock {
	__u64 jiffies, ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct heap_clock);
} prof_heap_clock SEC(".maps");

static __always_inline __u64 heap_now(void)
{
	struct heap_clock *c;
	__u64 j;

	if (heap_fine_ts)
		return bpf_ktime_get_ns();
	c = bpf_map_lookup_elem(&prof_heap_clock, &(__u32){0});
	if (!c)
		return bpf_ktime_get_ns();
	j = bpf_jiffies64();
	if (c->jiffies != j || !c->ns) {
		c->jiffies = j;
		c->ns = bpf_ktime_get_ns();
	}
	return c->ns;
}

static __always_inline bool heap_target(__u32 tgid)
{
	return heap_armed && (pid_filtered || prof_is_target(tgid));
}

static __always_inline __s64 next_interval(void)
{
	__u32 idx = bpf_get_prandom_u32() % PROF_SAMPLE_TABLE;
	__u64 *v = bpf_map_lookup_elem(&prof_sample_intervals, &idx);

	return v ? (__s64)*v : (__s64)sample_bytes;
}

/* True if an allocation of size bytes by thread t is to be recorded. */
static __always_inline bool sample_take(struct prof_heap_thread *t, __u64 size)
{
	bool taken;

	if (!t->drawn) {
		/* Drawn now, not at zero: a zero countdown would take the first call always. */
		t->left = next_interval() - (__s64)size;
		t->drawn = true;
		taken = t->left <= 0;
		if (taken)
			t->left = next_interval();
		return taken;
	}
	t->left -= (__s64)size;
	if (t->left > 0)
		return false;
	/* Several intervals may be crossed by one big block; it is taken once and weighted. */
	t->left = next_interval();
	return true;
}

/* new[] jumps to new (same sp): the allocator call that makes the block then returns into new. */
static __always_inline void tail_call(struct prof_heap_pending *cur,
				      const struct prof_heap_pending *p)
{
	if (cur->sp == p->sp && prof_fn_entry_only(cur->fn) && prof_fn_entry_only(p->fn)) {
		cur->code_start = p->code_start;
		cur->code_end = p->code_end;
	}
}

/*
 * Allocator functions that call no other probed one (glibc 2.36: calloc and the aligned family
 * go to internal functions, not to malloc's symbol).  Under a session an unsampled call of one
 * leaves no entry and skips its return: no inner call needs to see that it drew.
 */
static __always_inline bool leaf_fn(__u32 fn)
{
	return fn == PROF_FN_MALLOC || fn == PROF_FN_CALLOC || fn == PROF_FN_POSIX_MEMALIGN ||
	       fn == PROF_FN_ALIGNED_ALLOC || fn == PROF_FN_MEMALIGN || fn == PROF_FN_VALLOC ||
	       fn == PROF_FN_PVALLOC;
}

/*
 * Under a session, a realloc that did not draw a sample and whose old block was not sampled has
 * nothing for its return: the new block is not sampled, the old one is userspace's news only if
 * it was.  realloc(NULL) is malloc and needs its return (the malloc it jumps to must see that
 * this call drew).  glibc's realloc reaches malloc's symbol for an old block otherwise only where
 * an mmapped chunk cannot be remapped or an arena is exhausted: that inner malloc then draws for
 * itself, a second draw for one call on a path Linux's mremap makes all but unused.  Not
 * reallocarray: the realloc it calls would draw again on every call.
 */
static __always_inline bool realloc_returns(__u32 fn, __u64 tgid, __u64 old_addr)
{
	struct prof_sampled_key key = {.tgid = (__u32)tgid, .addr = old_addr};

	return fn != PROF_FN_REALLOC || !old_addr || bpf_map_lookup_elem(&prof_sampled, &key);
}

/*
 * An allocator call's entry.  1 when its return has nothing to do (a session then skips the
 * return probe), 0 when it must run.  session: the entry and return are one uprobe session
 * (--sample-bytes only; constant in each caller).
 */
static __always_inline int enter(struct pt_regs *ctx, __u64 cookie, __u64 size, __u64 old_addr,
				 bool session)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_heap_pending p = {}, *cur;
	struct prof_heap_thread *t;
	__u32 fn = (__u32)cookie;
	bool taken;

	/* Not a target, or not served by this link (its own otel_memory probes, links of its own).
	 */
	if (!heap_target(id >> 32) || path_skips(id >> 32, cookie, true))
		return 1;
	t = heap_thread(true);
	if (!t) {
		prof_count(PROF_CNT_PENDING_FULL);
		return 1;
	}
	p.size = size;
	p.old_addr = old_addr;
	p.sp = PT_REGS_SP(ctx);
	p.fn = fn;
	if (prof_fn_entry_only(fn)) {
		p.code_start = PT_REGS_IP(ctx);
		p.code_end = p.code_start + PROF_COOKIE_SIZE(cookie);
	}
	cur = t->in_call ? &t->call : NULL;
	if (sample_bytes) {
		/*
		 * An outer call in flight (higher on the stack, or at the same sp for a tail call)
		 * drew for this one: operator new -> malloc, realloc(NULL) -> malloc draw once.
		 * Unsampled outer calls leave an entry too, so that their inner calls see them.
		 */
		if (cur && cur->sp >= p.sp) {
			tail_call(cur, &p);
			/* Into an operator new, this call's return reports (or ends) new's call;
			 * an outer realloc's own return does that. */
			return prof_fn_entry_only(cur->fn) ? 0 : 1;
		}
		taken = sample_take(t, size);
		/* A call in flight below us is stale: its return never came (longjmp, exception).
		 */
		if (cur && prof_fn_entry_only(cur->fn) && !(cur->flags & PROF_PENDING_UNSAMPLED))
			prof_count(PROF_CNT_CXX_NEW_LOST);
		if (!taken && session &&
		    (leaf_fn(fn) || !realloc_returns(fn, id >> 32, old_addr))) {
			t->in_call = false;
			return 1;
		}
		if (!taken)
			p.flags = PROF_PENDING_UNSAMPLED;
		t->call = p;
		t->in_call = true;
		return 0;
	}
	/*
	 * A call already in flight on this thread higher on the stack (or at the same sp for a tail
	 * call) is an outer allocator entry point (operator new calling malloc, reallocarray
	 * calling realloc): only the outer one counts.  One deeper than us is stale — its return
	 * never came (longjmp, a thread that died): replaced.
	 */
	if (!cur) {
		t->call = p;
		t->in_call = true;
	} else if (cur->sp < p.sp) {
		if (prof_fn_entry_only(cur->fn))
			prof_count(PROF_CNT_CXX_NEW_LOST);
		*cur = p;
	} else {
		tail_call(cur, &p);
	}
	return 0;
}

/* The entry of the allocator function the cookie names: its size and old block. */
static __always_inline int enter_fn(struct pt_regs *ctx, __u64 cookie, bool session)
{
	__u32 fn = (__u32)cookie;
	__u64 a0 = PT_REGS_PARM1(ctx), a1 = PT_REGS_PARM2(ctx), a2 = PT_REGS_PARM3(ctx);

	switch (fn) {
	case PROF_FN_MALLOC:
	case PROF_FN_VALLOC:
	case PROF_FN_PVALLOC:
		return enter(ctx, cookie, a0, 0, session);
	case PROF_FN_CALLOC:
		return enter(ctx, cookie, a0 * a1, 0, session);
	case PROF_FN_REALLOC:
		return enter(ctx, cookie, a1, a0, session);
	case PROF_FN_REALLOCARRAY:
		return enter(ctx, cookie, a1 * a2, a0, session);
	case PROF_FN_POSIX_MEMALIGN:
		return enter(ctx, cookie, a2, a0, session);
	case PROF_FN_ALIGNED_ALLOC:
	case PROF_FN_MEMALIGN:
		return enter(ctx, cookie, a1, 0, session);
	default:
		if (prof_fn_is_cxx_new(fn))
			return enter(ctx, cookie, a0, 0,
				     session); /* size: always the first argument */
		return 1;
	}
}

SEC("uprobe")
int BPF_KPROBE(heap_enter)
{
	enter_fn(ctx, bpf_get_attach_cookie(ctx), false);
	return 0;
}

/*
 * The *_multi twins: the same programs loaded for uprobe_multi links (one link per file and
 * kind, detached in one grace period; user/attach/heap_attach.c).  A program loaded for those
 * links cannot attach through a perf event: the originals serve files whose link is refused.
 */
SEC("?uprobe")
int BPF_KPROBE(heap_enter_multi)
{
	enter_fn(ctx, bpf_get_attach_cookie(ctx), false);
	return 0;
}

/* A sampled block of tgid left prof_sampled: one fewer held.  Never below zero: an exec drops
 * the count, and the old image's entries may still end (a race loses one at most). */
static __always_inline void sampled_left(__u32 tgid)
{
	__s64 *n = bpf_map_lookup_elem(&prof_sampled_procs, &tgid);

	if (n && *n > 0)
		__sync_fetch_and_add(n, -1);
}

/*
 * Keep a sampled block, unless its process holds its share of the map already, or the map (or
 * the map of counts) is full: counted, and its free will not travel.  1 kept, 0 kept already (a
 * block handed out again takes no more room), -1 not kept.
 */
static __always_inline int sampled_add(struct prof_sampled_key *key)
{
	__s64 *n = bpf_map_lookup_elem(&prof_sampled_procs, &key->tgid), first = 1;
	__u8 one = 1;

	if (n && *n >= sampled_share) {
		if (bpf_map_lookup_elem(&prof_sampled, key))
			return 0;
		prof_count(PROF_CNT_SAMPLED_PROC_CAP);
		return -1;
	}
	if (bpf_map_update_elem(&prof_sampled, key, &one, BPF_NOEXIST)) {
		if (bpf_map_lookup_elem(&prof_sampled, key))
			return 0;
		prof_count(PROF_CNT_SAMPLED_FULL);
		return -1;
	}
	if (!n && !bpf_map_update_elem(&prof_sampled_procs, &key->tgid, &first, BPF_NOEXIST))
		return 1;
	if (!n)
		n = bpf_map_lookup_elem(&prof_sampled_procs, &key->tgid); /* another thread's */
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 1;
	}
	bpf_map_delete_elem(&prof_sampled, key);
	prof_count(PROF_CNT_SAMPLED_FULL);
	return -1;
}

/* The sampled set's key of tgid's block at addr, written in place (its padding zeroed). */
static __always_inline struct prof_sampled_key *sampled_key(struct prof_sampled_key *k, __u32 tgid,
							    __u64 addr)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->tgid = tgid;
	k->addr = addr;
	return k;
}

/*
 * --sample-bytes: a block of this process left the heap (freed, or moved by a realloc).  Only
 * a sampled block is news to userspace: the others it never saw.
 */
static __always_inline void emit_free(__u64 id, __u64 addr)
{
	struct prof_sampled_key key = {.tgid = id >> 32, .addr = addr};
	struct prof_heap_free *e;

	if (sample_bytes) {
		/* Most frees are of blocks never sampled: a lookup takes no bucket lock. */
		if (!bpf_map_lookup_elem(&prof_sampled, &key) ||
		    bpf_map_delete_elem(&prof_sampled, &key))
			return;
		sampled_left(key.tgid);
	}
	e = prof_reserve(sizeof(*e));
	if (!e)
		return;
	e->type = PROF_REC_HEAP_FREE;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->pad = 0;
	e->addr = addr;
	e->ts = heap_now();
	prof_submit(e, sizeof(*e));
}

static __always_inline bool is_realloc(__u32 fn)
{
	return fn == PROF_FN_REALLOC || fn == PROF_FN_REALLOCARRAY;
}

/*
 * The stack of a block from an entry-only operator new is taken at the return of the allocator
 * it called: frame 0 is inside operator new.  Its caller's return address is in the slot at
 * operator new's entry sp.  An unwind-table walk saw operator new's frame and went on to that
 * caller: frame 0 is dropped.  A frame-pointer walk skipped the caller (operator new keeps no
 * frame pointer): frame 0 becomes the caller.  Either way the stack is exactly the one a
 * uretprobe on operator new would see.  The leaf words to drop (0 or 1), or -1 when the slot is
 * unreadable; a stack of no frames becomes the caller alone (the caller makes it 1).
 */
static __noinline int new_caller_fixup(__u64 *ips, __u32 n, __u64 entry_sp)
{
	__u64 caller = 0, real;

	if (bpf_probe_read_user(&caller, sizeof(caller), (void *)entry_sp))
		return -1;
	/* Another tracer's uretprobe on operator new put its trampoline in that slot. */
	real = prof_real_return(entry_sp);
	if (real)
		caller = real;
	if (n < 2 || n > PROF_STACK_WORDS || ips[1] != caller) {
		ips[0] = caller;
		return 0;
	}
	return 1;
}

/* Leaf words a record may drop: an otel_memory site's sampler frames, operator new's own. */
#define HEAP_SKIP_MAX PROF_OTEL_MAX_LEAVES
_Static_assert(HEAP_SKIP_MAX >= 1, "operator new drops one");

/*
 * The record of r without its first skip stack words: the header moves up over them (7 words,
 * where shifting the frames down cost a step per frame, a third of the return program on C++).
 */
static __always_inline void *heap_record_from(struct prof_heap_record *r, __u64 skip)
{
	__u64 *w = (__u64 *)r;

	skip = prof_bound(skip, HEAP_SKIP_MAX);
	if (skip) {
#pragma unroll
		for (int j = sizeof(r->e) / 8 - 1; j >= 0; j--)
			w[j + skip] = w[j];
	}
	return w + skip;
}

/*
 * Send an allocation with the current user stack (entry_sp != 0: an entry-only operator new's,
 * see new_caller_fixup).  leaves != 0: an otel_memory:alloc, whose first leaves frames are the
 * sampler's own (the probe site inside the allocation function the program called, and what
 * that function called to fire it): dropped, so that the leaf is that function's caller, as the
 * allocator return probes see it.  The record is built in per-CPU scratch and copied out at its
 * real length; a full ring buffer loses it (counted) and leaves the sampled set as it was.
 */
static __always_inline void emit_alloc(void *ctx, __u64 id, __u32 type, __u64 entry_sp, __u64 addr,
				       __u64 old_addr, __u64 size, __u64 weight, __u32 leaves)
{
	struct prof_sampled_key *key, *nkey;
	struct prof_heap_record *r;
	struct heap_scratch *sc;
	bool old_sampled = false;
	int kept = 0;
	__u32 zero = 0;
	__u64 n, len, skip = 0;
	long got;

	sc = bpf_map_lookup_elem(&prof_heap_scratch, &zero);
	if (!sc)
		return;
	r = &sc->r;
	key = &sc->key;
	nkey = &sc->nkey;
	r->e.type = type;
	r->e.pid = id >> 32;
	r->e.tid = (__u32)id;
	r->e.flags = 0;
	r->e.addr = addr;
	r->e.old_addr = 0;
	r->e.size = size;
	r->e.ts = heap_now();
	r->e.weight = weight;
	/* a failure is counted there */
	got = prof_user_stack_py(ctx, r->frames, 0, &r->e.py,
				 (struct prof_stack_cap){PROF_MAX_FRAMES, PROF_STACK_WORDS});
	/* Dropped leaf words (the header moves over them at the end); all of them when leaves
	 * covers the stack. */
	if (got > 0 && leaves)
		skip = leaves < got ? leaves : (__u64)got;
	if (got >= 0 && entry_sp) {
		int k = new_caller_fixup(r->frames, (__u32)prof_bound((__u64)got, PROF_STACK_WORDS),
					 entry_sp);

		if (k < 0) {
			got = -1;
			prof_count(PROF_CNT_STACK_FAIL);
		} else {
			got = got ? got : 1;
			skip = (__u64)k;
		}
	}
	if (got < 0) {
		r->e.flags = PROF_HEAP_STACK_FAILED;
		skip = 0;
	}
	n = prof_bound(got > 0 ? (__u64)got : 0, PROF_STACK_WORDS);
	n = n > skip ? n - skip : 0;
	r->e.nframes = (__u16)n;
	if (type == PROF_REC_HEAP_REALLOC) {
		r->e.old_addr = old_addr;
		/* Sampling: the old block is userspace's only if it was sampled, and it is gone. */
		if (sample_bytes && addr && old_addr) {
			old_sampled = !bpf_map_delete_elem(&prof_sampled,
							   sampled_key(key, id >> 32, old_addr));
			if (!old_sampled)
				r->e.old_addr = 0;
			else
				sampled_left(key->tgid);
		}
	}
	/* Kept before it is sent, so that userspace knows a block whose free will not travel. */
	if (sample_bytes && addr) {
		kept = sampled_add(sampled_key(nkey, id >> 32, addr));
		if (kept < 0)
			r->e.flags |= PROF_HEAP_UNTRACKED;
	}
	len = prof_bound(sizeof(r->e) + n * sizeof(__u64), sizeof(r->e) + PROF_STACK_WORDS * 8);
	if (bpf_ringbuf_output(&prof_events, heap_record_from(r, skip), len,
			       prof_wakeup_flags(len))) {
		prof_count(PROF_CNT_RINGBUF_FULL);
		if (kept > 0 && !bpf_map_delete_elem(&prof_sampled, nkey))
			sampled_left(nkey->tgid);
		/* Userspace never heard of the move: the old block stays sampled. */
		if (old_sampled)
			sampled_add(key);
	}
}

/* An allocator called by an entry-only operator new returned: its block is operator new's. */
static __always_inline int new_returned(struct pt_regs *ctx, struct prof_heap_thread *t, __u32 fn,
					__u64 id, __u64 addr)
{
	/* posix_memalign's result lives behind an argument inner calls do not keep; NULL: a
	 * new_handler retry or a throw follows (see cxx_throw). */
	if (fn == PROF_FN_POSIX_MEMALIGN || !addr)
		return 0;
	if (!(t->call.flags & PROF_PENDING_UNSAMPLED))
		emit_alloc(ctx, id, PROF_REC_HEAP_ALLOC, t->call.sp, addr, 0, t->call.size, 0, 0);
	t->in_call = false;
	return 0;
}

/* An allocator call's return: the block it made, with its stack. */
static __always_inline int returned(struct pt_regs *ctx, __u64 cookie, long ret)
{
	__u32 fn = (__u32)cookie;
	__u64 id = bpf_get_current_pid_tgid();
	struct prof_heap_thread *t = heap_thread(false);
	struct prof_heap_pending *p;
	__u64 addr = (__u64)ret;

	/* Only a target's entry probe records a call in flight: that is the filter. */
	if (!t || !t->in_call) {
		if (!heap_target(id >> 32) || path_skips(id >> 32, cookie, false))
			return 0;
		/* Entered before attach, or (cgroup scope) before the process joined the cgroup. */
		if (prof_scope == PROF_SCOPE_CGROUP &&
		    !bpf_map_lookup_elem(&prof_scope_born, &(__u32){id >> 32}))
			prof_count(PROF_CNT_PENDING_JOINED);
		else
			prof_count(PROF_CNT_PENDING_MISSING);
		return 0;
	}
	p = &t->call;
	if (prof_fn_entry_only(p->fn)) {
		if (PT_REGS_IP(ctx) < p->code_start || PT_REGS_IP(ctx) >= p->code_end)
			return 0; /* called deeper, or returning elsewhere: not operator new's block
				   */
		return new_returned(ctx, t, fn, id, addr);
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
	emit_alloc(ctx, id, is_realloc(fn) ? PROF_REC_HEAP_REALLOC : PROF_REC_HEAP_ALLOC, 0, addr,
		   p->old_addr, p->size, 0, 0);
out:
	t->in_call = false;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(heap_return, long ret)
{
	return returned(ctx, bpf_get_attach_cookie(ctx), ret);
}

/* A return probe by the link's flag (BPF_F_UPROBE_MULTI_RETURN), not by its section. */
SEC("?uprobe")
int BPF_KRETPROBE(heap_return_multi, long ret)
{
	return returned(ctx, bpf_get_attach_cookie(ctx), ret);
}

/*
 * An exception thrown while operator new is in flight (std::bad_alloc, from operator new or a
 * new_handler): the allocation failed and its return never comes.  Counted, never live.
 */
static __always_inline int cxx_throw(struct pt_regs *ctx)
{
	struct prof_heap_thread *t = heap_thread(false);

	if (!t || !t->in_call || !prof_fn_cxx_throws(t->call.fn) || t->call.sp <= PT_REGS_SP(ctx))
		return 0; /* no operator new in flight above the throw */
	prof_count(PROF_CNT_CXX_THROWS);
	t->in_call = false;
	return 0;
}

/* Entry-only probes: free, and __cxa_throw (by its cookie). */
static __always_inline int freed(struct pt_regs *ctx, __u64 cookie, __u64 addr)
{
	__u64 id;

	if ((__u32)cookie == PROF_FN_CXX_THROW)
		return cxx_throw(ctx);
	id = bpf_get_current_pid_tgid();
	if (!addr || !heap_target(id >> 32) || path_skips(id >> 32, cookie, true))
		return 0;
	emit_free(id, addr);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(heap_free, __u64 addr)
{
	return freed(ctx, bpf_get_attach_cookie(ctx), addr);
}

SEC("?uprobe")
int BPF_KPROBE(heap_free_multi, __u64 addr)
{
	return freed(ctx, bpf_get_attach_cookie(ctx), addr);
}

/*
 * --sample-bytes where the kernel has uprobe sessions (6.13): one program at every allocator
 * function of a file, entry and return, attached as one session link (user/attach/heap_attach.c).
 * An entry returning 1 skips its return probe: an unsampled malloc costs one trap, not two.
 * An unsampled realloc of an unsampled block skips it too (realloc_returns).  Entry-only
 * functions (free, __cxa_throw, operator new and new[]) never keep their return.
 */
SEC("?uprobe")
int BPF_KPROBE(heap_session)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u32 fn = (__u32)cookie;

	if (bpf_session_is_return())
		return returned(ctx, cookie, (long)PT_REGS_RC(ctx));
	if (fn == PROF_FN_FREE || fn == PROF_FN_CXX_THROW) {
		freed(ctx, cookie, PT_REGS_PARM1(ctx));
		return 1;
	}
	if (enter_fn(ctx, cookie, true) || prof_fn_entry_only(fn))
		return 1;
	return 0;
}

/*
 * CPython's code_dealloc in a process the cache of code objects serves (bpf/python.bpf.h),
 * attached for that process alone: a code object is going, and its address may next hold
 * another one, so the fingerprints cached for the process so far stop holding.
 */
SEC("?uprobe")
int BPF_KPROBE(heap_py_code_dealloc)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct prof_unwind_proc *p = bpf_map_lookup_elem(&prof_unwind_procs, &tgid);

	if (p)
		__sync_fetch_and_add(&p->py.code_epoch, 1);
	prof_count(PROF_CNT_PY_CODE_FREED);
	return 0;
}

/*
 * The otel_memory USDT contract (OpenTelemetry eBPF profiler, design-docs/00003): a process's
 * own sampler fires alloc(ptr, size, weight) for a sampled allocation, weight being the bytes
 * the sample stands for, and free(ptr) when a block it reported leaves the heap (freed, or moved
 * by a realloc).  Only processes userspace put on that path fire into a record: the set is also
 * the scope filter, and the allocator probes skip exactly those processes.
 */
static __always_inline bool otel_arg(struct pt_regs *ctx, __u64 i, long *v)
{
	if (!bpf_usdt_arg(ctx, i, v))
		return true;
	prof_count(PROF_CNT_OTEL_ARG_FAIL);
	return false;
}

SEC("usdt")
int otel_alloc(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	long ptr, size, weight, leaves = 1;

	if (!heap_armed || !prof_heap_otel(id >> 32))
		return 0;
	if (!otel_arg(ctx, 0, &ptr) || !otel_arg(ctx, 1, &size) || !otel_arg(ctx, 2, &weight))
		return 0;
	/* Past the contract, a fourth argument: how many frames from the site are the sampler's
	 * (ours fires from a function of its own, user/sampler/sampler.h).  Else the site is in
	 * the allocation function itself. */
	if (bpf_usdt_arg_cnt(ctx) > 3 && !otel_arg(ctx, 3, &leaves))
		return 0;
	if (leaves < 1 || leaves > PROF_OTEL_MAX_LEAVES)
		leaves = 1;
	/* A weight of 0 breaks the contract: the block counts as itself. */
	emit_alloc(ctx, id, PROF_REC_HEAP_ALLOC, 0, (__u64)ptr, 0, (__u64)size,
		   weight ? (__u64)weight : (__u64)size, (__u32)leaves);
	return 0;
}

SEC("usdt")
int otel_free(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	long ptr;

	if (!heap_armed || !prof_heap_otel(id >> 32) || !otel_arg(ctx, 0, &ptr) || !ptr)
		return 0;
	emit_free(id, (__u64)ptr);
	return 0;
}

/*
 * Our preloaded sampler's bpftrace_prof:sampler_lost(size): a block due for a sample that its
 * set of live sampled blocks (PROF_SAMPLER_MAX_LIVE) had no room for, so no alloc fired for it.
 */
SEC("usdt")
int otel_lost(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (heap_armed && prof_heap_otel(id >> 32))
		prof_count(PROF_CNT_SAMPLER_LOST);
	return 0;
}
