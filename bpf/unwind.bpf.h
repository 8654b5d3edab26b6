/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The user-stack walker shared by the heap return probe and the cpu sampler: .eh_frame unwinding
 * from tables built in userspace (include/prof_unwind.h, user/sym/unwinder.c), frame pointers where
 * a file has no table (JIT code, a table still building), bpf_get_stack for --unwind fp.
 *
 * One bpf_loop iteration per frame, so one program walks up to PROF_MAX_FRAMES frames without
 * tail calls.  Per frame: the pc's mapping by binary search in the process's sorted mapping
 * array, its table row by two binary searches (the table's index chunk, then one chunk of
 * rows), the caller's registers from the row with bpf_probe_read_user.  Every stack that ends
 * anywhere but at a root (an outermost-frame rule, a zero return address or frame pointer) is
 * counted by the reason it ended.
 */
#ifndef PROF_UNWIND_BPF_H
#define PROF_UNWIND_BPF_H

#include "common.bpf.h"
#include "events.bpf.h"
#include "unwind_maps.bpf.h"

/* ctx is a perf_event program's context (bpf_perf_event_data) */
#define PROF_USTACK_PERF 1
/* ctx holds no user registers (a tracepoint): take those the current task entered the kernel
 * with */
#define PROF_USTACK_TASK 2

/* --unwind (enum unwind_mode in user/cli.h): 0 auto, 1 dwarf, 2 fp.  Set by the loader. */
const volatile __u32 prof_unwind_mode = 0;
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

struct unwind_walk {
	__u64 *ips;		       /* out: frames, leaf first */
	struct prof_unwind_proc *proc; /* NULL: no entry for this process */
	__u64 ip, sp, bp;
	__u64 ra_slot; /* where ip was read from (0: from registers) */
	__u32 n;
	__u32 tgid;
	__u32 stop;	       /* PROF_CNT_* that cut the stack, or 0 */
	bool exact;	       /* ip is not a return address: look it up as is */
	bool reliable;	       /* ip came from registers or a table (not a frame pointer) */
	bool bp_lost;	       /* the caller's rbp is unknown */
	struct vma_lookup vma; /* scratch of vma_mapping */
	/* The last row found and the addresses it covers: recursion and loops of calls meet the
	 * same function frame after frame, and skip the lookups. */
	__u64 hit_lo, hit_hi;
	struct prof_unwind_row hit_row;
	__u32 done; /* 1: the walk is over (a __u32 the verifier sees masked to 0..1) */
};

