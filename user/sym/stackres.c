// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/stackres.h"

#include "prof_python.h"
#include "prof_stack.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "proc/maps.h"
#include "util/hashmap.h"
#include "prof_common.h"
#include "sym/symbolizer.h"
#include "util/log.h"

/*
 * Index of interned stacks.  Frames do not fit a fixed-size key, so the key is their hash; two
 * different stacks with one hash take consecutive `dup` numbers, and a lookup compares frames
 * until it finds its own or a free number.
 */
struct stack_key {
	uint64_t hash;
	uint32_t pid; /* 0 for kernel stacks: the kernel's addresses are shared */
	uint16_t kind;
	uint16_t n;
	uint32_t dup;
	uint32_t image; /* how many execs of pid came before (0 for kernel stacks) */
};

/*
 * A user stack as the outputs show it, filled by the job that symbolizes it: the functions
 * inlined at each address as frames of their own (levels[], nlev[i] of them before stack frame
 * i, innermost first), and with Python frames, without the interpreter's native frames that
 * STACKRES_PY_PYTHON leaves out.  frames NULL until then, and when it would be the stack's own
 * frames.  Apart from the stack's frames: the caller's thread compares their addresses with new
 * stacks while the worker writes this.
 */
struct stack_view {
	unsigned n;
	struct stackres_frame *frames;
	struct stackres_frame *levels; /* NULL: none */
	unsigned *nlev;		       /* per stack frame, NULL when levels is */
	unsigned nlevels;
};

struct stack {
	uint32_t pid;
	enum stack_kind kind;
	unsigned n;
	struct stackres_frame *frames;
	struct stack_view *view; /* NULL: the frames as they are */
};

/*
 * Work for the symbolizer, in the order the caller asked for it: a process's mappings are read
 * before the stacks that need them are resolved, and a held process is resumed only after every
 * stack it sent has been.
 */
enum job_kind {
	JOB_RESOLVE,  /* frames[0..n) of pid */
	JOB_LOAD,     /* read pid's mappings */
	JOB_RELOAD,   /* pid exec'd or is exiting: forget its mappings, read them again */
	JOB_DROP,     /* pid is gone for good */
	JOB_PYTHON,   /* pid's CPython layout (py, arg: &PyCode_Type) */
	JOB_PYTHREAD, /* thread arg of Python process pid was seen: its name */
	JOB_PYNAMES,  /* read Python process pid's thread names now (0: every process's) */
	JOB_PYRETRY,  /* read the names of processes with a thread seen unnamed, if due */
	JOB_AFTER,    /* call fn(ctx, pid) */
	JOB_DEBUG,    /* take the debug files debuginfod sent; redo the stacks of redo[0..n) */
};

struct job {
	struct job *next;
	enum job_kind kind;
	enum stack_kind stack_kind;
	uint32_t pid;
	unsigned n;
	struct stackres_frame *frames; /* JOB_RESOLVE: owned by the stack, not by the job */
	struct stack_view *view;       /* JOB_RESOLVE: the stack's, to fill (NULL: none) */
	void (*fn)(void *ctx, uint64_t arg);
	void *ctx;
	uint64_t arg;
	const struct py_version *py; /* JOB_PYTHON, with pyp (owned: most jobs have none) */
	struct prof_py_proc *pyp;
	struct maps *maps;  /* JOB_LOAD/RELOAD: the mappings read at the event, or NULL */
	struct stack *redo; /* JOB_DEBUG: copies of the user stacks then (frames shared), owned */
};

/*
 * Jobs queued at once.  Past it the caller waits: the ring buffer then fills and BPF counts what
 * it drops, rather than our memory growing with a burst the worker cannot keep up with.
 */
#define QUEUE_MAX 65536

/* The symbolizer's own thread (stackres__start_worker); absent, jobs run on the caller's. */
struct worker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work; /* jobs queued, or stop */
	pthread_cond_t idle; /* the queue emptied and nothing runs, or room was made */
	struct job *head, *tail;
	unsigned queued;
	bool busy; /* a job is running (taken off the queue) */
	bool stop;
	int err; /* the first -ENOMEM of a job */
};

