/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames read from CPython 3.8–3.13 while the native stack is walked (bpf/unwind.bpf.h).
 * Each native _PyEval_EvalFrameDefault frame is replaced by the Python frames that invocation
 * runs: one frame object for 3.8–3.10; for 3.11+ the interpreter frames down to the invocation's
 * entry frame (3.11: is_entry) or shim frame (3.12+: owner FRAME_OWNED_BY_CSTACK).  Native frames
 * above and below stay, so C extensions calling back into Python show both.
 *
 * The thread's PyThreadState comes from the pthread key CPython keeps it under
 * (_PyRuntime.gilstate.autoTSSkey), read from glibc's thread descriptor at fsbase: that slot
 * stays set while the thread waits for the GIL, unlike 3.12's _Py_tss_tstate.  Offsets and
 * runtime addresses are written by userspace (user/sym/python.c, user/unwind/unwinder.c) into the
 * process's unwinder entry.  One Python frame per bpf_loop iteration, as for native frames, so
 * the frame limit bounds both.
 */
#ifndef PROF_PYTHON_BPF_H
#define PROF_PYTHON_BPF_H

#include "common.bpf.h"
#include "prof_python.h"
#include "prof_unwind.h"

/* The Python side of one stack walk (in struct unwind_walk). */
struct py_walk {
	__u64 tstate; /* this thread's PyThreadState (0: none) */
	__u64 frame;  /* the next frame object / interpreter frame to emit (0: none left) */
	__u8 looked;  /* tstate looked up (once per walk, at the first eval frame) */
	__u8 active;  /* emitting the Python frames of the eval frame at the walk's ip */
	__u8 emitted; /* frames emitted for that eval frame */
	__u8 done;    /* that eval frame's Python frames are out: step over it natively, unpushed */
	__u8 thread;  /* enum prof_py_thread */
	__u32 frames; /* Python frames emitted (counted once, at the end of the walk) */
#ifdef PROF_PY_CODE_CACHE
	__u8 cache;   /* the code objects' cache serves this process (py_cache_start) */
	__u32 cached; /* frames it named (counted once, at the end of the walk) */
	__u32 tgid;   /* … the process, its entry's generation and code_epoch at the walk's */
	__u32 gen;    /* start, before any code object was read: a slot written with them */
	__u64 epoch;  /* holds only while no code object of the process was freed since */
#endif
};

/* The word at addr from the stack window of this walk, when it holds it (bpf/unwind.bpf.h). */
static __always_inline bool stack_win_word(__u64 addr, __u64 *dst);

static __always_inline bool py_read(void *dst, __u32 size, __u64 addr)
{
	return prof_read_user(dst, size, (void *)addr) == 0;
}

static __always_inline bool py_is_eval(const struct prof_py_proc *py, __u64 pc)
{
	return py->version &&
	       ((pc >= py->eval_lo && pc < py->eval_hi) || (pc >= py->cold_lo && pc < py->cold_hi));
}

/* Bytes read at once from a frame and from a code object: every field the walk needs lies in
 * them for 3.8–3.13 (checked by the offsets' bounds below, else read alone). */
#define PY_FRAME_READ 112
/* Below it no object lives (the kernel's mmap_min_addr, 64 KiB by default). */
#define PY_MIN_ADDR   65536
#define PY_CODE_READ  128

/*
 * A field of size n (8, 4 or 1) at off in buf (of len bytes, read from addr), or read alone past
 * it or off its natural alignment (no CPython field is).  buf is words: clang copies a field out
 * of a byte array at a variable offset a byte at a time.  cap: a power of two, at most buf's
 * size and at least len (py_field: 128).
 */
static __always_inline bool py_field_cap(void *dst, __u32 n, const __u64 *buf, __u32 len, __u16 off,
					 __u64 addr, __u32 cap)
{
	__u32 o = off;

	if (o + n > len || (o & (n - 1)))
		return py_read(dst, n, addr + off);
	o &= cap - 1; /* o + n <= len <= cap: a bound the verifier sees */
	if (n == 8)
		*(__u64 *)dst = buf[o >> 3];
	else if (n == 4)
		*(__u32 *)dst = ((const __u32 *)buf)[o >> 2];
	else
		*(__u8 *)dst = ((const __u8 *)buf)[o];
	return true;
}