static __always_inline void walk_cut(struct unwind_walk *w, __u32 reason)
{
	w->stop = reason;
	w->done = 1;
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
	for (i = 0; i < 9; i++) {
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

/*
 * The row for pc in m's table: 1 found, 0 no row covers pc (a gap, outside), -1 no table
 * loaded.
 */
static __always_inline int find_row(struct prof_unwind_mapping *m, __u64 pc,
				    struct prof_unwind_row *out, __u64 *lo, __u64 *hi)
{
	__u32 key = 0, base = 0, n, half, rel, i;
	struct prof_unwind_chunk *c;
	struct prof_unwind_index *ix;
	void *inner;

	if (pc - m->bias > 0xffffffffULL)
		return 0;
	rel = (__u32)(pc - m->bias);
	inner = bpf_map_lookup_elem(&prof_unwind_tables, &m->table_id);
	if (!inner)
		return -1;
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

static long vma_found(struct task_struct *task, struct vm_area_struct *vma, void *arg)
{
	struct vma_lookup *q = arg;
	struct prof_unwind_file_key key = {};
	struct prof_unwind_file *f;
	struct inode *inode;
	__u64 off;

	if (!vma->vm_file || !(vma->vm_flags & VM_EXEC))
		return 0;
	inode = vma->vm_file->f_inode;
	key.dev = inode->i_sb->s_dev;
	key.ino = inode->i_ino;
	f = bpf_map_lookup_elem(&prof_unwind_files, &key);
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
 * perf event the lookup may fail (the mm lock is busy): frame pointers then.
 */
static __always_inline bool vma_mapping(struct vma_lookup *q, __u64 pc)
{
	q->pc = pc;
	q->m.table_id = 0;
	if (bpf_find_vma(bpf_get_current_task_btf(), pc, vma_found, q, 0))
		return false;
	return q->m.table_id != 0;
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
	e->tid = (__u32)bpf_get_current_pid_tgid();
	/* Now, not with the next batch: until the re-read its frames are walked by frame pointer.
	 */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/*
 * A return address that is in no mapping may be the uretprobe trampoline: a uretprobe on the
 * function whose frame this was (ours on an allocator, another tracer's) replaced it, and the
 * kernel keeps the real one with the slot's address.
 */
static __always_inline __u64 real_return(__u64 ra_slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);

	for (int i = 0; i < PROF_UNWIND_RET_INSTANCES && ri; i++) {
		if (BPF_CORE_READ(ri, stack) == ra_slot)
			return BPF_CORE_READ(ri, orig_ret_vaddr);
		ri = BPF_CORE_READ(ri, next);
	}
	return 0;
}

/* One frame by its frame pointer (the caller's frame at rbp, its return address above it). */
static __always_inline void fp_step(struct unwind_walk *w, __u32 reason)
{
	__u64 frame[2];

	if (prof_unwind_mode == PROF_UNWIND_MODE_DWARF)
		return walk_cut(w, reason);
	if (!w->bp) {
		w->done = 1; /* the outermost frame (_start clears rbp) */
		return;
	}
	if (w->bp_lost || w->bp < w->sp || w->bp - w->sp > PROF_UNWIND_FP_SPAN || (w->bp & 7))
		return walk_cut(w, reason);
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)w->bp))
		return walk_cut(w, PROF_CNT_UNWIND_READ_FAULT);
	prof_count(PROF_CNT_UNWIND_FP_FRAMES);
	w->ra_slot = w->bp + 8;
	w->sp = w->bp + 16;
	w->bp = frame[0];
	w->ip = frame[1];
	w->exact = false;
	w->reliable = false;
	if (!w->ip)
		w->done = 1;
}

/* One frame by its table row. */
static __always_inline void row_step(struct unwind_walk *w, const struct prof_unwind_row *r,
				     __u64 pc)
{
	__u32 kind = prof_unwind_row__cfa(r);
	__u64 cfa, v, regs[3];
	long off = (long)r->cfa_off * 8;

	switch (kind) {
	case PROF_UNWIND_CFA_STOP:
		w->done = 1;
		return;
	case PROF_UNWIND_CFA_SIGNAL:
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(w->sp + PROF_SIGFRAME_RBP)) ||
		    bpf_probe_read_user(regs, 2 * sizeof(__u64),
					(void *)(w->sp + PROF_SIGFRAME_RSP)))
			return walk_cut(w, PROF_CNT_UNWIND_READ_FAULT);
		w->bp = v;
		w->sp = regs[0];
		w->ip = regs[1];
		w->ra_slot = 0;
		w->exact = true; /* the interrupted instruction itself */
		w->reliable = true;
		w->bp_lost = false;
		if (!w->ip)
			w->done = 1;
		return;
	case PROF_UNWIND_CFA_RSP:
		cfa = w->sp + off;
		break;
	case PROF_UNWIND_CFA_PLT:
		cfa = w->sp + off + ((pc & 15) >= (__u64)(__u8)r->rbp_off ? 8 : 0);
		break;
	case PROF_UNWIND_CFA_RBP:
		if (w->bp_lost)
			return walk_cut(w, PROF_CNT_UNWIND_UNSUPPORTED);
		cfa = w->bp + off;
		break;
	case PROF_UNWIND_CFA_DEREF_RBP:
	case PROF_UNWIND_CFA_DEREF_RSP:
		if (kind == PROF_UNWIND_CFA_DEREF_RBP && w->bp_lost)
			return walk_cut(w, PROF_CNT_UNWIND_UNSUPPORTED);
		v = (kind == PROF_UNWIND_CFA_DEREF_RBP ? w->bp : w->sp) + off;
		if (bpf_probe_read_user(&cfa, sizeof(cfa), (void *)v))
			return walk_cut(w, PROF_CNT_UNWIND_READ_FAULT);
		break;
	default:
		return walk_cut(w, PROF_CNT_UNWIND_UNSUPPORTED);
	}
	if (cfa <= w->sp)
		return walk_cut(w, PROF_CNT_UNWIND_CFA_STUCK);
	/* The caller's rbp, read before sp moves (DEREF_RBP is relative to this frame's rbp). */
	off = (long)r->rbp_off * 8;
	/* The common frame (push %rbp first): rbp at CFA-16 beside the return address, one read. */
	if (prof_unwind_row__rbp(r) == PROF_UNWIND_RBP_CFA && r->rbp_off == -2) {
		if (bpf_probe_read_user(regs, 2 * sizeof(__u64), (void *)(cfa - 16)))
			return walk_cut(w, PROF_CNT_UNWIND_READ_FAULT);
		w->bp = regs[0];
		w->bp_lost = false;
		w->ip = regs[1];
		goto moved;
	}
	switch (prof_unwind_row__rbp(r)) {
	case PROF_UNWIND_RBP_UNCHANGED:
		break;
	case PROF_UNWIND_RBP_CFA:
	case PROF_UNWIND_RBP_DEREF_RBP:
		v = (prof_unwind_row__rbp(r) == PROF_UNWIND_RBP_CFA ? cfa : w->bp) + off;
		if (bpf_probe_read_user(&w->bp, sizeof(w->bp), (void *)v))
			return walk_cut(w, PROF_CNT_UNWIND_READ_FAULT);
		w->bp_lost = false;
		break;
	default: /* undefined or a rule we cannot follow: only an rbp-based rule above cares */
		w->bp_lost = true;
		break;
	}
	if (bpf_probe_read_user(&w->ip, sizeof(w->ip), (void *)(cfa - 8)))
		return walk_cut(w, PROF_CNT_UNWIND_READ_FAULT);