struct stackres {
	struct symbolizer *sym;
	struct worker *w;	/* NULL: symbolized on the caller's thread */
	struct hashmap *index;	/* stack_key -> int32_t id */
	struct hashmap *images; /* pid -> uint32_t execs seen (absent: none) */
	struct stack *stacks;	/* by id */
	unsigned count, cap;
	int32_t *free_ids; /* ids of forgotten stacks, reused first */
	unsigned nfree, free_cap;
	enum stackres_py_frames py_frames;
	/* The cap on allocation stacks held (stackres__set_caps): bytes charged per process (pid
	 * -> uint64_t), and the events whose stack was not kept. */
	struct hashmap *held;
	uint64_t held_total, cap_pid, cap_total, capped;
};

/* What a stack of n words is charged: its frames, its bookkeeping (struct stack, the index's
 * entry, the job that symbolizes it).  A view (Python frames, inlined calls) can add as much
 * again; it is made later, on the worker. */
static uint64_t stack_cost(unsigned n)
{
	return (uint64_t)n * sizeof(struct stackres_frame) + 128;
}

static void stop_worker(struct stackres *r);

static void free_view(struct stack_view *v)
{
	free(v->frames);
	free(v->levels);
	free(v->nlev);
	memset(v, 0, sizeof(*v));
}

static void free_frames(struct stack *st)
{
	free(st->frames);
	if (st->view)
		free_view(st->view);
	free(st->view);
	st->frames = NULL;
	st->view = NULL;
}

int stackres__new(struct stackres **out, struct symbolizer *s)
{
	struct stackres *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->sym = s;
	err = hashmap__new(&r->index, sizeof(struct stack_key), sizeof(int32_t));
	if (!err)
		err = hashmap__new(&r->images, sizeof(uint32_t), sizeof(uint32_t));
	if (!err)
		err = hashmap__new(&r->held, sizeof(uint32_t), sizeof(uint64_t));
	stackres__set_caps(r, 0, 0);
	if (err) {
		stackres__free(r);
		return err;
	}
	*out = r;
	return 0;
}

void stackres__free(struct stackres *r)
{
	if (!r)
		return;
	stop_worker(r);
	for (unsigned i = 0; i < r->count; i++)
		free_frames(&r->stacks[i]);
	free(r->stacks);
	free(r->free_ids);
	hashmap__free(r->index);
	hashmap__free(r->images);
	hashmap__free(r->held);
	free(r);
}

/* The per-process cap is too large for a test to fill: the environment lowers it
 * (tests/e2e/test_caps.sh; the man page says it is for tests). */
void stackres__set_caps(struct stackres *r, uint64_t per_pid, uint64_t total)
{
	const char *env = getenv("BPFTRACE_PROF_STACK_CAP");

	if (!per_pid && env)
		per_pid = strtoull(env, NULL, 10);
	r->cap_pid = per_pid ? per_pid : STACKRES_CAP_PID;
	r->cap_total = total ? total : STACKRES_CAP_TOTAL;
}

uint64_t stackres__capped(struct stackres *r, bool reset)
{
	uint64_t n = r->capped;

	if (reset)
		r->capped = 0;
	return n;
}

/* Room for an allocation stack of n words of pid under both caps. */
static bool room(const struct stackres *r, uint32_t pid, unsigned n)
{
	const uint64_t *held = hashmap__find(r->held, &pid);
	uint64_t c = stack_cost(n);

	return r->held_total + c <= r->cap_total && (held ? *held : 0) + c <= r->cap_pid;
}

static int charge(struct stackres *r, uint32_t pid, unsigned n)
{
	uint64_t *held;
	bool created;

	if (hashmap__upsert(r->held, (void **)&held, &pid, &created))
		return -ENOMEM;
	*held = (created ? 0 : *held) + stack_cost(n);
	r->held_total += stack_cost(n);
	return 0;
}

void stackres__set_python_frames(struct stackres *r, enum stackres_py_frames how)
{
	r->py_frames = how;
}

int stackres__exec(struct stackres *r, uint32_t pid)
{
	uint32_t *gen;

	if (hashmap__upsert(r->images, (void **)&gen, &pid, NULL))
		return -ENOMEM;
	(*gen)++;
	return 0;
}

unsigned stackres__count(const struct stackres *r)
{
	return r->count;
}

/* A return address points after the call: the call itself is looked up. */
static uint64_t lookup_addr(enum stack_kind kind, const struct stackres_frame *frames, unsigned i)
{
	return frames[i].addr - (kind == STACK_USER_RET || i > 0 ? 1 : 0);
}

/* Frame f, at i of a view whose Python frames run from inner to outer, is the interpreter's own
 * between them: left out of the view (STACKRES_PY_PYTHON). */