static __always_inline bool py_field(void *dst, __u32 n, const __u64 *buf, __u32 len, __u16 off,
				     __u64 addr)
{
	return py_field_cap(dst, n, buf, len, off, addr, 128);
}

/*
 * Bytes of the runtime read at once for the TSS key and the GIL's holder (3.8–3.11: 16 or 24
 * apart), and of a thread state for its interpreter and frame fields (every version: below
 * 80).  A read costs about the same whatever its size up to a page: the walk's lookup is 4
 * reads on 3.11 (runtime, key slot, thread state, cframe), 5 on 3.13, 6 on 3.12.
 */
#define PY_RT_READ 32
#define PY_TS_READ 128

#ifndef PROF_CROSS_TASK
/* The head of the GIL holder's thread state up to its thread_id (3.8–3.11: 152-184 bytes). */
#define PY_TS_HOLDER_READ 192

/*
 * 3.8–3.11 read the GIL's holder with the key.  A thread running Python code holds the GIL:
 * when the holder's thread state is this thread's (its thread_id is pthread_self, glibc's
 * thread pointer: fsbase), it is the one the key's slot holds, and its head is read now (into
 * ts, *ts_len bytes of it usable as PY_TS_READ's) — the slot's read saved.  False otherwise.
 */
static __always_inline bool py_holder_is_us(const struct prof_py_proc *py, __u64 holder,
					    __u64 fsbase, __u64 *ts, __u32 *ts_len)
{
	__u32 k = py->ts_thread_id,
	      n = py->o.ts_frame > py->o.ts_interp ? py->o.ts_frame : py->o.ts_interp;

	if (!holder || !k || (k & 7))
		return false;
	n = (n > k ? n : k) + 8;
	if (n > PY_TS_HOLDER_READ || !py_read(ts, (__u32)prof_bound(n, PY_TS_HOLDER_READ), holder))
		return false;
	k >>= 3;
	if (k >= PY_TS_HOLDER_READ / 8 || ts[k] != fsbase)
		return false;
	*ts_len = n > PY_TS_READ ? PY_TS_READ : n;
	return true;
}
#endif

/* Who holds the GIL (3.12+: the interpreter's own GIL), from the thread state's head read
 * into ts (ts_len bytes): the thread state of its holder, or 0.  Its fields in g's scratch
 * (see struct py_scratch). */
struct py_gil_vars {
	__u64 interp, gil, g[2], holder;
	__u32 locked;
};

static __always_inline __u64 py_gil_holder(const struct prof_py_proc *py, __u64 tstate,
					   const __u64 *ts, __u32 ts_len, struct py_gil_vars *g)
{
	__u32 lo, len;

	/* each field written by its read, failed or not (py_read zeroes on a fault) */
	if (!py->o.interp_gil || !py_field(&g->interp, 8, ts, ts_len, py->o.ts_interp, tstate) ||
	    !g->interp || !py_read(&g->gil, sizeof(g->gil), g->interp + py->o.interp_gil) ||
	    !g->gil)
		return 0;
	/* locked and last_holder are neighbours in _gil_runtime_state: one read. */
	lo = py->o.gil_locked < py->o.gil_last_holder ? py->o.gil_locked : py->o.gil_last_holder;
	len = (py->o.gil_locked > py->o.gil_last_holder ? py->o.gil_locked
							: py->o.gil_last_holder) +
	      8 - lo;
	if (len > sizeof(g->g) || !py_read(g->g, len, g->gil + lo))
		return 0;
	if (!py_field_cap(&g->locked, 4, g->g, len, py->o.gil_locked - lo, g->gil + lo,
			  sizeof(g->g)) ||
	    !g->locked)
		return 0;
	py_field_cap(&g->holder, 8, g->g, len, py->o.gil_last_holder - lo, g->gil + lo,
		     sizeof(g->g));
	return g->holder;
}

/* The walked thread's thread pointer (glibc's descriptor), 0 when unknown.  Global: the task
 * reference the dump iterator takes stays out of the frame walker's stack. */
