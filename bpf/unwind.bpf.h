/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The user-stack walker shared by the heap return probe and the cpu sampler: .eh_frame unwinding
 * from tables built in userspace (include/prof_unwind.h, user/unwind/unwinder.c), frame pointers
 * where a file has no table (JIT code, a table still building), bpf_get_stack for --unwind fp.
 *
 * One bpf_loop iteration per frame, so one program walks up to PROF_WALK_WORDS words without
 * tail calls; a stack deeper than its cap keeps its two ends (include/prof_stack.h, stack_cut). Per
 * frame: the pc's row from a per-CPU cache of the rows found for the process entry's generation,
 * else the pc's mapping by binary search in the process's sorted mapping array and its table row by
 * two binary searches (the table's index chunk, then one chunk of rows); the caller's registers
 * from the row, read through a window on the stack.  Every stack that ends anywhere but at a root
 * (an outermost-frame rule, a zero return address or frame pointer) is counted by the reason it
 * ended.  An object that defines PROF_WALK_CACHE (the heap's) also keeps whole walks, handed
 * back while the stack words they depend on hold (prof_walk_cache).
 */
#ifndef PROF_UNWIND_BPF_H
#define PROF_UNWIND_BPF_H

#include "common.bpf.h"
#include "events.bpf.h"
#include "unwind_maps.bpf.h"
#include "python.bpf.h"
#include "prof_stack.h"

/* ctx is a perf_event program's context (bpf_perf_event_data) */
#define PROF_USTACK_PERF 1
/* ctx holds no user registers (a tracepoint): take those the current task entered the kernel
 * with */
#define PROF_USTACK_TASK 2

/* Set by the loader: --unwind and, for fp, the kernel's walk limit (include/prof_stack.h). */
const volatile struct prof_walk_knobs prof_walk = {};
#define prof_unwind_mode       (prof_walk.mode)
#define PROF_UNWIND_MODE_DWARF 1
#define PROF_UNWIND_MODE_FP    2

/* tgid -> 1: a process without a mapping entry whose re-read was asked for (userspace deletes
 * the key when it has written the entry). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PROF_UNWIND_ASKED_ENTRIES);
	__type(key, __u32);
	__type(value, __u8);
} prof_unwind_asked SEC(".maps");

/* Return instances searched when a return address is the uretprobe trampoline's (the frame's
 * own and whatever the thread has in flight below it: an allocator's). */
#define PROF_UNWIND_RET_INSTANCES 8
/* A frame pointer is believed only this far above the stack pointer. */
#define PROF_UNWIND_FP_SPAN	  (8ULL << 20)

/* glibc's __restore_rt: where the interrupted registers are, from the signal frame's rsp. */
#define PROF_SIGFRAME_RBP 120
#define PROF_SIGFRAME_RSP 160
#define PROF_SIGFRAME_RIP 168

/* bpf_find_vma's answer for one pc: a mapping as userspace would have written it. */
struct vma_lookup {
	__u64 pc;
	struct prof_unwind_mapping m; /* table_id 0: no table for the pc's file */
};

/*
 * The registers of the frame being walked: scalars only, so that the steps can be global
 * functions (verified once each, not once per path of the walk around them) writing them.
 */
struct unwind_regs {
	__u64 ip, sp, bp;
	__u64 ra_slot; /* where ip was read from (0: from registers) */
	__u32 stop;    /* PROF_CNT_* that cut the stack, or 0 */
	__u32 done;    /* 1: the walk is over (a __u32 the verifier sees masked to 0..1) */
	bool exact;    /* ip is not a return address: look it up as is */
	bool reliable; /* ip came from registers or a table (not a frame pointer) */
	bool bp_lost;  /* the caller's rbp is unknown */
	bool unkept;   /* the walk went where the walk cache cannot check (see prof_walk_cache) */
	__u32 bp_from; /* PROF_WALK_CACHE: the log entry bp was read from, + 1 (0: a register) */
	__u64 bp_used; /* PROF_WALK_CACHE: the log entries of rbp values a rule used */
	bool bp0_used; /* PROF_WALK_CACHE: a rule used the walk's first rbp */
};

/*
 * The walked thread's stack, read a window at a time: the next frame's slots are rarely more
 * than a few hundred bytes above the last one's, and one 1 KiB copy costs about what one 8-byte
 * bpf_probe_read_user does (perf on 6.18: the fault-safe copy's setup and hardened usercopy's
 * check of the destination are most of a slot read).  Per CPU and per object, emptied at the
 * start of every walk (the heap object's: then filled by the walk cache's check, if any, with
 * the same stack's words).  A program of the same object that interrupts a walk on this CPU (a perf
 * event in NMI) walks the same thread, whose stack does not change under either.
 */
#define PROF_STACK_WIN 1024

#ifdef PROF_WALK_CACHE
/* A walk's start, saved before the walk moves the registers (in the window: not a
 * value the verifier tracks across the walk). */
struct walk_start {
	__u64 ip, sp, bp;
	__u32 gen;
	__u32 slot; /* the first slot of its bucket (by ip, sp and gen) */
	__u32 seq;  /* the seq of the kept walk prof_walk_slot found */
};
#endif

/* A walk reads PROF_STACK_WIN bytes at a time; a kept walk's check, a span of up to
 * PROF_WALK_SPAN (include/prof_stack.h), which a walk then reads through. */
#ifdef PROF_WALK_CACHE
#define STACK_WIN_WORDS (PROF_WALK_SPAN / 8)
#else
#define STACK_WIN_WORDS (PROF_STACK_WIN / 8)
#endif

struct prof_stack_win {
	__u64 base, len; /* [base, base + len) is in data; len 0: empty */
	/* Scratch of a step's prof_vma_mapping: here, not in the walk's state on the stack (512
	 * bytes for all of a program's calls where it has no private stack). */
	struct vma_lookup vma;
	/* Words, not bytes: clang copies a __u64 out of a __u8 array at a variable offset a byte
	 * at a time (8 loads, 7 shifts and 7 ors; most of a frame's step on Linux 6.18). */
	__u64 data[STACK_WIN_WORDS];
#ifdef PROF_WALK_CACHE
	/* The words this walk read (logging 1): where, as an offset from the walk's first sp, and
	 * what they held; need: those its frames depend on (all but rbp values no later rule
	 * used: code without frame pointers keeps data in rbp).  A read below that sp, or more
	 * than PROF_WALK_LOG, stops the log (the walk is not kept). */
	__u64 log_sp, need;
	__u32 logging, nlog;
	__u32 epoch; /* walks begun on this CPU: one that saw another begin is not kept */
	struct walk_start start; /* the walk's */
	__u32 log_off[PROF_WALK_LOG];
	__u64 log_val[PROF_WALK_LOG];
	/* The walk's native frames, eval frames that Python frames stood for included (what a
	 * kept walk holds), and how many; past PROF_WALK_CACHE_WORDS the log stops. */
	__u32 nnative;
	__u64 native[PROF_WALK_CACHE_WORDS];
#endif
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_stack_win);
} prof_stack_win SEC(".maps");

/*
 * python.bpf.h's: a word of the stack this walk has copied (the window is emptied when a walk
 * begins, and the thread's stack does not change under its walk).  The dump iterator's walks
 * read another task's stack: not used there.
 */
static __always_inline bool stack_win_word(__u64 addr, __u64 *dst)
{
#ifndef PROF_CROSS_TASK
	struct prof_stack_win *win = bpf_map_lookup_elem(&prof_stack_win, &(__u32){0});
	__u64 off;

	if (!win || (addr & 7) || addr < win->base)
		return false;
	off = addr - win->base;
	if (off + 8 > win->len || off >= sizeof(win->data))
		return false;
	*dst = win->data[(off >> 3) & (STACK_WIN_WORDS - 1)];
	return true;
#else
	return false;
#endif
}

/* One or two stack slots (a global function's argument must name its size). */
struct stack_slots {
	__u64 v[2];
};

/*
 * A row's location in its table, found for a pc before, per CPU: (table id, pc) hashed to a
 * slot.  A slot is only a hint: it is checked against the table itself (the row's pc <= pc <
 * the next row's), so a table unloaded and its id reused, or two CPUs' programs, can make it
 * miss but never wrong.
 */
#define PROF_UNWIND_ROW_SLOTS 1024

struct unwind_row_slot {
	__u32 table_id;
	__u16 key; /* the chunk's key in the table's inner map */
	__u16 row; /* its index in the chunk (never the chunk's last: see find_row) */
};

struct prof_unwind_row_cache {
	struct unwind_row_slot s[PROF_UNWIND_ROW_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_unwind_row_cache);
} prof_unwind_row_cache SEC(".maps");

/* A row found for a pc, and the addresses it covers. */
struct unwind_hit {
	__u64 lo, hi;
	struct prof_unwind_row row;
};

/*
 * The rows found for pcs of one process entry, per CPU: a pc hashed to a slot holding the row
 * that covers it and the addresses it covers, under the entry's generation.  A hit skips the
 * mapping search and the table lookups.  An entry's generation is one content (its mappings and
 * the tables they name: include/prof_unwind.h), so a slot of that generation is right for every
 * process holding it.  A slot torn by a program preempted while writing it fails its check
 * word and misses.
 */
#define PROF_UNWIND_PC_SLOTS 1024 /* 32 KiB: the largest per-CPU value */

struct unwind_pc_slot {
	__u32 gen, check;
	struct unwind_hit hit;
};

struct prof_unwind_pc_cache {
	struct unwind_pc_slot s[PROF_UNWIND_PC_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct prof_unwind_pc_cache);
} prof_unwind_pc_cache SEC(".maps");

/* struct unwind_walk's counts are a struct walk_counts (bpf/python.bpf.h) on their own: a
 * global function's pointer argument into the stack makes the verifier forget what the range
 * it covers held, pointers included. */
struct unwind_walk {
	__u64 *ips;		       /* out: frames, leaf first */
	struct prof_unwind_proc *proc; /* NULL: no entry for this process */
	struct unwind_regs g;
	union {
		struct walk_counts counts; /* the six below, for prof_replay_natives */
		struct {
			__u32 n;  /* words in ips */
			__u32 nf; /* frames in ips, as a user counts them (a Python frame's
				   * two words are one) */
			/* The leaf side of a stack deeper than its cap: the words and frames that
			 * fit it. */
			__u32 leaf_n, leaf_nf;
			__u32 leaf_words, leaf_frames; /* its size (prof_stack_leaf_*) */
		};
	};
	__u32 tgid;
	/* The last row found and the addresses it covers: recursion and loops of calls meet the
	 * same function frame after frame, and skip the lookups. */
	struct unwind_hit hit;
	/* Python frames in place of eval frames (bpf/python.bpf.h, py_walk_begin); NULL: the
	 * process runs no Python */
	struct py_walk *py;
	bool py_any; /* some were emitted */
#ifdef PROF_WALK_CACHE
	__u32 replay_k; /* replay: the next native frame */
#endif
};

static __always_inline void walk_cut(struct unwind_regs *w, __u32 reason)
{
	w->stop = reason;
	w->done = 1;
}

static __always_inline int walk_cut0(struct unwind_regs *w, __u32 reason)
{
	walk_cut(w, reason);
	return 0;
}

/*
 * Binary searches without branches: BPF has no conditional move, and a search whose steps branch
 * is explored by the verifier once per path.  1 when a <= b, for a, b < 2^63 (user addresses,
 * 32-bit table pcs), by the sign of a - b - 1.
 */
static __always_inline __u64 le_bit(__u64 a, __u64 b)
{
	return (a - b - 1) >> 63;
}

/* v & mask, the mask kept: the compiler may prove it useless, the verifier cannot. */
static __always_inline __u32 masked(__u32 v, __u32 mask)
{
	barrier_var(v);
	return v & mask;
}

/* The mapping holding pc (< 2^47), or NULL. */
static __always_inline struct prof_unwind_mapping *find_mapping(struct prof_unwind_proc *p,
								__u64 pc)
{
	__u32 base = 0, n = p->nr, half, i;

	if (!n)
		return NULL;
	if (n > PROF_UNWIND_MAX_MAPPINGS)
		n = PROF_UNWIND_MAX_MAPPINGS;
	/* the last entry whose start <= pc lies in [base, base + n) */
	for (i = 0; i < PROF_UNWIND_MAPPING_STEPS; i++) {
		half = n / 2;
		base += le_bit(p->maps[masked(base + half, PROF_UNWIND_MAX_MAPPINGS - 1)].start,
			       pc) *
			half;
		n -= half;
	}
	base = masked(base, PROF_UNWIND_MAX_MAPPINGS - 1);
	if (p->maps[base].start > pc || pc >= p->maps[base].end)
		return NULL;
	return &p->maps[base];
}

/* The cache slot of (table id, table pc), or NULL. */
static __always_inline struct unwind_row_slot *row_slot(__u32 table_id, __u32 rel)
{
	struct prof_unwind_row_cache *rc;
	__u32 zero = 0;

	rc = bpf_map_lookup_elem(&prof_unwind_row_cache, &zero);
	if (!rc)
		return NULL;
	/* Fibonacci hashing: the top bits of the product mix every bit of the pc. */
	return &rc->s[masked((rel ^ table_id * 0x85ebca6bu) * 0x9e3779b1u >> 22,
			     PROF_UNWIND_ROW_SLOTS - 1)];
}

/* Row i of chunk c covers rel, and its end is in the chunk too: it is rel's row. */
static __always_inline bool row_covers(const struct prof_unwind_chunk *c, __u32 i, __u32 rel)
{
	return i + 1 < PROF_UNWIND_CHUNK_ROWS && c->rows[i].pc <= rel &&
	       rel < c->rows[masked(i + 1, PROF_UNWIND_CHUNK_ROWS - 1)].pc;
}

/*
 * The row for pc in m's table: 1 found, 0 no row covers pc (a gap, outside), -1 no table
 * loaded.  A row found before on this CPU is tried first (one chunk lookup, two compares); else
 * two binary searches, and the row is remembered.
 */
static __always_inline int find_row(struct prof_unwind_mapping *m, __u64 pc,
				    struct prof_unwind_row *out, __u64 *lo, __u64 *hi)
{
	__u32 key = 0, base = 0, n, half, rel, i;
	struct unwind_row_slot *slot;
	struct prof_unwind_chunk *c;
	struct prof_unwind_index *ix;
	void *inner;

	if (pc - m->bias > 0xffffffffULL)
		return 0;
	rel = (__u32)(pc - m->bias);
	inner = bpf_map_lookup_elem(&prof_unwind_tables, &m->table_id);
	if (!inner)
		return -1;
	slot = row_slot(m->table_id, rel);
	/* Key 0 of a table of several chunks is its index, not rows. */
	if (slot && slot->table_id == m->table_id && (slot->key || m->nchunks <= 1)) {
		key = slot->key;
		base = masked(slot->row, PROF_UNWIND_CHUNK_ROWS - 1);
		c = bpf_map_lookup_elem(inner, &key);
		if (c && row_covers(c, base, rel))
			goto found;
		key = 0;
		base = 0;
	}
	if (m->nchunks > 1) {
		ix = bpf_map_lookup_elem(inner, &key);
		if (!ix)
			return -1;
		n = m->nchunks - 1;
		if (n > PROF_UNWIND_INDEX_PCS)
			n = PROF_UNWIND_INDEX_PCS;
		for (i = 0; i < PROF_UNWIND_INDEX_STEPS; i++) {
			half = n / 2;
			base += le_bit(ix->pcs[masked(base + half, PROF_UNWIND_INDEX_PCS - 1)],
				       rel) *
				half;
			n -= half;
		}
		base = masked(base, PROF_UNWIND_INDEX_PCS - 1);
		if (ix->pcs[base] > rel)
			return 0;
		key = base + 1; /* data chunk i lives at key i + 1 */
		base = 0;
	}
	c = bpf_map_lookup_elem(inner, &key);
	if (!c)
		return -1;
	n = PROF_UNWIND_CHUNK_ROWS;
	for (i = 0; i < PROF_UNWIND_CHUNK_STEPS; i++) {
		half = n / 2;
		base += le_bit(c->rows[masked(base + half, PROF_UNWIND_CHUNK_ROWS - 1)].pc, rel) *
			half;
		n -= half;
	}
	base = masked(base, PROF_UNWIND_CHUNK_ROWS - 1);
	if (c->rows[base].pc > rel)
		return 0;
	/* The chunk's last row ends in the next chunk: not checkable from here, not kept. */
	if (slot && base + 1 < PROF_UNWIND_CHUNK_ROWS) {
		slot->table_id = m->table_id;
		slot->key = (__u16)key;
		slot->row = (__u16)base;
	}
found:
	*out = c->rows[base];
	/* [this row's pc, the next row's) in addresses; the chunk's last row: this pc only */
	*lo = m->bias + c->rows[base].pc;
	*hi = base + 1 < PROF_UNWIND_CHUNK_ROWS
		      ? m->bias + c->rows[masked(base + 1, PROF_UNWIND_CHUNK_ROWS - 1)].pc
		      : pc + 1;
	return prof_unwind_row__cfa(out) != PROF_UNWIND_CFA_NONE;
}

#ifndef VM_EXEC
#define VM_EXEC 0x4
#endif

extern __u32 LINUX_KERNEL_VERSION __kconfig;

/*
 * The file a vma maps as /proc/PID/maps names it, when that is not the file the kernel maps: a
 * backing file (overlayfs maps the file of the layer below; the maps, map_files and fstat give
 * the overlay's inode, as measured on 6.18), or NULL.  FMODE_BACKING is bit 25 until 6.13 and bit
 * 24 from 6.14 (fs.h made room for fanotify's pre-content bits); the flag is a macro, not in BTF. A
 * wrong guess costs nothing: the inode read is only looked up, after the vma's own missed.
 */
static __always_inline struct inode *vma_user_inode(struct file *file)
{
	__u32 backing = LINUX_KERNEL_VERSION >= KERNEL_VERSION(6, 14, 0) ? 1U << 24 : 1U << 25;
	struct dentry *dentry = NULL;

	if (!bpf_core_type_exists(struct backing_file) || !(file->f_mode & backing))
		return NULL;
	if (bpf_probe_read_kernel(&dentry, sizeof(dentry),
				  (void *)file +
					  bpf_core_field_offset(struct backing_file, user_path) +
					  bpf_core_field_offset(struct path, dentry)) ||
	    !dentry)
		return NULL;
	return BPF_CORE_READ(dentry, d_inode);
}

/* The table userspace loaded for inode's file, or NULL. */
static __always_inline struct prof_unwind_file *inode_table(struct inode *inode)
{
	struct prof_unwind_file_key key = {
		.dev = BPF_CORE_READ(inode, i_sb, s_dev),
		.ino = BPF_CORE_READ(inode, i_ino),
	};

	return bpf_map_lookup_elem(&prof_unwind_files, &key);
}

static long vma_found(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	struct vma_lookup *q = arg;
	struct prof_unwind_file *f;
	struct inode *inode;
	__u64 off;

	if (!vma->vm_file || !(vma->vm_flags & VM_EXEC))
		return 0;
	f = inode_table(vma->vm_file->f_inode);
	/* Userspace filed the table under the inode the maps name. */
	if (!f && (inode = vma_user_inode(vma->vm_file)))
		f = inode_table(inode);
	if (!f)
		return 0;
	off = q->pc - vma->vm_start + (vma->vm_pgoff << 12);
	for (__u32 i = 0; i < PROF_UNWIND_FILE_SEGS && i < f->nsegs; i++) {
		if (off < (f->segs[i].offset & ~4095ULL) ||
		    off >= f->segs[i].offset + f->segs[i].filesz)
			continue;
		q->m.start = vma->vm_start;
		q->m.end = vma->vm_end;
		q->m.bias = vma->vm_start - (vma->vm_pgoff << 12) + f->segs[i].offset -
			    f->segs[i].vaddr + f->base;
		q->m.table_id = f->table_id;
		q->m.nchunks = f->nchunks;
		break;
	}
	return 0;
}

/*
 * A pc in no mapping userspace has written (a library ld.so or dlopen mapped since it read the
 * process's maps): the kernel's vma for it, and the table of its file if one is loaded.  From a
 * perf event the lookup may fail (the mm lock is busy): frame pointers then.  A global
 * function: its callback is verified once, not once per path that reaches it.
 */
__noinline int prof_vma_mapping(struct vma_lookup *q, __u64 pc)
{
	struct vma_lookup l = {.pc = pc}; /* the callback's context must be on this stack */
	struct task_struct *task;
	long err;

	if (!q)
		return 0;
	task = prof_walk_task_get();
	if (!task)
		return 0;
	err = bpf_find_vma(task, pc, vma_found, &l, 0);
	prof_walk_task_put(task);
	if (err)
		return 0;
	*q = l;
	return l.m.table_id != 0;
}

/* Ask userspace to re-read the process's mappings (once, until it has). */
static __always_inline void ask_refresh(struct unwind_walk *w)
{
	struct prof_proc_event *e;
	__u8 one = 1;

	if (w->proc) {
		/* Not atomic: two CPUs may both ask, and userspace reads the maps twice. */
		if (w->proc->flags & PROF_UNWIND_PROC_MISS_SENT)
			return;
		w->proc->flags |= PROF_UNWIND_PROC_MISS_SENT;
	} else if (bpf_map_update_elem(&prof_unwind_asked, &w->tgid, &one, BPF_NOEXIST)) {
		return; /* asked already (or the map is full: the next sample asks again) */
	}
	e = prof_reserve(sizeof(*e));
	if (!e)
		return;
	e->type = PROF_REC_UNWIND_MISS;
	e->pid = w->tgid;
	e->tid = (__u32)prof_walk_pid_tgid();
	/* Now, not with the next batch: until the re-read its frames are walked by frame pointer.
	 */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/*
 * A return address that is in no mapping may be the uretprobe trampoline: a uretprobe on the
 * function whose frame this was (ours on an allocator, another tracer's) replaced it, and the
 * kernel keeps the real one with the slot's address.  (Global: verified once.)
 */
__noinline __u64 prof_real_return(__u64 ra_slot)
{
	struct task_struct *task = prof_walk_task_get();
	struct return_instance *ri;
	__u64 ret = 0;

	if (!task)
		return 0;
	ri = BPF_CORE_READ(task, utask, return_instances);
	for (int i = 0; i < PROF_UNWIND_RET_INSTANCES && ri; i++) {
		if (BPF_CORE_READ(ri, stack) == ra_slot) {
			ret = BPF_CORE_READ(ri, orig_ret_vaddr);
			break;
		}
		ri = BPF_CORE_READ(ri, next);
	}
	prof_walk_task_put(task);
	return ret;
}

#ifdef PROF_WALK_CACHE
/*
 * The size (8 or 16) bytes at addr a walk read into s, logged (see struct prof_stack_win);
 * bp_from != NULL: s->v[0] is the caller's rbp, needed only once a rule uses it (walk_need),
 * and *bp_from names its entry.
 */
static __always_inline void walk_log(struct prof_stack_win *win, __u64 addr,
				     const struct stack_slots *s, __u32 size, __u32 *bp_from)
{
	__u64 off = addr - win->log_sp;
	__u32 i = win->nlog;

	if (!win->logging)
		return;
	/* A slot off its word boundary (no ABI's) is not kept: a check compares whole words. */
	if (addr < win->log_sp || (addr & 7) || off > (1ULL << 30) || i > PROF_WALK_LOG - 2) {
		win->logging = 0;
		return;
	}
	i = prof_bound(i, PROF_WALK_LOG - 2);
	win->log_off[i] = (__u32)off;
	win->log_val[i] = s->v[0];
	if (bp_from)
		*bp_from = i + 1;
	else
		win->need |= 1ULL << i;
	if (size == 16) {
		win->log_off[i + 1] = (__u32)off + 8;
		win->log_val[i + 1] = s->v[1];
		win->need |= 2ULL << i;
		i++;
	}
	win->nlog = i + 1;
}

/* A rule used rbp: the word it was read from is needed (see walk_log), or the walk's first rbp
 * (then part of the kept walk's key). */
static __always_inline void walk_need(struct unwind_regs *w)
{
	if (w->bp_from)
		w->bp_used |= 1ULL << ((w->bp_from - 1) & (PROF_WALK_LOG - 1));
	else
		w->bp0_used = true;
}
#else
#define walk_need(w) ((void)(w))
#endif

/*
 * size (8 or 16) bytes of the walked thread's stack at addr into dst, through the window: 0, or
 * the read's error.  bp_from: see walk_log (NULL for any read but an rbp's).  A window that
 * cannot be read whole (the stack's top is less than a window above addr) leaves the slot to a
 * read of its own.  Inlined in the row step (a call per frame costs what the rest of the read
 * does), global for the others.
 */
static __always_inline int stack_read_bp(struct stack_slots *dst, __u64 addr, __u32 size,
					 __u32 *bp_from)
{
#ifndef PROF_CROSS_TASK
	__u32 zero = 0;
	struct prof_stack_win *win = bpf_map_lookup_elem(&prof_stack_win, &zero);
	__u64 off;
	int err;

	/* A slot not on a word boundary (a CFA no ABI makes) is read alone. */
	if (win && !(addr & 7)) {
		off = addr - win->base;
		if (addr < win->base || off + size > win->len) {
			win->len = 0;
			if (bpf_probe_read_user(win->data, PROF_STACK_WIN, (void *)addr))
				goto alone;
			win->base = addr;
			win->len = PROF_STACK_WIN;
			off = 0;
		}
		off >>= 3; /* in words; off + size <= len: off <= STACK_WIN_WORDS - 1 */
		if (off > STACK_WIN_WORDS - 2) {
			/* the window's last slot */
			if (size != 8)
				goto alone;
			dst->v[0] = win->data[prof_bound(off, STACK_WIN_WORDS - 1)];
			goto read;
		}
		off = prof_bound(off, STACK_WIN_WORDS - 2);
		dst->v[0] = win->data[off];
		dst->v[1] = win->data[off + 1];
		goto read;
	}
alone:
	err = prof_read_user(dst, (__u32)prof_bound(size, sizeof(*dst)), (void *)addr);
	if (err)
		return err;
read:
#ifdef PROF_WALK_CACHE
	if (win)
		walk_log(win, addr, dst, size, bp_from);
#endif
	return 0;
#else
	if (size == 16)
		return prof_read_user(dst, 16, (void *)addr);
	return prof_read_user(dst, 8, (void *)addr);
#endif
}

static __always_inline int stack_read(struct stack_slots *dst, __u64 addr, __u32 size)
{
	return stack_read_bp(dst, addr, size, NULL);
}

__noinline int prof_stack_read(struct stack_slots *dst, __u64 addr, __u32 size)
{
	if (!dst)
		return -EFAULT;
	return stack_read(dst, addr, size);
}

/* One frame by its frame pointer (the caller's frame at rbp, its return address above it).
 * Global, like the other steps. */
__noinline int prof_fp_step(struct unwind_regs *w, __u32 reason)
{
	struct stack_slots frame;

	if (!w)
		return 0;

	w->unkept = true;
	if (prof_unwind_mode == PROF_UNWIND_MODE_DWARF)
		return walk_cut0(w, reason);
	if (!w->bp) {
		w->done = 1; /* the outermost frame (_start clears rbp) */
		return 0;
	}
	if (w->bp_lost || w->bp < w->sp || w->bp - w->sp > PROF_UNWIND_FP_SPAN || (w->bp & 7))
		return walk_cut0(w, reason);
	if (prof_stack_read(&frame, w->bp, 16))
		return walk_cut0(w, PROF_CNT_UNWIND_READ_FAULT);
	prof_count(PROF_CNT_UNWIND_FP_FRAMES);
	w->ra_slot = w->bp + 8;
	w->sp = w->bp + 16;
	w->bp = frame.v[0];
	w->ip = frame.v[1];
	w->exact = false;
	w->reliable = false;
	if (!w->ip)
		w->done = 1;
	return 0;
}

/* One frame by its table row (a global function: see struct unwind_regs). */
__noinline int prof_unwind_row_step(struct unwind_regs *w, const struct prof_unwind_row *r,
				    __u64 pc)
{
	struct stack_slots slots;
	__u64 cfa, v, regs[3];
	__u32 kind;
	long off;

	if (!w || !r)
		return 0;
	kind = prof_unwind_row__cfa(r);
	off = (long)r->cfa_off * 8;

	switch (kind) {
	case PROF_UNWIND_CFA_STOP:
		w->done = 1;
		return 0;
	case PROF_UNWIND_CFA_SIGNAL:
		w->unkept = true; /* read past the window's log */
		if (prof_read_user(&v, sizeof(v), (void *)(w->sp + PROF_SIGFRAME_RBP)) ||
		    prof_read_user(regs, 2 * sizeof(__u64), (void *)(w->sp + PROF_SIGFRAME_RSP)))
			return walk_cut0(w, PROF_CNT_UNWIND_READ_FAULT);
		w->bp = v;
		w->sp = regs[0];
		w->ip = regs[1];
		w->ra_slot = 0;
		w->exact = true; /* the interrupted instruction itself */
		w->reliable = true;
		w->bp_lost = false;
		if (!w->ip)
			w->done = 1;
		return 0;
	case PROF_UNWIND_CFA_RSP:
		cfa = w->sp + off;
		break;
	case PROF_UNWIND_CFA_PLT:
		cfa = w->sp + off + ((pc & 15) >= (__u64)(__u8)r->rbp_off ? 8 : 0);
		break;
	case PROF_UNWIND_CFA_RBP:
		if (w->bp_lost)
			return walk_cut0(w, PROF_CNT_UNWIND_UNSUPPORTED);
		walk_need(w);
		cfa = w->bp + off;
		break;
	case PROF_UNWIND_CFA_DEREF_RBP:
	case PROF_UNWIND_CFA_DEREF_RSP:
		if (kind == PROF_UNWIND_CFA_DEREF_RBP) {
			if (w->bp_lost)
				return walk_cut0(w, PROF_CNT_UNWIND_UNSUPPORTED);
			walk_need(w);
		}
		v = (kind == PROF_UNWIND_CFA_DEREF_RBP ? w->bp : w->sp) + off;
		if (stack_read(&slots, v, 8))
			return walk_cut0(w, PROF_CNT_UNWIND_READ_FAULT);
		cfa = slots.v[0];
		break;
	default:
		return walk_cut0(w, PROF_CNT_UNWIND_UNSUPPORTED);
	}
	if (cfa <= w->sp)
		return walk_cut0(w, PROF_CNT_UNWIND_CFA_STUCK);
	/* The caller's rbp, read before sp moves (DEREF_RBP is relative to this frame's rbp). */
	off = (long)r->rbp_off * 8;
	/* The common frame (push %rbp first): rbp at CFA-16 beside the return address, one read. */
	if (prof_unwind_row__rbp(r) == PROF_UNWIND_RBP_CFA && r->rbp_off == -2) {
		if (stack_read_bp(&slots, cfa - 16, 16, &w->bp_from))
			return walk_cut0(w, PROF_CNT_UNWIND_READ_FAULT);
		w->bp = slots.v[0];
		w->bp_lost = false;
		w->ip = slots.v[1];
		goto moved;
	}
	switch (prof_unwind_row__rbp(r)) {
	case PROF_UNWIND_RBP_UNCHANGED:
		break;
	case PROF_UNWIND_RBP_CFA:
	case PROF_UNWIND_RBP_DEREF_RBP:
		if (prof_unwind_row__rbp(r) == PROF_UNWIND_RBP_DEREF_RBP)
			walk_need(w);
		v = (prof_unwind_row__rbp(r) == PROF_UNWIND_RBP_CFA ? cfa : w->bp) + off;
		if (stack_read_bp(&slots, v, 8, &w->bp_from))
			return walk_cut0(w, PROF_CNT_UNWIND_READ_FAULT);
		w->bp = slots.v[0];
		w->bp_lost = false;
		break;
	default: /* undefined or a rule we cannot follow: only an rbp-based rule above cares */
		w->bp_lost = true;
		break;
	}
	if (stack_read(&slots, cfa - 8, 8))
		return walk_cut0(w, PROF_CNT_UNWIND_READ_FAULT);
	w->ip = slots.v[0];
moved:
	w->ra_slot = cfa - 8;
	w->sp = cfa;
	w->exact = false;
	w->reliable = true;
	if (!w->ip)
		w->done = 1;
	return 0;
}

/* Append v to the stack; false when it is full (checked by the caller before, and here on the
 * value the verifier sees). */
/*
 * v itself, through memory the verifier does not follow (a map value: what a load from it gives
 * is unknown to it).  The frame count goes through it so that the verifier, walking the loop,
 * does not tell apart states that differ only by how many frames are in (it would check every
 * count's paths one by one).  Not a call: with return thunks (AMD's Safe RET) a call and its
 * return cost ~9 ns, a frame's share of the walk.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} prof_opaque_cell SEC(".maps");

static __always_inline __u32 prof_opaque(__u32 v)
{
	__u32 *cell = bpf_map_lookup_elem(&prof_opaque_cell, &(__u32){0});

	if (!cell)
		return 0; /* never: the array's one key */
	*(volatile __u32 *)cell = v;
	return *(volatile __u32 *)cell;
}

/* The leaf side grows while it fits. */
static __always_inline void leaf_grow(struct unwind_walk *w)
{
	if (w->n <= w->leaf_words && w->nf <= w->leaf_frames) {
		w->leaf_n = w->n;
		w->leaf_nf = w->nf;
	}
}

/* A frame of n words is in: counted, and the leaf side grows while it fits. */
static __always_inline void frame_in(struct unwind_walk *w, __u32 n)
{
	/* Both counts through one opaque call (each < 2^16): one call per frame, as before. */
	__u32 both = prof_opaque(n | (w->nf + 1) << 16);

	w->n = both & 0xffff;
	w->nf = both >> 16;
	leaf_grow(w);
}

static __always_inline bool push_value(struct unwind_walk *w, __u64 v)
{
	__u32 n = w->n;

	if (n >= PROF_WALK_WORDS)
		return false;
	w->ips[n] = v;
	frame_in(w, n + 1);
	return true;
}

/* Append a and b (a Python frame's two words); false when they do not fit. */
static __always_inline bool push_pair(struct unwind_walk *w, __u64 a, __u64 b)
{
	__u64 n = w->n;
	__u64 *slot;

	if (n > PROF_WALK_WORDS - 2)
		return false;
	slot = &w->ips[n];
	slot[0] = a;
	slot[1] = b;
	frame_in(w, (__u32)n + 2);
	return true;
}

/* Append the current ip; an eval frame whose Python frames took its place is not (true). */
static __always_inline bool push_frame(struct unwind_walk *w)
{
	if (w->py && w->py->done) {
		w->py->done = 0;
		return true;
	}
	return push_value(w, w->g.ip);
}

/*
 * Python frames: 1 when this iteration emitted some (or skipped a frame that is not code) and
 * the walk stays at the eval frame; 0 when the native frame at pc is to be stepped now.
 */
static __always_inline int python_frame(struct unwind_walk *w, __u64 pc)
{
	int r;

	if (!w->proc || !w->py)
		return 0;
	/* Most frames are not the interpreter's: no call (prof_py_walk_run would say 0). */
	if (!w->py->active && !py_is_eval(&w->proc->py, pc))
		return 0;
	/* Room for a frame's two words, or the stack is full here. */
	if (w->n + 2 > PROF_WALK_WORDS)
		return 0;
	r = prof_py_walk_run(&w->proc->py, w->py, pc, (struct walk_words *)w->ips, &w->counts);
	if (r & PY_RUN_PUSHED)
		w->py_any = true;
	return r & PY_RUN_STAY;
}

#ifdef PROF_WALK_CACHE
/* The native frame about to be stepped, into the walk's log (see struct prof_stack_win). */
static __always_inline void walk_native(struct unwind_walk *w)
{
	struct prof_stack_win *win = bpf_map_lookup_elem(&prof_stack_win, &(__u32){0});
	__u32 i;

	if (!win || !win->logging)
		return;
	i = win->nnative;
	if (i >= PROF_WALK_CACHE_WORDS) {
		win->logging = 0;
		return;
	}
	win->native[prof_bound(i, PROF_WALK_CACHE_WORDS - 1)] = w->g.ip;
	win->nnative = i + 1;
}
#endif

/* The slot of pc; the check word of a slot holding hit h under generation gen. */
static __always_inline struct unwind_pc_slot *pc_slot(struct prof_unwind_pc_cache *pcc, __u64 pc)
{
	return &pcc->s[masked((__u32)(pc * 0x9e3779b97f4a7c15ULL >> 54), PROF_UNWIND_PC_SLOTS - 1)];
}

static __always_inline __u32 pc_check(__u32 gen, const struct unwind_hit *h)
{
	__u64 v = h->lo ^ (h->hi << 7) ^ *(const __u64 *)&h->row ^ gen;

	return (__u32)(v ^ v >> 32) ^ 0x5bd1e995u;
}

#define UNWIND_NO_MAPPING (-2)
#define UNWIND_TABLE_YET  (-3) /* no table: its file's is being built (counted apart) */

/*
 * The row for pc in process p's mappings: 1 found, 0 no row covers pc, -1 no table (none will
 * come), UNWIND_TABLE_YET, UNWIND_NO_MAPPING.  Global functions, like the steps: the searches
 * are verified once.
 */
__noinline int prof_unwind_lookup(struct prof_unwind_proc *p, __u64 pc, struct unwind_hit *h)
{
	struct prof_unwind_pc_cache *pcc;
	struct prof_unwind_mapping *m;
	struct unwind_pc_slot *s = NULL;
	__u32 zero = 0, gen;
	int found;

	if (!p || !h)
		return UNWIND_NO_MAPPING;
	gen = p->gen;
	pcc = gen ? bpf_map_lookup_elem(&prof_unwind_pc_cache, &zero) : NULL;
	if (pcc) {
		s = pc_slot(pcc, pc);
		*h = s->hit;
		if (s->gen == gen && pc - h->lo < h->hi - h->lo && s->check == pc_check(gen, h))
			return prof_unwind_row__cfa(&h->row) != PROF_UNWIND_CFA_NONE;
		h->lo = h->hi = 0;
	}
	m = find_mapping(p, pc);
	if (!m)
		return UNWIND_NO_MAPPING;
	if (!m->table_id)
		return m->nchunks == PROF_UNWIND_NONE_YET ? UNWIND_TABLE_YET : -1;
	found = find_row(m, pc, &h->row, &h->lo, &h->hi);
	/* 0 with a row: the row has no CFA rule (lo < hi); 0 without: a gap (lo = hi). */
	if (s && found >= 0 && h->lo < h->hi) {
		s->gen = gen;
		s->hit = *h;
		s->check = pc_check(gen, h);
	}
	return found;
}

/* The same in one mapping (a vma the kernel found). */
__noinline int prof_unwind_lookup_in(struct prof_unwind_mapping *m, __u64 pc, struct unwind_hit *h)
{
	if (!m || !h)
		return -1;
	return m->table_id ? find_row(m, pc, &h->row, &h->lo, &h->hi) : -1;
}

static long unwind_frame(__u64 i, void *arg)
{
	struct unwind_walk *w = arg;
	struct prof_stack_win *win;
	__u64 pc, real;
	int found = UNWIND_NO_MAPPING;

	if (w->g.done)
		return 1;
	if (w->n >= PROF_WALK_WORDS) {
		walk_cut(&w->g, PROF_CNT_UNWIND_WALK_BOUND);
		return 1;
	}
	if (w->g.ip >= 0x800000000000ULL) {
		walk_cut(&w->g, PROF_CNT_UNWIND_NO_MAPPING); /* not a user address: garbage */
		return 1;
	}
	pc = w->g.exact ? w->g.ip : w->g.ip - 1;
	if (python_frame(w, pc))
		return 0;
#ifdef PROF_WALK_CACHE
	walk_native(w);
#endif
	if (pc >= w->hit.lo && pc < w->hit.hi) {
		if (!push_frame(w))
			return 1;
		prof_unwind_row_step(&w->g, &w->hit.row, pc);
		return w->g.done & 1;
	}
	/* The lookups write the hit in place (no copy on this frame's stack: see py_walk_begin);
	 * a failed one leaves it covering nothing. */
	w->hit.lo = w->hit.hi = 0;
	if (w->proc)
		found = prof_unwind_lookup(w->proc, pc, &w->hit);
	if (found == UNWIND_NO_MAPPING && w->g.ra_slot && w->proc) {
		real = prof_real_return(w->g.ra_slot);
		if (real) {
			w->g.unkept = true; /* the kernel's state, not the stack's */
			w->g.ip = real;
			pc = real - 1;
			found = prof_unwind_lookup(w->proc, pc, &w->hit);
		}
	}
	if (!push_frame(w))
		return 1;
	if (found == UNWIND_NO_MAPPING) {
		w->g.unkept = true; /* a row the process entry's generation does not name */
		if (w->g.reliable)
			ask_refresh(w); /* a library loaded since the maps were read? */
		win = bpf_map_lookup_elem(&prof_stack_win, &(__u32){0});
		if (!win || !w->g.reliable || !prof_vma_mapping(&win->vma, pc)) {
			prof_fp_step(&w->g, PROF_CNT_UNWIND_NO_MAPPING);
			return w->g.done & 1;
		}
		found = prof_unwind_lookup_in(&win->vma.m, pc, &w->hit);
	}
	if (found <= 0) {
		w->hit.lo = w->hit.hi = 0; /* what a failed lookup wrote */
		prof_fp_step(&w->g, found == UNWIND_TABLE_YET ? PROF_CNT_UNWIND_NO_TABLE_YET
							      : PROF_CNT_UNWIND_NO_TABLE_NEVER);
		return w->g.done & 1;
	}
	prof_unwind_row_step(&w->g, &w->hit.row, pc);
	return w->g.done & 1;
}

/*
 * --unwind fp: a stack as long as the kernel's walk goes (perf_event_max_stack, or our cap) was
 * most likely cut there, its root side unknown: a cut word of no known count ends it ("[frames
 * cut]"), counted.  (A stack exactly that deep is counted too.)
 */
static __always_inline long fp_cut(__u64 *ips, long n, __u32 cap)
{
	__u32 limit = prof_walk.fp_max_stack && prof_walk.fp_max_stack < cap
			      ? prof_walk.fp_max_stack
			      : cap;

	if (n < limit)
		return n;
	if (n >= cap)
		n = cap - 1; /* the cut word takes the last frame's place */
	ips[prof_bound(n, PROF_WALK_WORDS - 1)] = prof_stack_cut_word(0, 1);
	prof_count(PROF_CNT_UNWIND_DEPTH);
	prof_count(PROF_CNT_UNWIND_WALK_BOUND);
	return n + 1;
}

/* A new walk: the window holds another thread's stack, or an older one of this thread. */
static __always_inline void stack_win_empty(void)
{
	struct prof_stack_win *win;
	__u32 zero = 0;

	win = bpf_map_lookup_elem(&prof_stack_win, &zero);
	if (!win)
		return;
	win->len = 0;
#ifdef PROF_WALK_CACHE
	win->logging = 0; /* not a walk the cache may keep */
#endif
}

#ifdef PROF_WALK_CACHE
/*
 * The walk cache: whole walks, per CPU, by where they began (ip, sp, bp) and the generation of
 * the process entry whose rows they used (one content: include/prof_unwind.h).  A walk is a
 * function of those and of the stack words it read; each kept walk holds its native frames and
 * the words they depend on (as offsets from its first sp, with their values: return addresses,
 * CFA reads, and an rbp only once a rule used it, see walk_log), and is taken again only when
 * every one of them still holds its value: then the walk would read the same words, find the
 * same rows and give the same frames.  In a Python process the native frames are replayed and
 * the Python frames read anew (walk_replay).  Allocations repeat their leaf state (sqlite3: 514
 * of 225,209 start states; the top 100 are 98 %), so most stacks become a slot lookup and a few
 * compared words.  Kept only: a walk through tables alone, ended at its root, of
 * PROF_WALK_CACHE_WORDS native frames at most, with no signal frames, frame-pointer steps, rows
 * of a vma the entry does not hold or return addresses from the kernel's uretprobe state (none
 * of those is in the log), and not interleaved with another walk on this CPU (the window's
 * epoch).  A start's walks share a bucket of PROF_WALK_CACHE_WAYS slots: see walk_cached.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROF_WALK_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct prof_walk_cached);
} prof_walk_cache SEC(".maps");

/*
 * 1 when every word kept walk c depends on holds its value in the stack at sp (win's data as
 * the buffer), else 0.  Global: verified once.
 */
__noinline int prof_walk_check(struct prof_walk_cached *c, struct prof_stack_win *win, __u64 sp)
{
	struct prof_walk_span sp_;
	__u32 ns, e, k;
	__u64 o, shift;

	if (!c || !win)
		return 0;
	ns = c->nspans;
	for (__u32 s = 0; s < PROF_WALK_CHECK_SPANS; s++) {
		if (s >= ns)
			return 1;
		sp_ = c->span[s];
		/* In the window already when another way's check of this start read it */
		if (sp + sp_.lo < win->base || sp + sp_.lo + sp_.len > win->base + win->len) {
			win->len = 0;
			if (bpf_probe_read_user(win->data,
						(__u32)prof_bound(sp_.len, PROF_WALK_SPAN),
						(void *)(sp + sp_.lo)))
				return 0;
			win->base = sp + sp_.lo;
			win->len = sp_.len;
		}
		shift = (sp + sp_.lo - win->base) >> 3; /* the span's first word in the window */
		for (e = sp_.first; e < sp_.end && e < PROF_WALK_LOG; e++) {
			k = e;
			barrier_var(k); /* an index the verifier bounds, not pointers clang steps */
			k &= PROF_WALK_LOG - 1;
			o = shift + c->need_idx[k];
			if (win->data[prof_bound(o, STACK_WIN_WORDS - 1)] != c->need_val[k])
				return 0;
		}
	}
	return 1;
}

/* Does kept walk c start where st does?  A walk that used its first rbp, only with that rbp. */
static __always_inline bool walk_starts(const struct prof_walk_cached *c,
					const struct walk_start *st)
{
	return c->gen == st->gen && c->ip == st->ip && c->sp == st->sp &&
	       (!c->bp_used || c->bp == st->bp);
}

/*
 * 1 when the kept walk in slot starts where the window's start does, has at most max_n words,
 * and every word it depends on holds (its seq, read before the check, in the start), else 0.
 * Global: verified once for all the ways of a bucket.
 */
__noinline int prof_walk_slot(struct prof_stack_win *win, __u32 slot, __u32 max_n)
{
	struct prof_walk_cached *c = bpf_map_lookup_elem(&prof_walk_cache, &slot);

	if (!c || !win || (c->seq & 1) || !walk_starts(c, &win->start) || c->n > max_n)
		return 0;
	win->start.seq = c->seq;
	return prof_walk_check(c, win, win->start.sp);
}

struct walk_plan {
	struct prof_walk_cached *c;
	struct prof_stack_win *win;
	__u32 n, ns, bad;
};

/*
 * Log entry i into the plan: kept when needed, in the last span or a new one.  The counts go
 * through prof_opaque and the span's start is read back from the slot, so that the verifier,
 * walking the loop, does not tell apart states by them (see frame_in).
 */
static long walk_plan_word(__u64 i, void *arg)
{
	struct walk_plan *p = arg;
	struct prof_walk_cached *c = p->c;
	struct prof_stack_win *win = p->win;
	__u32 n = p->n, ns = p->ns, o, s, lo, both;

	if (i >= win->nlog)
		return 1;
	if (!(win->need >> i & 1))
		return 0;
	o = win->log_off[i & (PROF_WALK_LOG - 1)];
	s = (ns - 1) & (PROF_WALK_CHECK_SPANS - 1);
	lo = c->span[s].lo;
	if (!n || o < lo || o - lo > PROF_WALK_SPAN - 8 ||
	    o - lo > c->span[s].len + PROF_WALK_SPAN_GAP) {
		if (ns >= PROF_WALK_CHECK_SPANS) {
			p->bad = 1;
			return 1;
		}
		s = ns & (PROF_WALK_CHECK_SPANS - 1);
		/* The first from the walk's sp on (its word boundary: sp + lo aligned) */
		lo = !ns && o <= PROF_WALK_SPAN_GAP ? o & 7 : o;
		c->span[s].lo = lo;
		c->span[s].len = o - lo + 8;
		c->span[s].first = (__u16)n;
		ns++;
	}
	c->need_idx[n & (PROF_WALK_LOG - 1)] = (__u16)((o - lo) >> 3);
	c->need_val[n & (PROF_WALK_LOG - 1)] = win->log_val[i & (PROF_WALK_LOG - 1)];
	n++;
	c->span[s].end = (__u16)n;
	if (o - lo + 8 > c->span[s].len)
		c->span[s].len = o - lo + 8;
	both = prof_opaque(n | ns << 16);
	p->n = both & 0xffff;
	p->ns = both >> 16;
	return 0;
}

#define WALK_REPLAY (-2)

/*
 * A walk starting at w's registers: its words copied into w->ips from a kept walk that still
 * holds (their number); WALK_REPLAY when it holds in a process with Python frames, whose
 * native frames are then in the window's list for walk_replay; or -1 (walk: the window then
 * logs the walk's reads for prof_walk_keep).
 */
static __always_inline long walk_cached(struct unwind_walk *w, __u32 gen, __u32 *epoch,
					struct prof_stack_cap cap, bool py)
{
	struct prof_stack_win *win = bpf_map_lookup_elem(&prof_stack_win, &(__u32){0});
	struct prof_walk_cached *c;
	struct walk_start *st;
	__u32 seq, n, slot, max_n;
	__u64 h;

	if (!win)
		return -1;
	win->len = 0;
	win->logging = 0;
	st = &win->start;
	st->gen = gen;
	*epoch = ++win->epoch;
	st->ip = w->g.ip;
	st->sp = w->g.sp;
	st->bp = w->g.bp;
	/*
	 * A bucket of PROF_WALK_CACHE_WAYS slots by (ip, sp, gen): sqlite3 reaches its one malloc
	 * call from several paths at one sp (two slots per start missed a fifth of its walks).  A
	 * walk whose rules used its first rbp is found only with that rbp (code without frame
	 * pointers keeps data in rbp, which changes from call to call: the others ignore it).
	 * A slot of another start costs a few compares, one of this start a check.
	 */
	h = (st->ip ^ st->sp * 0xc2b2ae3d27d4eb4fULL ^ st->gen) * 0x9e3779b97f4a7c15ULL;
	st->slot = (__u32)(h >> 48) & prof_walk.walk_cache_mask & ~(PROF_WALK_CACHE_WAYS - 1);
	max_n = PROF_WALK_CACHE_WORDS;
	if (!py && cap.words < max_n)
		max_n = cap.words;
	if (!py && cap.frames < max_n)
		max_n = cap.frames;
	slot = PROF_WALK_CACHE_SLOTS; /* none */
#pragma unroll
	for (int k = 0; k < PROF_WALK_CACHE_WAYS; k++) {
		if (prof_walk_slot(win, st->slot + k, max_n)) {
			slot = st->slot + k;
			break;
		}
	}
	c = bpf_map_lookup_elem(&prof_walk_cache, &slot);
	if (!c)
		goto walk;
	seq = st->seq;
	n = c->n;
	if (n > max_n)
		goto walk;
	if (py)
		__builtin_memcpy(win->native, c->frames, sizeof(c->frames));
	else
		__builtin_memcpy(w->ips, c->frames, sizeof(c->frames));
	/* Rewritten meanwhile (this program preempted), or the window another walk's. */
	if (c->seq != seq || win->epoch != *epoch)
		goto walk;
	c->used = *epoch;
	if (!py)
		return n;
	win->nnative = n;
	return WALK_REPLAY;
walk:
	/* The window is empty, or holds a span a check read: this stack's words now. */
	win->log_sp = st->sp;
	win->need = 0;
	win->nlog = 0;
	win->nnative = 0;
	win->logging = 1;
	return -1;
}

#define REPLAY_RUN 16 /* native frames an iteration replays, at most */

/*
 * push_frame's push_value for the kept walk's native frame k (ip); then, in this iteration too,
 * the native frames after it up to the next eval frame (an iteration each cost ~4 ns more,
 * and a replay is mostly native frames: ~17 to 1-3 eval frames in the Python workload).  The
 * leaf side grows as push_value's would, frame by frame.  Returns the next frame to replay
 * (PROF_WALK_CACHE_WORDS, the end, without a window).  Global: verified once (inlined, its
 * paths multiplied the loop's), and what it returns and writes in c is unknown to the
 * verifier (as frame_in's prof_opaque makes the counts).
 */
__noinline __u32 prof_replay_natives(struct walk_words *ips, struct walk_counts *c,
				     const struct prof_py_proc *py, __u32 k, __u64 ip)
{
	struct prof_stack_win *win = bpf_map_lookup_elem(&prof_stack_win, &(__u32){0});
	__u32 n, nf;

	if (!ips || !c || !py || !win)
		return PROF_WALK_CACHE_WORDS;
	n = c->n;
	nf = c->nf;
	for (int j = 0; j < REPLAY_RUN; j++) {
		ips->w[prof_bound(n, PROF_WALK_WORDS - 1)] = ip;
		n++;
		nf++;
		k++;
		if (n <= c->leaf_words && nf <= c->leaf_frames) {
			c->leaf_n = n;
			c->leaf_nf = nf;
		}
		if (k >= win->nnative || k >= PROF_WALK_CACHE_WORDS || n >= PROF_WALK_WORDS)
			break;
		ip = win->native[prof_bound(k, PROF_WALK_CACHE_WORDS - 1)];
		if (py_is_eval(py, ip - 1))
			break;
	}
	c->n = n;
	c->nf = nf;
	return k;
}

/*
 * One iteration of a kept walk's replay in a process with Python frames: what unwind_frame
 * does, with the next native frame from the kept list instead of a table row's step.  The
 * Python frames are read anew: their words change from one allocation to the next (the line,
 * the frames), the native stack's do not.
 */
static long walk_replay(__u64 i, void *arg)
{
	struct unwind_walk *w = arg;
	struct prof_stack_win *win = bpf_map_lookup_elem(&prof_stack_win, &(__u32){0});
	__u32 k = w->replay_k;
	__u64 pc;

	if (!win || w->g.done)
		return 1;
	if (k >= win->nnative || k >= PROF_WALK_CACHE_WORDS) {
		w->g.done = 1;
		return 1;
	}
	if (w->n >= PROF_WALK_WORDS) {
		walk_cut(&w->g, PROF_CNT_UNWIND_WALK_BOUND);
		return 1;
	}
	w->g.ip = win->native[k];
	pc = k ? w->g.ip - 1 : w->g.ip; /* the first: the start's own ip (exact) */
	if (python_frame(w, pc))
		return 0;
	if (w->py && w->py->done) { /* the eval frame whose Python frames took its place */
		w->py->done = 0;
		w->replay_k = prof_opaque(k + 1); /* see frame_in */
		return 0;
	}
	if (!w->proc)
		return 1;
	w->replay_k = prof_replay_natives((struct walk_words *)w->ips, &w->counts, &w->proc->py, k,
					  w->g.ip);
	return 0;
}

/* The slot of bucket base a new walk takes: an empty one, else the least recently used. */
static __always_inline struct prof_walk_cached *walk_victim(__u32 base)
{
	struct prof_walk_cached *best = NULL, *c;
	__u32 slot;

#pragma unroll
	for (int k = 0; k < PROF_WALK_CACHE_WAYS; k++) {
		slot = base + k;
		c = bpf_map_lookup_elem(&prof_walk_cache, &slot);
		if (!c)
			continue;
		if (!c->gen)
			return c;
		if (!best || (__s32)(c->used - best->used) < 0)
			best = c;
	}
	return best;
}

/*
 * The walk just done (g its registers at the end), kept when it may be (see above).  Global:
 * verified once, not once for every state the walk can end in.
 */
__noinline int prof_walk_keep(const struct unwind_regs *g, __u32 epoch)
{
	struct prof_stack_win *win = bpf_map_lookup_elem(&prof_stack_win, &(__u32){0});
	struct walk_plan plan = {};
	struct prof_walk_cached *c;
	struct walk_start *st;
	bool keep;

	if (!win || !g)
		return 0;
	st = &win->start;
	keep = win->logging && win->epoch == epoch && win->nlog <= PROF_WALK_LOG &&
	       win->nnative <= PROF_WALK_CACHE_WORDS && g->done && !g->stop && !g->unkept;
	win->logging = 0;
	if (!keep)
		return 0;
	/* Into its bucket: an empty slot, else the one found or kept longest ago. */
	c = walk_victim(st->slot);
	if (!c)
		return 0;
	c->seq |= 1;
	c->gen = 0;
	win->need |= g->bp_used;
	plan.c = c;
	plan.win = win;
	bpf_loop(PROF_WALK_LOG, walk_plan_word, &plan, 0);
	if (plan.bad)
		goto out;
	c->nspans = (__u16)plan.ns;
	c->bp_used = g->bp0_used;
	c->gen = st->gen;
	c->ip = st->ip;
	c->sp = st->sp;
	c->bp = st->bp;
	c->used = epoch;
	c->n = win->nnative;
	__builtin_memcpy(c->frames, win->native, sizeof(c->frames));
out:
	c->seq++;
	return 0;
}
#endif

/* A stack past its cap: the root side found from the end (stack_cut). */
struct stack_cut_scan {
	__u64 *ips;
	__u32 i;		     /* the root side is ips[i, n) */
	__u32 n, leaf_n;	     /* words walked; the leaf side's */
	__u32 frames;		     /* in the root side */
	__u32 max_frames, max_words; /* its size */
	__u32 src, dst;		     /* the copy: ips[src..n) to ips[dst..) */
};

/* One word back from the end: the root side takes the frame ending there if it fits. */
static long root_word(__u64 k, void *arg)
{
	struct stack_cut_scan *c = arg;
	__u32 i = c->i, size;

	if (c->frames >= c->max_frames || i <= c->leaf_n || i > PROF_WALK_WORDS)
		return 1;
	/* A Python frame's fingerprint word: its frame word is the one before. */
	size = prof_py_is_print(c->ips[prof_bound(i - 1, PROF_WALK_WORDS - 1)]) && i - 1 > c->leaf_n
		       ? 2
		       : 1;
	if (c->n - i + size > c->max_words)
		return 1;
	/* opaque: iterations that differ only by these are one state to the verifier */
	c->i = prof_opaque(i - size);
	c->frames = prof_opaque(c->frames + 1);
	return 0;
}

/* One word of the root side moves down next to the leaf side (dst < src: in order is safe). */
static long root_move(__u64 k, void *arg)
{
	struct stack_cut_scan *c = arg;
	__u32 s = c->src + (__u32)k, d = c->dst + (__u32)k;

	if (s >= c->n || s >= PROF_WALK_WORDS || d >= PROF_WALK_WORDS)
		return 1;
	/* clamps the verifier sees (the tests above may be on other copies) */
	c->ips[prof_bound(d, PROF_WALK_WORDS - 1)] = c->ips[prof_bound(s, PROF_WALK_WORDS - 1)];
	return 0;
}

/*
 * c's stack is deeper than its cap: ips[0..leaf_n) stay, then the cut word, standing for the rest
 * frames after the leaf side but those of the root side (as many frames from the end as fit
 * max_frames and max_words), then the root side.  Returns the words now in c->ips; c->frames:
 * the root side's.
 */
static __noinline __u32 cut_middle(struct stack_cut_scan *c, __u32 rest, __u32 bounded)
{
	__u32 leaf_n = c->leaf_n;

	bpf_loop(PROF_STACK_WORDS, root_word, c, 0);
	if (leaf_n >= PROF_WALK_WORDS)
		return 0; /* not reached: leaf_n <= the leaf side's words */
	c->ips[prof_bound(leaf_n, PROF_WALK_WORDS - 1)] =
		prof_stack_cut_word(rest - c->frames, bounded);
	c->src = prof_opaque(c->i);
	c->dst = prof_opaque(leaf_n + 1);
	bpf_loop(PROF_STACK_WORDS, root_move, c, 0);
	return leaf_n + 1 + (c->n - c->i);
}

/*
 * w's stack is deeper than its cap: its leaf side, the cut word, its root side (cut_middle).
 * Counted.  The words now in w->ips.
 */
static __noinline __u32 stack_cut(struct unwind_walk *w, __u32 root_frames, __u32 root_words)
{
	struct stack_cut_scan c = {
		.ips = w->ips,
		.i = prof_opaque(w->n),
		.n = prof_opaque(w->n),
		.leaf_n = prof_opaque(w->leaf_n),
		.max_frames = root_frames,
		.max_words = root_words,
	};
	__u32 rest = w->nf - w->leaf_nf,
	      n = cut_middle(&c, rest, w->g.stop == PROF_CNT_UNWIND_WALK_BOUND);

	prof_count(PROF_CNT_UNWIND_DEPTH);
	prof_count_n(PROF_CNT_UNWIND_CUT_FRAMES, rest - c.frames);
	return n;
}

/* A kept stack front to back (prof_stack_recut): its frames, and the leaf side of a smaller cap. */
struct stack_recut_scan {
	__u64 *ips;
	__u32 i, n;		       /* the next word; the words */
	__u32 nf;		       /* frames before i, those of a cut word included */
	__u32 leaf_n, leaf_nf;	       /* the leaf side: words, frames */
	__u32 leaf_words, leaf_frames; /* its size */
	__u64 cut;		       /* the cut word met (0: none) */
};

/* One frame from the front: counted; the leaf side grows while it fits (as frame_in's). */
static long recut_frame(__u64 k, void *arg)
{
	struct stack_recut_scan *c = arg;
	__u32 i = c->i, size = 1;
	__u64 v;

	if (i >= c->n || i >= PROF_WALK_WORDS)
		return 1;
	v = c->ips[prof_bound(i, PROF_WALK_WORDS - 1)];
	if (prof_stack_is_cut(v)) {
		c->cut = v;
		c->nf = prof_opaque(c->nf + prof_stack_cut_frames(v));
	} else {
		/* A Python frame's word: its fingerprint follows. */
		if (i + 1 < c->n &&
		    prof_py_is_print(c->ips[prof_bound(i + 1, PROF_WALK_WORDS - 1)]))
			size = 2;
		c->nf = prof_opaque(c->nf + 1);
	}
	c->i = prof_opaque(i + size);
	if (!c->cut && c->i <= c->leaf_words && c->nf <= c->leaf_frames) {
		c->leaf_n = c->i;
		c->leaf_nf = c->nf;
	}
	return 0;
}

/*
 * ips[0..n): a stack kept for a cap (whole, or cut by stack_cut), cut again for a smaller one of
 * frames and words: the leaf side, cut word and root side a walk with that cap keeps (the cut
 * word of the larger cap is inside the smaller cap's middle).  The frames newly cut are counted,
 * and the stack in unwind_depth unless it was cut before.  Returns the words kept.
 */
static __always_inline __u32 prof_stack_recut(__u64 *ips, __u32 n, __u32 frames, __u32 words)
{
	struct prof_stack_cap cap = {frames, words};
	struct stack_recut_scan s = {
		.ips = ips,
		.n = prof_opaque(n),
		.leaf_words = prof_stack_leaf_words(cap),
		.leaf_frames = prof_stack_leaf_frames(cap),
	};
	struct stack_cut_scan c = {.ips = ips};
	__u32 was, kept;
	__u64 last;

	if (n > PROF_WALK_WORDS || !words)
		return 0;
	if (prof_unwind_mode == PROF_UNWIND_MODE_FP) {
		/* The kernel's walk: leaf side only, its "[frames cut]" (counted when it was put)
		 */
		if (n <= words)
			return n;
		last = ips[prof_bound(n - 1, PROF_WALK_WORDS - 1)];
		if (!prof_stack_is_cut(last))
			return fp_cut(ips, n, words);
		ips[prof_bound(words - 1, PROF_WALK_WORDS - 1)] = last;
		return words;
	}
	bpf_loop(PROF_STACK_WORDS, recut_frame, &s, 0);
	if (n <= words && (s.cut || s.nf <= frames))
		return n;
	c.i = prof_opaque(n);
	c.n = prof_opaque(n);
	c.leaf_n = prof_opaque(s.leaf_n);
	c.max_frames = prof_stack_root_frames(cap);
	c.max_words = prof_stack_root_words(cap);
	kept = cut_middle(&c, s.nf - s.leaf_nf, s.cut && prof_stack_cut_bounded(s.cut));
	was = s.cut ? prof_stack_cut_frames(s.cut) : 0;
	if (!s.cut)
		prof_count(PROF_CNT_UNWIND_DEPTH);
	prof_count_n(PROF_CNT_UNWIND_CUT_FRAMES, s.nf - s.leaf_nf - c.frames - was);
	return kept;
}

static __always_inline bool user_mode(const struct pt_regs *regs)
{
	return (BPF_CORE_READ(regs, cs) & 3) == 3;
}

/*
 * The current task's user stack, leaf first, into ips[0..PROF_WALK_WORDS): the number of
 * words (0 when there is none; at most cap.words, a deeper stack cut in the middle: stack_cut), or
 * < 0 when the capture failed (counted here).  Python frames
 * (include/prof_python.h) stand in for the interpreter's eval frames; *py (when not NULL) gets
 * the thread's enum prof_py_thread when there are any, else PROF_PY_THREAD_NONE.
 * ctx: the program's context (pt_regs of a uprobe, or bpf_perf_event_data with PROF_USTACK_PERF;
 * with PROF_USTACK_TASK any context: the registers come from the task).
 */
static __always_inline long prof_user_stack_py(void *ctx, __u64 *ips, __u32 flags, __u8 *py,
					       struct prof_stack_cap cap)
{
	struct unwind_walk w = {};
	struct pt_regs *regs;
	long n = -1;
#ifdef PROF_WALK_CACHE
	__u32 gen = 0, epoch;
#endif

	if (py)
		*py = PROF_PY_THREAD_NONE;
	if (prof_unwind_mode == PROF_UNWIND_MODE_FP) {
		/* The kernel's walk: perf_event_max_stack frames at most (127 by default). */
		n = bpf_get_stack(ctx, ips, cap.frames * sizeof(__u64), BPF_F_USER_STACK);
		if (n < 0) {
			prof_count(PROF_CNT_STACK_FAIL);
			return n;
		}
		return fp_cut(ips, n / sizeof(__u64), cap.frames);
	}
	if (flags & (PROF_USTACK_PERF | PROF_USTACK_TASK)) {
		regs = flags & PROF_USTACK_PERF
			       ? (struct pt_regs *)&((struct bpf_perf_event_data *)ctx)->regs
			       : NULL;
		if (!regs || !user_mode(regs)) {
			struct task_struct *task = bpf_get_current_task_btf();

			if (!BPF_CORE_READ(task, mm))
				return 0; /* a kernel thread: no user stack */
			regs = (struct pt_regs *)bpf_task_pt_regs(task);
		}
		w.g.ip = BPF_CORE_READ(regs, ip);
		w.g.sp = BPF_CORE_READ(regs, sp);
		w.g.bp = BPF_CORE_READ(regs, bp);
	} else {
		/* A probe's own context: read in place, not through bpf_probe_read_kernel. */
		w.g.ip = PT_REGS_IP((struct pt_regs *)ctx);
		w.g.sp = PT_REGS_SP((struct pt_regs *)ctx);
		w.g.bp = PT_REGS_FP((struct pt_regs *)ctx);
	}
	w.ips = ips;
	w.leaf_words = prof_stack_leaf_words(cap);
	w.leaf_frames = prof_stack_leaf_frames(cap);
	w.tgid = prof_walk_pid_tgid() >> 32;
	w.proc = bpf_map_lookup_elem(&prof_unwind_procs, &w.tgid);
	w.g.exact = true;
	w.g.reliable = true;
	if (w.proc && w.proc->py.version) {
		w.py = py_walk_begin();
#ifdef PROF_PY_CODE_CACHE
		if (w.py)
			py_cache_start(w.py, &w.proc->py, w.tgid, w.proc->gen);
#endif
	}
#ifdef PROF_WALK_CACHE
	/* Unknown to the verifier on either path, so that the walk after is checked once for
	 * both (prof_walk_keep finds the walks to keep by the window's logging flag). */
	epoch = prof_opaque(0);
	gen = w.proc ? w.proc->gen : 0;
	if (gen) {
		n = walk_cached(&w, gen, &epoch, cap, w.proc->py.version != 0);
		if (n >= 0) {
			prof_count(PROF_CNT_UNWIND_WALKS_CACHED);
			return n;
		}
	} else
#endif
		stack_win_empty();
	if (!w.proc)
		ask_refresh(&w);
#ifdef PROF_WALK_CACHE
	if (n == WALK_REPLAY) {
		prof_count(PROF_CNT_UNWIND_WALKS_CACHED);
		bpf_loop(PROF_WALK_WORDS + 1, walk_replay, &w, 0);
	} else {
		bpf_loop(PROF_WALK_WORDS + 1, unwind_frame, &w, 0);
		prof_walk_keep(&w.g, epoch);
	}
#else
	bpf_loop(PROF_WALK_WORDS + 1, unwind_frame, &w, 0);
#endif
	if (!w.g.done)
		w.g.stop = PROF_CNT_UNWIND_WALK_BOUND; /* iterations out (frames skipped) */
	if (w.nf > cap.frames || w.n > cap.words)
		w.n = stack_cut(&w, prof_stack_root_frames(cap), prof_stack_root_words(cap));
	if (w.g.stop)
		prof_count(w.g.stop);
	if (w.py && w.py->frames)
		prof_count_n(PROF_CNT_PY_FRAMES, w.py->frames);
#ifdef PROF_PY_CODE_CACHE
	if (w.py && w.py->cached)
		prof_count_n(PROF_CNT_PY_CODE_CACHED, w.py->cached);
#endif
	if (py)
		*py = w.py && w.py_any ? w.py->thread : PROF_PY_THREAD_NONE;
	return w.n;
}

#endif /* PROF_UNWIND_BPF_H */