static bool folded_out(struct stackres *r, uint32_t pid, const struct stackres_frame *f, unsigned i,
		       unsigned inner, unsigned outer)
{
	/* Every frame there is a caller's: its return address minus one is the call. */
	return r->py_frames == STACKRES_PY_PYTHON && i > inner && i < outer && f->sym.map &&
	       !prof_py_is_frame(f->addr) && !prof_py_is_print(f->addr) &&
	       symbolizer__python_native(r->sym, pid, f->addr - 1);
}

static bool py_word(const struct stackres_frame *f)
{
	return prof_py_is_frame(f->addr) || prof_py_is_print(f->addr);
}

/*
 * A sample can stop the innermost _PyEval_EvalFrameDefault (or a function it calls) while it
 * links its first frame or after it unlinked its last: the thread's current frame is then the
 * new callee, not yet marked as its invocation's first (3.11+: is_entry is stored after the
 * frame is made current), or the caller's (3.8–3.10: the frame object is made current inside the
 * call; every version: at the return).  The BPF walk gives the innermost invocation frames that
 * are not its own, each invocation below it its caller's frames, and runs out of frames one eval
 * frame early: that one is left native.  Known by its shape — Python frames, and one native eval
 * frame left below all of them — and put back in order[0..*m) (the indices of frames[0..n)
 * shown):
 *  - 3.11+ with the innermost frame at instruction 0 (not started): the call is starting; the
 *    innermost invocation keeps that frame, the rest of its frames go down one invocation;
 *  - else the innermost invocation has no frame of its own: the native eval frame is shown in
 *    its place, and every invocation's frames go down one.
 * False (order untouched) when the stack is not of that shape.
 */
static bool py_realign(struct stackres *r, uint32_t pid, const struct stackres_frame *f, unsigned n,
		       unsigned *order, unsigned *m)
{
	unsigned e = n, first = n, last = 0, g0, head, cs, ce, i, k = 0;

	for (i = 0; i < n; i++) {
		if (py_word(&f[i])) {
			first = first < i ? first : i;
			last = i;
		} else if (i && symbolizer__python_eval(r->sym, pid, f[i].addr - 1)) {
			if (e != n)
				return false; /* two left native: not this race */
			e = i;
		}
	}
	if (first == n || e == n || e < last || !prof_py_is_frame(f[first].addr))
		return false;
	for (g0 = first + 1; g0 < n && py_word(&f[g0]);)
		g0++;
	head = first;
	if (symbolizer__python_style(r->sym, pid) != PROF_PY_FRAMEOBJ &&
	    !prof_py_frame_instr(f[first].addr)) {
		head = first + (first + 1 < g0 && prof_py_is_print(f[first + 1].addr) ? 2 : 1);
		if (head == g0)
			return false; /* nothing of a lower invocation to move */
	}
	for (i = 0; i < head; i++)
		order[k++] = i;
	if (head == first)
		order[k++] = e;
	/* [cs, ce): the frames moving down to the next invocation */
	for (cs = head, ce = g0, i = g0; i < n;) {
		unsigned end = i + 1;

		if (i != e && !py_word(&f[i])) {
			order[k++] = i++;
			continue;
		}
		while (i != e && end < n && py_word(&f[end]))
			end++;
		while (cs < ce)
			order[k++] = cs++;
		cs = i == e ? 0 : i;
		ce = i == e ? 0 : end;
		i = end;
	}
	*m = k;
	return true;
}

/*
 * The view of stack frames[0..n) of pid (struct stack_view), its levels set: made again (after
 * a redo), or none when it would be the frames themselves.  0 or -ENOMEM.
 */