__noinline __u64 prof_walk_fsbase(void)
{
	struct task_struct *task = prof_walk_task_get();
	__u64 fsbase;

	if (!task)
		return 0;
	fsbase = task->thread.fsbase;
	prof_walk_task_put(task);
	return fsbase;
}

/* The fields one step reads, written through their addresses (on the stack, a slot each: see
 * struct py_scratch).  Zeroed at every step. */
struct py_step_vars {
	__u64 code, back, ptr, type, names[2];
	__u32 firstlineno;
	__s32 lasti;
	__u8 mark;
};

/*
 * What a walk's Python steps and lookup keep per CPU, not on the stack: where a program has
 * no private stack, 512 bytes are all its calls', and the steps run three calls deep in the
 * walk (see py_walk_begin).
 */
struct py_scratch {
	__u64 cb[PY_CODE_READ / 8 + 2]; /* a code object's head; the lookup's runtime read */
	struct py_step_vars v;
	struct py_gil_vars gil;
	struct py_walk walk;
};

#ifdef PROF_CROSS_TASK
/*
 * The dump iterator's programs get no private stack: the 512 bytes of the iterator, the frame
 * callback and this step together cannot hold the read buffers, so they live here (one iterator
 * read at a time).
 */
struct py_read_bufs {
	__u64 fb[PY_FRAME_READ / 8 + 2];
	struct py_scratch s;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_read_bufs);
} prof_py_read_bufs SEC(".maps");
#endif

#ifndef PROF_CROSS_TASK
/*
 * 3.11+ frames (_PyInterpreterFrame) live in the thread's data stack, each caller below its
 * callee: the frames of one walk are read a window at a time, the window ending at the frame
 * asked for and starting no lower than that frame's page (which is mapped: a read can fail only
 * past the frame's own head, and then the head is read alone as before).  A user read's cost is
 * mostly fixed (a frame's head and a 1 KiB window cost about the same), so the next frames come
 * nearly free.  Per CPU and per object, emptied at the start of every walk, like the native
 * stack's (bpf/unwind.bpf.h): the frames of the thread being walked do not change under it.
 */
#define PY_WIN 1024

struct prof_py_win {
	__u64 base, len; /* [base, base + len) is in data; len 0: empty */
	/* words (see py_field); 2 more: a head's fields are read through a bound of 16 words */
	__u64 data[(PY_WIN + PY_FRAME_READ) / 8 + 2];
	/* the lookup's thread state head; + 1: the verifier bounds ts[k] by k's bytes */
	__u64 ts[PY_TS_HOLDER_READ / 8 + 1];
	struct py_scratch s;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_py_win);
} prof_py_win SEC(".maps");
#endif

/* A walk's Python state (struct py_scratch), zeroed, and the window emptied.  NULL: no scratch
 * (never). */
static __always_inline struct py_walk *py_walk_begin(void)
{
#ifdef PROF_CROSS_TASK
	struct py_read_bufs *s = bpf_map_lookup_elem(&prof_py_read_bufs, &(__u32){0});
#else
	struct prof_py_win *s = bpf_map_lookup_elem(&prof_py_win, &(__u32){0});
#endif

	if (!s)
		return NULL;
#ifndef PROF_CROSS_TASK
	s->len = 0;
#endif
	__builtin_memset(&s->s.walk, 0, sizeof(s->s.walk));
	return &s->s.walk;
}

/* The current thread's PyThreadState and innermost frame; false when it has none (a native
 * thread of a Python process, an interpreter not initialized yet). */