moved:
	w->ra_slot = cfa - 8;
	w->sp = cfa;
	w->exact = false;
	w->reliable = true;
	if (!w->ip)
		w->done = 1;
}

/* Append the current ip to the stack; false when it is full (checked by the caller before, and
 * here on the value the verifier sees). */
static __always_inline bool push_frame(struct unwind_walk *w)
{
	__u32 n = w->n;

	if (n >= PROF_MAX_FRAMES)
		return false;
	w->ips[n] = w->ip;
	w->n = n + 1;
	return true;
}

static long unwind_frame(__u64 i, void *arg)
{
	struct unwind_walk *w = arg;
	struct prof_unwind_mapping *m = NULL;
	struct prof_unwind_row row;
	__u64 pc, real, lo, hi;
	int found;

	if (w->done)
		return 1;
	if (w->n >= PROF_MAX_FRAMES) {
		walk_cut(w, PROF_CNT_UNWIND_DEPTH);
		return 1;
	}
	if (w->ip >= 0x800000000000ULL) {
		walk_cut(w, PROF_CNT_UNWIND_NO_MAPPING); /* not a user address: garbage */
		return 1;
	}
	pc = w->exact ? w->ip : w->ip - 1;
	if (pc >= w->hit_lo && pc < w->hit_hi) {
		if (!push_frame(w))
			return 1;
		row = w->hit_row;
		row_step(w, &row, pc);
		return w->done & 1;
	}
	if (w->proc)
		m = find_mapping(w->proc, pc);
	if (!m && w->ra_slot && w->proc) {
		real = real_return(w->ra_slot);
		if (real) {
			w->ip = real;
			pc = real - 1;
			m = find_mapping(w->proc, pc);
		}
	}
	if (!push_frame(w))
		return 1;
	if (!m) {
		if (w->reliable)
			ask_refresh(w); /* a library loaded since the maps were read? */
		if (!w->reliable || !vma_mapping(&w->vma, pc)) {
			fp_step(w, PROF_CNT_UNWIND_NO_MAPPING);
			return w->done & 1;
		}
		m = &w->vma.m;
	}
	found = m->table_id ? find_row(m, pc, &row, &lo, &hi) : -1;
	if (found <= 0) {
		fp_step(w, PROF_CNT_UNWIND_NO_TABLE);
		return w->done & 1;
	}
	w->hit_lo = lo;
	w->hit_hi = hi;
	w->hit_row = row;
	row_step(w, &row, pc);
	return w->done & 1;
}

static __always_inline bool user_mode(const struct pt_regs *regs)
{
	return (BPF_CORE_READ(regs, cs) & 3) == 3;
}

/*
 * The current task's user stack, leaf first, into ips[0..PROF_MAX_FRAMES): the number of
 * frames (0 when there is none), or < 0 when the capture failed (counted here).
 * ctx: the program's context (pt_regs of a uprobe, or bpf_perf_event_data with PROF_USTACK_PERF;
 * with PROF_USTACK_TASK any context: the registers come from the task).
 */
static __always_inline long prof_user_stack(void *ctx, __u64 *ips, __u32 flags)
{
	struct unwind_walk w = {};
	struct pt_regs *regs;
	long n;

	if (prof_unwind_mode == PROF_UNWIND_MODE_FP) {
		n = bpf_get_stack(ctx, ips, PROF_MAX_FRAMES * sizeof(__u64), BPF_F_USER_STACK);
		if (n < 0) {
			prof_count(PROF_CNT_STACK_FAIL);
			return n;
		}
		return n / sizeof(__u64);
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
	} else {
		regs = ctx;
	}
	w.ip = BPF_CORE_READ(regs, ip);
	w.sp = BPF_CORE_READ(regs, sp);
	w.bp = BPF_CORE_READ(regs, bp);
	w.ips = ips;
	w.tgid = bpf_get_current_pid_tgid() >> 32;
	w.proc = bpf_map_lookup_elem(&prof_unwind_procs, &w.tgid);
	w.exact = true;
	w.reliable = true;
	if (!w.proc)
		ask_refresh(&w);
	bpf_loop(PROF_MAX_FRAMES + 1, unwind_frame, &w, 0);
	if (w.stop)
		prof_count(w.stop);
	return w.n;
}

#endif /* PROF_UNWIND_BPF_H */