static int make_view(struct stackres *r, uint32_t pid, const struct stackres_frame *frames,
		     unsigned n, struct stack_view *v)
{
	unsigned inner = n, outer = 0, m = n, k = 0, lv = 0, i, *order = NULL, *lvat = NULL;
	bool fold = false, moved = false;
	struct stackres_frame *out;

	for (i = 0; i < n && inner == n; i++)
		if (prof_py_is_frame(frames[i].addr))
			inner = i;
	/* Python frames: order, the frames shown by index when py_realign moves them; lvat, where
	 * each frame's inlined levels start then.  Other stacks: the frames in their order. */
	if (inner < n) {
		order = malloc(2 * (size_t)n * sizeof(*order));
		if (!order)
			return -ENOMEM;
		moved = py_realign(r, pid, frames, n, order, &m);
		lvat = order + n;
		for (i = 0; i < n && moved; i++) {
			lvat[i] = lv;
			lv += v->nlev ? v->nlev[i] : 0;
		}
		for (i = 0, inner = n; i < m; i++) {
			if (!prof_py_is_frame(frames[moved ? order[i] : i].addr))
				continue;
			inner = inner < i ? inner : i;
			outer = i;
		}
		for (i = 0; i < m && !fold; i++)
			fold = folded_out(r, pid, &frames[moved ? order[i] : i], i, inner, outer);
	}
	if (!fold && !moved && !v->nlevels) {
		free(order);
		free(v->frames);
		v->frames = NULL;
		return 0;
	}
	out = malloc((m + v->nlevels) * sizeof(*out));
	if (!out) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0, lv = 0; i < m; i++) {
		unsigned o = moved ? order[i] : i, nl = v->nlev ? v->nlev[o] : 0;
		unsigned at = moved ? lvat[o] : lv;

		lv += nl;
		if (folded_out(r, pid, &frames[o], i, inner, outer))
			continue;
		for (unsigned j = 0; j < nl; j++)
			out[k++] = v->levels[at + j];
		out[k++] = frames[o];
	}
	free(order);
	free(v->frames);
	v->n = k;
	v->frames = out; /* last: what stackres__frames looks at */
	return 0;
}