static __always_inline bool py_lookup(const struct prof_py_proc *py, struct py_walk *p)
{
	__u64 holder = 0, v = 0, fsbase = prof_walk_fsbase();
	__u32 tss[2] = {}, lo = py->o.tss, len = 8, ts_len;
	__u64 *ts, *rt; /* scratch (PY_TS_READ and PY_RT_READ bytes and more): not on the stack */
	struct py_gil_vars *gil;
#ifdef PROF_CROSS_TASK
	struct py_read_bufs *bufs = bpf_map_lookup_elem(&prof_py_read_bufs, &(__u32){0});

	if (!bufs)
		return false;
	ts = bufs->fb;
	rt = bufs->s.cb;
	gil = &bufs->s.gil;
#else
	struct prof_py_win *win = bpf_map_lookup_elem(&prof_py_win, &(__u32){0});

	if (!win)
		return false;
	ts = win->ts;
	rt = win->s.cb; /* a step's, and no step runs during the lookup */
	gil = &win->s.gil;
#endif

	/* The key, and (3.8–3.11) the GIL's holder beside it. */
	if (py->o.gil_holder && py->o.gil_holder < py->o.tss &&
	    py->o.tss + 8 - py->o.gil_holder <= PY_RT_READ) {
		lo = py->o.gil_holder;
		len = py->o.tss + 8 - lo;
	}
	if (len > PY_RT_READ || !py_read(rt, len, py->runtime + lo) ||
	    !py_field_cap(&tss[0], 4, rt, len, py->o.tss - lo, py->runtime + lo, PY_RT_READ) ||
	    !py_field_cap(&tss[1], 4, rt, len, py->o.tss + 4 - lo, py->runtime + lo, PY_RT_READ) ||
	    tss[0] != 1 || tss[1] >= PROF_PY_TSD_KEYS || !fsbase)
		return false;
	if (lo != py->o.tss)
		holder = rt[0];
	else if (py->o.gil_holder)
		py_read(&holder, sizeof(holder), py->runtime + py->o.gil_holder);
#ifndef PROF_CROSS_TASK
	if (py->o.gil_holder && py_holder_is_us(py, holder, fsbase, ts, &ts_len)) {
		p->tstate = holder;
		goto head;
	}
#endif
	if (!py_read(&p->tstate, sizeof(p->tstate), fsbase + py->tsd + tss[1] * 16ULL) ||
	    !p->tstate)
		return false;
	/* The thread state's head: its frame field (and 3.12+ its interpreter). */
	ts_len = (py->o.ts_frame > py->o.ts_interp ? py->o.ts_frame : py->o.ts_interp) + 8;
	if (ts_len > PY_TS_READ || !py_read(ts, ts_len, p->tstate))
		ts_len = 0;
#ifndef PROF_CROSS_TASK
head:
#endif
	if (!py_field(&v, 8, ts, ts_len, py->o.ts_frame, p->tstate))
		goto fault;
	/* 3.11/3.12: the current frame is in the _PyCFrame the innermost eval frame keeps on the
	 * native stack, mostly in the stack this walk has read already. */
	if (py->o.cf_current != 0xffff && v) {
		__u64 at = v + py->o.cf_current;

		if (!stack_win_word(at, &v) && !py_read(&v, sizeof(v), at))
			goto fault;
	}
	p->frame = v;
	if (!py->o.gil_holder)
		holder = py_gil_holder(py, p->tstate, ts, ts_len, gil);
	p->thread = holder == p->tstate ? PROF_PY_THREAD_GIL : PROF_PY_THREAD_NO_GIL;
	return true;
fault:
	prof_count(PROF_CNT_PY_READ_FAIL);
	p->tstate = 0;
	return false;
}

/*
 * The native frame at pc is an eval frame: start emitting its Python frames (true), or leave it
 * native (false: no thread state, no frame left).
 */
#ifdef PROF_CROSS_TASK
#define py_lookup_once py_lookup
#else
/*
 * The lookup in a call of its own: its frame and the steps' are not on the stack together (a
 * program without a private stack has 512 bytes for all its calls; once per walk).
 */
__noinline int prof_py_lookup(const struct prof_py_proc *py, struct py_walk *p)
{
	if (!py || !p)
		return 0;
	return py_lookup(py, p);
}

#define py_lookup_once prof_py_lookup
#endif

static __always_inline bool py_enter(const struct prof_py_proc *py, struct py_walk *p)
{
	if (!p->looked) {
		p->looked = 1;
		if (!py_lookup_once(py, p))
			return false;
	}
	if (!p->tstate || !p->frame)
		return false;
	p->active = 1;
	p->emitted = 0;
	return true;
}