/* levels src[0..k) of stack frame i (of n) appended to v's. */
static int append_levels(struct stack_view *v, unsigned n, unsigned i,
			 const struct stackres_frame *src, unsigned k)
{
	struct stackres_frame *grown;

	if (!k)
		return 0;
	if (!v->nlev && !(v->nlev = calloc(n, sizeof(*v->nlev))))
		return -ENOMEM;
	grown = realloc(v->levels, (v->nlevels + k) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	v->levels = grown;
	memcpy(v->levels + v->nlevels, src, k * sizeof(*src));
	v->nlevels += k;
	v->nlev[i] = k;
	return 0;
}

/* The functions inlined at stack frame i (of n; its address addr, its result phys) appended. */
static int add_levels(struct symbolizer *s, struct stack_view *v, unsigned n, unsigned i,
		      uint64_t addr, const struct sym_result *phys)
{
	struct sym_result lv[SYM_MAX_INLINE];
	struct stackres_frame fr[SYM_MAX_INLINE];
	unsigned k = symbolizer__inlined(s, phys, lv, SYM_MAX_INLINE);

	for (unsigned j = 0; j < k; j++)
		fr[j] = (struct stackres_frame){addr, lv[j]};
	return append_levels(v, n, i, fr, k);
}

/*
 * User stack st with frames of the files of bids named again: those frames resolved again, their
 * inlined levels with them (the others' kept), and its view made again.
 */
static int redo_stack(struct stackres *r, const struct stack *st, const struct hashmap *bids)
{
	struct stack_view old = *st->view, *v = st->view;
	unsigned lv = 0;
	bool redone = false;
	int err = 0;

	for (unsigned k = 0; k < st->n && !redone; k++) {
		const struct sym_result *sym = &st->frames[k].sym;

		redone = sym->map && sym->map->build_id[0] &&
			 hashmap__find(bids, &sym->map->build_id);
	}
	if (!redone)
		return 0;
	v->levels = NULL;
	v->nlev = NULL;
	v->nlevels = 0;
	for (unsigned k = 0; k < st->n && !err; k++) {
		struct stackres_frame *f = &st->frames[k];
		unsigned had = old.nlev ? old.nlev[k] : 0;
		const struct sym_result *sym = &f->sym;

		if (sym->map && sym->map->build_id[0] && hashmap__find(bids, &sym->map->build_id)) {
			err = symbolizer__resolve_again(
				r->sym, lookup_addr(st->kind, st->frames, k), &f->sym);
			if (!err)
				err = add_levels(r->sym, v, st->n, k, f->addr, &f->sym);
		} else {
			/* Kept as they were. */
			err = append_levels(v, st->n, k, had ? old.levels + lv : NULL, had);
		}
		lv += had;
	}
	free(old.levels);
	free(old.nlev);
	return err ? err : make_view(r, st->pid, st->frames, st->n, v);
}

/* Debug files arrived: every stack's frames of their files named again, in one pass. */
static int redo_debug(struct stackres *r, const struct job *j)
{
	struct hashmap *bids;
	int err = symbolizer__debug_take(r->sym, &bids);

	for (unsigned i = 0; bids && i < j->n && !err; i++)
		if (j->redo[i].view)
			err = redo_stack(r, &j->redo[i], bids);
	hashmap__free(bids);
	return err;
}

/* Frame i of j's stack, symbolized (and a user frame's inlined calls added to its view). */
static int resolve_frame(struct stackres *r, const struct job *j, unsigned i)
{
	struct stackres_frame *f = &j->frames[i];
	uint64_t lookup = lookup_addr(j->stack_kind, j->frames, i);
	int err = 0;

	if (j->stack_kind == STACK_KERNEL)
		err = symbolizer__resolve_kernel(r->sym, lookup, &f->sym);
	else if (prof_stack_is_cut(f->addr))
		err = symbolizer__resolve_cut(r->sym, f->addr, &f->sym);
	else if (prof_py_is_frame(f->addr))
		err = symbolizer__resolve_python(
			r->sym, j->pid, f->addr,
			i + 1 < j->n && prof_py_is_print(f[1].addr) ? f[1].addr : 0, &f->sym);
	else if (prof_py_is_print(f->addr))
		memset(&f->sym, 0, sizeof(f->sym)); /* its frame's, not a frame */
	else if (!(err = symbolizer__resolve_user(r->sym, j->pid, lookup, &f->sym)) && j->view)
		err = add_levels(r->sym, j->view, j->n, i, f->addr, &f->sym);
	return err;
}

/* One job, on whichever thread symbolizes.  -ENOMEM or 0: a process gone is no error. */
static int job__run(struct stackres *r, const struct job *j)
{
	int err = 0;

	switch (j->kind) {
	case JOB_RESOLVE:
		/*
		 * Python frames first: their code objects are read from the live process, which a
		 * native frame's file may outlive (its DWARF lines and inlined calls take a while
		 * to index, the first time) — a short-lived interpreter would have exited by then.
		 */
		for (unsigned pass = 0; pass < 2 && !err; pass++)
			for (unsigned i = 0; i < j->n && !err; i++) {
				struct stackres_frame *f = &j->frames[i];
				bool py = j->stack_kind != STACK_KERNEL &&
					  (prof_py_is_frame(f->addr) || prof_py_is_print(f->addr));

				if (py == (pass == 0))
					err = resolve_frame(r, j, i);
			}
		if (j->view && !err)
			err = make_view(r, j->pid, j->frames, j->n, j->view);
		break;
	case JOB_RELOAD:
		symbolizer__forget_pid(r->sym, j->pid);
		/* fall through */
	case JOB_LOAD:
		err = symbolizer__load_pid(r->sym, j->pid, j->maps);
		break;
	case JOB_DROP:
		symbolizer__drop_pid(r->sym, j->pid);
		break;
	case JOB_PYTHON:
		err = symbolizer__set_python(r->sym, j->pid, j->py, j->pyp);
		break;
	case JOB_PYTHREAD:
		err = symbolizer__python_thread(r->sym, j->pid, (uint32_t)j->arg);
		break;
	case JOB_PYNAMES:
		err = symbolizer__python_names(r->sym, j->pid);
		break;
	case JOB_PYRETRY:
		err = symbolizer__python_retry(r->sym);
		break;
	case JOB_AFTER:
		j->fn(j->ctx, j->arg);
		break;
	case JOB_DEBUG:
		err = redo_debug(r, j);
		break;
	}
	return err == -ENOMEM ? err : 0;
}

static void *worker_main(void *arg)
{
	struct stackres *r = arg;
	struct worker *w = r->w;
	struct job *j;
	int err;

	/* Named for ps and top. At our priority, unlike the table builds (util/bgprio.h): a process
	 * that exits while its maps wait here loses its names. */
	pthread_setname_np(pthread_self(), "prof-sym");
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->head && !w->stop)
			pthread_cond_wait(&w->work, &w->lock);
		if (!w->head)
			break; /* stop, and nothing left: queued work is never dropped */
		j = w->head;
		w->head = j->next;
		if (!w->head)
			w->tail = NULL;
		w->queued--;
		w->busy = true;
		pthread_mutex_unlock(&w->lock);

		err = job__run(r, j);
		maps__free(j->maps); /* the queued copy's reference */
		free(j->redo);
		free(j->pyp);
		free(j);

		pthread_mutex_lock(&w->lock);
		if (err && !w->err)
			__atomic_store_n(&w->err, err, __ATOMIC_RELAXED);
		w->busy = false;
		/* Wakes stackres__sync when all is done, and a caller waiting for room. */
		pthread_cond_broadcast(&w->idle);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Run j now (no worker) or queue a copy of it for the worker. */
static int submit(struct stackres *r, const struct job *j)
{
	struct worker *w = r->w;
	struct job *q;

	if (!w)
		return job__run(r, j);
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = *j;
	q->next = NULL;
	q->maps = maps__get(j->maps);
	pthread_mutex_lock(&w->lock);
	while (w->queued >= QUEUE_MAX)
		pthread_cond_wait(&w->idle, &w->lock);
	if (w->tail)
		w->tail->next = q;
	else
		w->head = q;
	w->tail = q;
	w->queued++;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

int stackres__start_worker(struct stackres *r)
{
	struct worker *w;
	int err;

	if (r->w)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->idle, NULL);
	r->w = w;
	/* Behind a file's DWARF indexing, stacks would wait: read when the loop next asks. */
	symbolizer__defer_dwarf(r->sym);
	err = pthread_create(&w->thread, NULL, worker_main, r);
	if (err) {
		r->w = NULL;
		pthread_cond_destroy(&w->idle);
		pthread_cond_destroy(&w->work);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return -err;
	}
	return 0;
}

int stackres__sync(struct stackres *r)
{
	struct worker *w = r->w;
	int err;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	while (w->head || w->busy)
		pthread_cond_wait(&w->idle, &w->lock);
	err = w->err;
	pthread_mutex_unlock(&w->lock);
	return err;
}

int stackres__error(const struct stackres *r)
{
	/* Read at every event: no lock, the value only ever goes from 0 to an error once. */
	return r->w ? __atomic_load_n(&r->w->err, __ATOMIC_RELAXED) : 0;
}

/* Every job queued runs, then the thread ends. */
static void stop_worker(struct stackres *r)
{
	struct worker *w = r->w;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->idle);
	pthread_cond_destroy(&w->work);
	pthread_mutex_destroy(&w->lock);
	free(w);
	r->w = NULL;
}