#ifndef PROF_CROSS_TASK
/*
 * The PY_FRAME_READ bytes of the frame head at f, in the window: a pointer to its words there,
 * or NULL when unreadable (then field by field; so is a frame off a word boundary, which
 * CPython never makes).  below: 3.11+, the window reaches down from the frame to its page;
 * 3.8–3.10's frame objects lie apart on the heap, the window is the head alone.
 */
static __always_inline const __u64 *py_frame_head(struct prof_py_win *win, __u64 f, bool below)
{
	__u64 off, start, len;

	if (f & 7)
		return NULL;
	off = f - win->base;
	if (f < win->base || off + PY_FRAME_READ > win->len) {
		win->len = 0;
		/* max(the frame's page, a window below the frame's end) */
		start = f;
		if (below) {
			start = f & ~4095ULL;
			if (f + PY_FRAME_READ > PY_WIN && f + PY_FRAME_READ - PY_WIN > start)
				start = f + PY_FRAME_READ - PY_WIN;
		}
		len = f + PY_FRAME_READ - start;
		if (len > PY_WIN || len < PY_FRAME_READ ||
		    prof_read_user(win->data, (__u32)len, (void *)start))
			return NULL;
		win->base = start;
		win->len = len;
		off = f - start;
	}
	/* off + PY_FRAME_READ <= len <= PY_WIN; f, start: words */
	return &win->data[(off & (PY_WIN - 1)) >> 3];
}
#endif

#ifdef PROF_PY_CODE_CACHE
/* The code objects' fingerprints per CPU (include/prof_python.h: PROF_PY_CODE_SLOTS). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROF_PY_CODE_SLOTS);
	__type(key, __u32);
	__type(value, struct prof_py_code_slot);
} prof_py_code_cache SEC(".maps");

/* At a walk's start: whether the cache serves tgid (entry proc, generation gen), and the
 * epoch its slots must carry. */
static __always_inline void py_cache_start(struct py_walk *p, const struct prof_py_proc *py,
					   __u32 tgid, __u32 gen)
{
	if (!py->code_watch || py->code_watch != tgid)
		return;
	p->cache = 1;
	p->tgid = tgid;
	p->gen = gen;
	p->epoch = *(volatile const __u64 *)&py->code_epoch;
}

static __always_inline struct prof_py_code_slot *py_code_slot(__u64 code)
{
	__u32 k = (__u32)((code >> 4) ^ (code >> 13)) & (PROF_PY_CODE_SLOTS - 1);

	return bpf_map_lookup_elem(&prof_py_code_cache, &k);
}

/* The fingerprint of code in slot s for this walk: true with it in *print.  A slot is written
 * code last (0 first): one rewritten meanwhile (this program preempted) no longer holds code. */
static __always_inline bool
py_code_cached(const struct py_walk *p, const struct prof_py_code_slot *s, __u64 code, __u64 *print)
{
	__u64 v;

	if (!s || *(volatile __u64 *)&s->code != code || s->tgid != p->tgid || s->gen != p->gen ||
	    s->epoch != p->epoch)
		return false;
	v = s->print;
	barrier();
	if (*(volatile __u64 *)&s->code != code)
		return false;
	*print = v;
	return true;
}

static __always_inline void py_code_keep(const struct py_walk *p, struct prof_py_code_slot *s,
					 __u64 code, __u64 print)
{
	if (!s)
		return;
	*(volatile __u64 *)&s->code = 0;
	barrier();
	s->tgid = p->tgid;
	s->gen = p->gen;
	s->epoch = p->epoch;
	s->print = print;
	barrier();
	*(volatile __u64 *)&s->code = code;
}
#endif

/*
 * One step through the Python frames of the current eval frame: the frame's
 * prof_py_frame() in *out and true when one was produced; the invocation's end clears
 * p->active (and sets p->done when anything was emitted, so the native frame is not pushed).
 */
static __always_inline bool py_step(const struct prof_py_proc *py, struct py_walk *p, __u64 *out,
				    __u64 *print)
{
	__u64 f = p->frame, instr = 0;
	struct py_step_vars *v;
#ifdef PROF_CROSS_TASK
	struct py_read_bufs *bufs = bpf_map_lookup_elem(&prof_py_read_bufs, &(__u32){0});
	__u64 *fb, *cb;
#else
	struct prof_py_win *win = bpf_map_lookup_elem(&prof_py_win, &(__u32){0});
	const __u64 *fb;
	__u64 *cb; /* written by its read, failed or not */
#endif
	__u32 flen = PY_FRAME_READ, clen = PY_CODE_READ;
#ifdef PROF_PY_CODE_CACHE
	struct prof_py_code_slot *slot;
#endif
	bool end = false, ok;

	/* One read of the frame's head (3.11+: through the window); a frame at the end of its
	 * mapping: field by field. */
#ifdef PROF_CROSS_TASK
	if (!bufs) {
		p->frame = 0;
		goto over;
	}
	fb = bufs->fb;
	cb = bufs->s.cb;
	v = &bufs->s.v;
	if (!py_read(fb, PY_FRAME_READ, f))
		flen = 0;
#else
	if (!win) {
		p->frame = 0;
		goto over;
	}
	cb = win->s.cb;
	v = &win->s.v;
	fb = py_frame_head(win, f, py->o.style != PROF_PY_FRAMEOBJ);
	if (!fb) {
		fb = win->data;
		flen = 0;
	}
#endif
	__builtin_memset(v, 0, sizeof(*v));
	ok = py_field(&v->code, 8, fb, flen, py->o.fr_code, f) &&
	     py_field(&v->back, 8, fb, flen, py->o.fr_back, f);
	if (ok && py->o.style != PROF_PY_FRAMEOBJ)
		ok = py_field(&v->mark, 1, fb, flen, py->o.fr_entry, f);
	if (!ok) {
		prof_count(PROF_CNT_PY_READ_FAIL);
		p->frame = 0;
		goto over;
	}
	/* A frame is not its own caller: a stale head pointing at itself ends the walk (it
	 * went round to the walk's bound before). */
	if (v->back == f)
		v->back = 0;
	p->frame = v->back;
	switch (py->o.style) {
	case PROF_PY_FRAMEOBJ:
		end = true; /* one frame object per eval frame */
		break;
	case PROF_PY_ENTRY:
		end = v->mark != 0; /* is_entry: the invocation's first frame, emitted */
		break;
	default:
		if (v->mark == PROF_PY_OWNED_BY_CSTACK)
			goto over; /* the shim under the invocation: not a Python frame */
		break;
	}
#ifdef PROF_PY_CODE_CACHE
	slot = p->cache ? py_code_slot(v->code) : NULL;
	if (py_code_cached(p, slot, v->code, print)) {
		p->cached++;
		goto named;
	}
#endif
	if (!py_read(cb, PY_CODE_READ, v->code))
		clen = 0;
	/* A code object unreadable now (its page in a fault's hands: a copy-on-write after a
	 * fork) is still the frame's: emitted with no fingerprint, named from user space later,
	 * so that the eval frame is not left native between Python frames.  Words that are no
	 * object's address (0, 1, 0xffffffff: a stale frame read at a call's edge) are skipped. */
	if (!py_field(&v->type, 8, cb, clen, 8, v->code)) {
		if (v->code < PY_MIN_ADDR || (v->code & 7))
			goto next;
		prof_count(PROF_CNT_PY_READ_FAIL);
		*print = prof_py_fingerprint(0, 0, 0);
		goto named;
	}
	/* Frames of other executables (3.13's f_executable) are not code: skipped. */
	if (v->type != py->code_type)
		goto next;
	/* co_filename and co_name are neighbours in every version. */
	if (py_field(&v->firstlineno, 4, cb, clen, py->o.co_firstlineno, v->code) &&
	    py_field(&v->names[0], 8, cb, clen, py->o.co_filename, v->code) &&
	    py_field(&v->names[1], 8, cb, clen, py->o.co_filename + 8, v->code)) {
		*print = prof_py_fingerprint(v->firstlineno, v->names[0], v->names[1]);
#ifdef PROF_PY_CODE_CACHE
		py_code_keep(p, slot, v->code, *print);
#endif
	} else {
		prof_count(PROF_CNT_PY_READ_FAIL);
		*print = prof_py_fingerprint(v->firstlineno, v->names[0], v->names[1]);
	}
named:
	if (py->o.instr == PROF_PY_INSTR_PTR) {
		if (py_field(&v->ptr, 8, fb, flen, py->o.fr_instr, f) &&
		    v->ptr >= v->code + py->o.co_code_adaptive)
			instr = (v->ptr - v->code - py->o.co_code_adaptive) / 2;
	} else if (py_field(&v->lasti, 4, fb, flen, py->o.fr_instr, f) && v->lasti > 0) {
		instr = (__u64)v->lasti;
	}
	if (instr > PROF_PY_INSTR_MAX)
		instr = PROF_PY_INSTR_MAX;
	*out = prof_py_frame(v->code, instr);
	p->frames++;
	p->emitted = 1;
	if (end || !p->frame)
		goto over_emitted;
	return true;
next:
	if (end || !p->frame)
		goto over;
	return false;
over_emitted:
	p->active = 0;
	p->done = 1;
	return true;
over:
	p->active = 0;
	p->done = p->emitted;
	return false;
}