int stackres__load_pid(struct stackres *r, uint32_t pid, struct maps *m)
{
	return submit(r, &(struct job){.kind = JOB_LOAD, .pid = pid, .maps = m});
}

int stackres__reload_pid(struct stackres *r, uint32_t pid, struct maps *m)
{
	return submit(r, &(struct job){.kind = JOB_RELOAD, .pid = pid, .maps = m});
}

int stackres__drop_pid(struct stackres *r, uint32_t pid)
{
	return submit(r, &(struct job){.kind = JOB_DROP, .pid = pid});
}

int stackres__python(struct stackres *r, uint32_t pid, const struct py_version *v,
		     const struct prof_py_proc *py)
{
	struct job j = {.kind = JOB_PYTHON, .pid = pid, .py = v};
	int err;

	if (v && py) {
		j.pyp = malloc(sizeof(*j.pyp));
		if (!j.pyp)
			return -ENOMEM;
		*j.pyp = *py;
	}
	err = submit(r, &j);
	if (err || !r->w)
		free(j.pyp);
	return err;
}

int stackres__python_thread(struct stackres *r, uint32_t pid, uint32_t tid)
{
	return submit(r, &(struct job){.kind = JOB_PYTHREAD, .pid = pid, .arg = tid});
}

int stackres__python_names(struct stackres *r, uint32_t pid)
{
	return submit(r, &(struct job){.kind = JOB_PYNAMES, .pid = pid});
}

int stackres__python_retry(struct stackres *r)
{
	return submit(r, &(struct job){.kind = JOB_PYRETRY});
}

const char *stackres__thread_name(const struct stackres *r, uint32_t pid, uint32_t tid)
{
	return symbolizer__python_thread_name(r->sym, pid, tid);
}

int stackres__debug(struct stackres *r, enum stackres_when when)
{
	bool last = when == STACKRES_LAST;
	unsigned ms = last ? symbolizer__debug_timeout_ms(r->sym) : 0, n = 0, pending;
	struct stack *redo;
	int err;

	if (last || (when == STACKRES_PROFILE && symbolizer__dwarf_gathering(r->sym))) {
		/* Every stack resolved first: its files (and their DWARF) asked for by then, and
		 * indexed. */
		err = stackres__sync(r);
		if (err)
			return err;
		symbolizer__wait_dwarf(r->sym);
	}
	if (ms) {
		pending = symbolizer__debug_pending(r->sym);
		if (pending)
			pr_note("waiting up to %u s for %u debug file%s from debuginfod "
				"(--no-debuginfod: never)\n",
				ms / 1000, pending, pending == 1 ? "" : "s");
		symbolizer__debug_finish(r->sym, ms);
	}
	if (!symbolizer__debug_arrived(r->sym))
		return 0;
	/* The worker reads these copies: r->stacks may grow meanwhile, the frames stay. */
	redo = malloc((r->count ? r->count : 1) * sizeof(*redo));
	if (!redo)
		return -ENOMEM;
	for (unsigned i = 0; i < r->count; i++)
		if (r->stacks[i].frames && r->stacks[i].kind != STACK_KERNEL)
			redo[n++] = r->stacks[i];
	err = submit(r, &(struct job){.kind = JOB_DEBUG, .redo = redo, .n = n});
	if (err || !r->w)
		free(redo);
	return err;
}

int stackres__after(struct stackres *r, void (*fn)(void *ctx, uint64_t arg), void *ctx,
		    uint64_t arg)
{
	return submit(r, &(struct job){.kind = JOB_AFTER, .fn = fn, .ctx = ctx, .arg = arg});
}

static bool same_frames(const struct stack *st, const uint64_t *ips, unsigned n)
{
	if (st->n != n)
		return false;
	for (unsigned i = 0; i < n; i++)
		if (st->frames[i].addr != ips[i])
			return false;
	return true;
}