/*
 * Python frames of one eval frame emitted in one call, up to PY_RUN of them: each iteration
 * of the walk costs its loop step, its calls and its lookups (~25 ns), and an invocation of
 * 3.11+ runs several frames (the Python workload: ~4.7 frames an allocation in 1-3 eval
 * frames).  A frame is two words appended at ips[c->n] (the leaf side growing as the
 * native walk's push does); the counts are those of the walk (struct walk_counts).
 */
#ifdef PROF_CROSS_TASK
/* The dump iterator's stack has no room for one more call level: one frame a step. */
#define PY_RUN	    1
#define py_run_step py_step
#else
/* py_step on its own: verified once, not once per frame of the run. */
__noinline int prof_py_step(const struct prof_py_proc *py, struct py_walk *p, __u64 *out,
			    __u64 *print)
{
	if (!py || !p || !out || !print)
		return 0;
	return py_step(py, p, out, print);
}

#define PY_RUN	    8
#define py_run_step prof_py_step
#endif
#define PY_RUN_STAY   1
#define PY_RUN_PUSHED 2

/* The counts of a walk, and its words: a global function's pointer arguments name their
 * sizes (bpf/unwind.bpf.h, prof_replay_natives too). */
struct walk_counts {
	__u32 n, nf, leaf_n, leaf_nf, leaf_words, leaf_frames;
};

struct walk_words {
	__u64 w[PROF_WALK_WORDS];
};

/*
 * The walk meets pc: Python frames of the eval frame there pushed (PY_RUN_PUSHED when any).
 * PY_RUN_STAY: the walk stays at the eval frame (more to come, the stack full, or a frame that
 * is not code skipped); without it, step the native frame at pc now (p->done set: its Python
 * frames took its place, it is not pushed).  A global function: the verifier checks it once, not
 * once per path of the native walk around it.
 */
__noinline int prof_py_walk_run(const struct prof_py_proc *py, struct py_walk *p, __u64 pc,
				struct walk_words *ips, struct walk_counts *c)
{
	__u64 f, print;
	__u32 n, nf, k = 0;
	int j;

	if (!py || !p || !ips || !c)
		return 0;
	if (!p->active) {
		if (p->done || !py_is_eval(py, pc) || !py_enter(py, p))
			return 0;
	}
	n = c->n;
	nf = c->nf;
#pragma clang loop unroll(disable)
	for (j = 0; j < PY_RUN; j++) {
		if (n > PROF_WALK_WORDS - 2)
			break; /* full: the walk cuts it at its next step */
		f = 0;
		print = 0;
		if (py_run_step(py, p, &f, &print)) {
			ips->w[prof_bound(n, PROF_WALK_WORDS - 2)] = f;
			ips->w[prof_bound(n + 1, PROF_WALK_WORDS - 1)] = print;
			n += 2;
			nf++;
			k++;
			if (n <= c->leaf_words && nf <= c->leaf_frames) {
				c->leaf_n = n;
				c->leaf_nf = nf;
			}
		}
		if (!p->active)
			break;
	}
	c->n = n;
	c->nf = nf;
	return (k ? PY_RUN_PUSHED : 0) | (p->active ? PY_RUN_STAY : 0);
}

#endif /* PROF_PYTHON_BPF_H */