/* A new stack: copied and symbolized into r->stacks[id], id a forgotten one or the next. */
static int add_stack(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		     const uint64_t *ips, unsigned n)
{
	bool reused = r->nfree > 0;
	bool view = kind != STACK_KERNEL; /* inlined calls, Python frames */
	struct stack *st;
	int err;

	if (!reused && r->count == r->cap) {
		unsigned cap = r->cap ? r->cap * 2 : 256;
		struct stack *s = realloc(r->stacks, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		r->stacks = s;
		r->cap = cap;
	}
	*id = reused ? r->free_ids[r->nfree - 1] : (int32_t)r->count;
	st = &r->stacks[*id];
	st->frames = calloc(n, sizeof(*st->frames));
	st->view = view ? calloc(1, sizeof(*st->view)) : NULL;
	if (!st->frames || (view && !st->view)) {
		free_frames(st);
		return -ENOMEM;
	}
	st->pid = pid;
	st->kind = kind;
	st->n = n;
	for (unsigned i = 0; i < n; i++)
		st->frames[i].addr = ips[i];
	err = submit(r, &(struct job){.kind = JOB_RESOLVE,
				      .stack_kind = kind,
				      .pid = pid,
				      .n = n,
				      .frames = st->frames,
				      .view = st->view});
	if (err) {
		free_frames(st);
		return err;
	}
	if (reused)
		r->nfree--;
	else
		r->count++;
	return 0;
}

static int intern(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		  const uint64_t *ips, unsigned n, bool capped);

static void uncharge(struct stackres *r, uint32_t pid, unsigned n)
{
	uint64_t *held = hashmap__find(r->held, &pid), c = stack_cost(n);

	r->held_total -= c < r->held_total ? c : r->held_total;
	if (held && *held > c)
		*held -= c;
	else if (held)
		hashmap__delete(r->held, &pid);
}

/* The process's one stack for the events whose stack was not kept ([stacks capped]). */
static int capped_stack(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind)
{
	const uint64_t w = prof_stack_cut_word(0, 0) | PROF_STACK_CUT_CAPPED;

	r->capped++;
	return intern(r, id, pid, kind, &w, 1, true);
}

int stackres__intern(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		     const uint64_t *ips, unsigned n)
{
	return intern(r, id, pid, kind, ips, n, false);
}

/* capped: the [stacks capped] stack itself, kept past the caps (one per process). */
static int intern(struct stackres *r, int32_t *id, uint32_t pid, enum stack_kind kind,
		  const uint64_t *ips, unsigned n, bool capped)
{
	struct stack_key k = {.kind = (uint16_t)kind};
	const uint32_t *image;
	bool created;
	int32_t *v;
	int err;

	*id = STACKRES_NONE;
	if (!n)
		return 0;
	if (n > PROF_STACK_WORDS)
		n = PROF_STACK_WORDS;
	if (kind != STACK_KERNEL) {
		k.pid = pid;
		image = hashmap__find(r->images, &pid);
		k.image = image ? *image : 0;
	}
	k.n = (uint16_t)n;
	k.hash = hash_bytes(ips, n * sizeof(*ips));
	for (;; k.dup++) {
		if (hashmap__upsert(r->index, (void **)&v, &k, &created))
			return -ENOMEM;
		if (!created) {
			if (same_frames(&r->stacks[*v], ips, n)) {
				*id = *v;
				return 0;
			}
			continue; /* another stack with this hash */
		}
		if (!capped && kind == STACK_USER_RET && !room(r, k.pid, n)) {
			hashmap__delete(r->index, &k);
			return capped_stack(r, id, pid, kind);
		}
		/* Ids are positions in r->stacks; INT32_MAX of them is far beyond memory. */
		err = add_stack(r, id, k.pid, kind, ips, n);
		if (!err && kind == STACK_USER_RET)
			err = charge(r, k.pid, n);
		if (err) {
			hashmap__delete(r->index, &k);
			*id = STACKRES_NONE;
			return err;
		}
		/* v may have moved: add_stack inserted nothing, but look it up to be plain. */
		v = hashmap__find(r->index, &k);
		*v = *id;
		return 0;
	}
}

void stackres__forget_pid(struct stackres *r, uint32_t pid)
{
	const struct stack_key *k;
	struct stack_key *gone = NULL;
	size_t it = 0, n = 0, cap = 0;
	int32_t *v;

	if (!pid)
		return;	   /* kernel stacks are everyone's */
	stackres__sync(r); /* no job may still write the frames freed below */
	while (hashmap__next(r->index, &it, (const void **)&k, (void **)&v)) {
		if (k->pid != pid)
			continue;
		if (n == cap) {
			struct stack_key *g =
				realloc(gone, (cap = cap ? 2 * cap : 64) * sizeof(*g));

			if (!g)
				break; /* the rest stays: forgotten next time */
			gone = g;
		}
		gone[n++] = *k;
	}
	for (size_t i = 0; i < n; i++) {
		int32_t *idp = hashmap__find(r->index, &gone[i]), id;
		struct stack *st;

		if (!idp)
			continue;
		id = *idp;
		hashmap__delete(r->index, &gone[i]);
		if (r->nfree == r->free_cap) {
			unsigned c = r->free_cap ? 2 * r->free_cap : 256;
			int32_t *f = realloc(r->free_ids, c * sizeof(*f));

			if (!f)
				continue; /* the slot is lost, its memory freed below all the same
					   */
			r->free_ids = f;
			r->free_cap = c;
		}
		st = &r->stacks[id];
		if (st->kind == STACK_USER_RET)
			uncharge(r, pid, st->n);
		free_frames(st);
		*st = (struct stack){0};
		r->free_ids[r->nfree++] = id;
	}
	free(gone);
	hashmap__delete(r->images, &pid);
}

static int add_used(struct hashmap *used, const void *ptr)
{
	void *v;

	return ptr ? hashmap__upsert(used, &v, &ptr, NULL) : 0;
}

int stackres__used(struct stackres *r, struct hashmap *used)
{
	stackres__sync(r);
	/* A view copies its stack's frames and levels: no pointer of its own. */
	for (unsigned i = 0; i < r->count; i++) {
		const struct stack *st = &r->stacks[i];
		unsigned nlv = st->view ? st->view->nlevels : 0;

		for (unsigned j = 0; j < st->n + nlv; j++) {
			const struct sym_result *sym =
				j < st->n ? &st->frames[j].sym : &st->view->levels[j - st->n].sym;

			if (add_used(used, sym->map) || add_used(used, sym->name) ||
			    add_used(used, sym->system_name) || add_used(used, sym->file))
				return -ENOMEM;
		}
	}
	return 0;
}

const struct stackres_frame *stackres__frames(const struct stackres *r, int32_t id, unsigned *n)
{
	const struct stack *st;

	if (id < 0 || (unsigned)id >= r->count) {
		*n = 0;
		return NULL;
	}
	st = &r->stacks[id];
	/* Once symbolized, when anything was inlined or left out. */
	if (st->view && st->view->frames) {
		*n = st->view->n;
		return st->view->frames;
	}
	*n = st->n;
	return st->frames;
}
