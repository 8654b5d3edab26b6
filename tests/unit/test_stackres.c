// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Interning raw frames: ids are exact per (pid, kind, frames), kernel stacks are shared, the
 * empty stack is no stack.  The symbolizer reads a fixture proc root (no processes) and a
 * fixture kallsyms, so kernel frames get known names and user frames none.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "prof_python.h"
#include "prof_stack.h"
#include "profile/profile.h"
#include "proc/maps.h"
#include "sym/python.h"
#include "sym/stackres.h"
#include "profile/build.h"
#include "sym/symbolizer.h"
#include "util/hashmap.h"

struct fixture {
	char root[64];
	char kallsyms[96];
	struct symbolizer *sym;
	struct stackres *r;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct symbolizer_opts opts = {.debug_dir = ""};
	FILE *f;

	if (!fx)
		return -1;
	strcpy(fx->root, "/tmp/stackres.XXXXXX");
	if (!mkdtemp(fx->root))
		return -1;
	snprintf(fx->kallsyms, sizeof(fx->kallsyms), "%s/kallsyms", fx->root);
	f = fopen(fx->kallsyms, "w");
	if (!f)
		return -1;
	fputs("ffffffff81000000 T _text\n"
	      "ffffffff81001000 T do_sys_open\n"
	      "ffffffff81002000 T vfs_read\n",
	      f);
	fclose(f);
	opts.proc_root = fx->root;
	opts.kallsyms = fx->kallsyms;
	opts.perfmap_dir = fx->root;
	if (symbolizer__new(&fx->sym, &opts) || stackres__new(&fx->r, fx->sym))
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	stackres__free(fx->r);
	symbolizer__free(fx->sym);
	unlink(fx->kallsyms);
	rmdir(fx->root);
	free(fx);
	return 0;
}

static void test_stackres__same_frames_same_id(void **state)
{
	struct fixture *fx = *state;
	uint64_t a[] = {0x401000, 0x402000, 0x403000};
	uint64_t b[] = {0x401000, 0x402000, 0x403000};
	uint64_t shorter[] = {0x401000, 0x402000};
	uint64_t other[] = {0x401000, 0x402000, 0x403008};
	int32_t ida, idb, ids, ido;

	assert_int_equal(stackres__intern(fx->r, &ida, 100, STACK_USER_RET, a, 3), 0);
	assert_int_equal(stackres__intern(fx->r, &idb, 100, STACK_USER_RET, b, 3), 0);
	assert_int_equal(stackres__intern(fx->r, &ids, 100, STACK_USER_RET, shorter, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &ido, 100, STACK_USER_RET, other, 3), 0);
	assert_true(ida >= 0);
	assert_int_equal(idb, ida);
	/* A prefix of a stack, and a stack differing in its root frame only, are other stacks. */
	assert_int_not_equal(ids, ida);
	assert_int_not_equal(ido, ida);
	assert_int_not_equal(ido, ids);
	assert_int_equal(stackres__count(fx->r), 3);
}

static void test_stackres__user_stacks_differ_per_pid(void **state)
{
	struct fixture *fx = *state;
	uint64_t ips[] = {0x401000, 0x402000};
	int32_t p1, p2, p1again, as_leaf;

	assert_int_equal(stackres__intern(fx->r, &p1, 100, STACK_USER_RET, ips, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &p2, 200, STACK_USER_RET, ips, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &p1again, 100, STACK_USER_RET, ips, 2), 0);
	/* The same addresses with an interrupted leaf resolve differently: another stack. */
	assert_int_equal(stackres__intern(fx->r, &as_leaf, 100, STACK_USER, ips, 2), 0);
	assert_int_not_equal(p1, p2);
	assert_int_equal(p1again, p1);
	assert_int_not_equal(as_leaf, p1);
	assert_int_equal(stackres__count(fx->r), 3);
}

static void test_stackres__kernel_stacks_shared_across_pids(void **state)
{
	struct fixture *fx = *state;
	uint64_t ips[] = {0xffffffff81002010, 0xffffffff81001020};
	uint32_t locs[8], n = 0;
	struct profile *p;
	int32_t k1, k2;
	char buf[64];

	assert_int_equal(stackres__intern(fx->r, &k1, 100, STACK_KERNEL, ips, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &k2, 200, STACK_KERNEL, ips, 2), 0);
	assert_true(k1 >= 0);
	assert_int_equal(k2, k1);
	assert_int_equal(stackres__count(fx->r), 1);
	/* Symbolized at first sight, leaf first. */
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(build__locations(p, fx->r, k1, locs, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(profile__location_name(p, locs[0], buf, sizeof(buf)), "vfs_read");
	assert_string_equal(profile__location_name(p, locs[1], buf, sizeof(buf)), "do_sys_open");
	profile__free(p);
}

static void test_stackres__no_frames_no_stack(void **state)
{
	struct fixture *fx = *state;
	uint64_t ips[] = {0x401000};
	uint32_t locs[4], n = 0;
	struct profile *p;
	int32_t id = 7;

	assert_int_equal(stackres__intern(fx->r, &id, 100, STACK_USER_RET, ips, 0), 0);
	assert_int_equal(id, STACKRES_NONE);
	assert_int_equal(stackres__intern(fx->r, &id, 100, STACK_KERNEL, NULL, 0), 0);
	assert_int_equal(id, STACKRES_NONE);
	assert_int_equal(stackres__count(fx->r), 0);
	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(build__locations(p, fx->r, STACKRES_NONE, locs, 4, &n), 0);
	assert_int_equal(build__locations(p, fx->r, 12345, locs, 4, &n), 0);
	assert_int_equal(n, 0);
	profile__free(p);
}

static void test_stackres__exec_starts_new_stacks(void **state)
{
	struct fixture *fx = *state;
	uint64_t ips[] = {0x401000, 0x402000};
	uint64_t kips[] = {0xffffffff81001020};
	int32_t before, after, again, kbefore, kafter;

	assert_int_equal(stackres__intern(fx->r, &before, 100, STACK_USER_RET, ips, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &kbefore, 100, STACK_KERNEL, kips, 1), 0);
	assert_int_equal(stackres__exec(fx->r, 100), 0);
	/* Same addresses in the new image: other code, symbolized again. */
	assert_int_equal(stackres__intern(fx->r, &after, 100, STACK_USER_RET, ips, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &again, 100, STACK_USER_RET, ips, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &kafter, 100, STACK_KERNEL, kips, 1), 0);
	assert_int_not_equal(after, before);
	assert_int_equal(again, after);
	assert_int_equal(kafter, kbefore);
}

static void test_stackres__many_distinct_stacks_keep_their_ids(void **state)
{
	struct fixture *fx = *state;
	enum { N = 20000 };
	uint64_t ips[4] = {0x401000, 0, 0x403000, 0x404000};
	int32_t *ids = calloc(N, sizeof(*ids)), id;

	assert_non_null(ids);
	for (unsigned i = 0; i < N; i++) {
		ips[1] = 0x500000 + i * 8;
		assert_int_equal(stackres__intern(fx->r, &ids[i], 100, STACK_USER_RET, ips, 4), 0);
		assert_int_equal(ids[i], (int32_t)i);
	}
	assert_int_equal(stackres__count(fx->r), N);
	for (unsigned i = 0; i < N; i++) {
		ips[1] = 0x500000 + i * 8;
		assert_int_equal(stackres__intern(fx->r, &id, 100, STACK_USER_RET, ips, 4), 0);
		assert_int_equal(id, ids[i]);
	}
	assert_int_equal(stackres__count(fx->r), N);
	free(ids);
}

/* Continuous mode: a gone process's user stacks are freed, their ids reused, the rest kept. */
static void test_stackres__forgotten_pid_frees_and_reuses_ids(void **state)
{
	struct fixture *fx = *state;
	const uint64_t a[] = {0x401000, 0x402000}, b[] = {0x403000}, k[] = {0xffffffff81001010};
	int32_t ida, idb, idk, idc, again;
	unsigned n, count;

	assert_int_equal(stackres__intern(fx->r, &ida, 10, STACK_USER, a, 2), 0);
	assert_int_equal(stackres__intern(fx->r, &idb, 11, STACK_USER, b, 1), 0);
	assert_int_equal(stackres__intern(fx->r, &idk, 10, STACK_KERNEL, k, 1), 0);
	count = stackres__count(fx->r);
	stackres__forget_pid(fx->r, 10);
	assert_null(stackres__frames(fx->r, ida, &n));
	assert_int_equal(n, 0);
	assert_non_null(stackres__frames(fx->r, idb, &n));
	assert_int_equal(n, 1);
	assert_non_null(stackres__frames(fx->r, idk, &n)); /* kernel stacks are shared */
	/* A new stack takes the freed id; the same frames of pid 10 again are a new stack. */
	assert_int_equal(stackres__intern(fx->r, &idc, 12, STACK_USER, b, 1), 0);
	assert_int_equal(idc, ida);
	assert_int_equal(stackres__count(fx->r), count);
	assert_int_equal(stackres__intern(fx->r, &again, 10, STACK_USER, a, 2), 0);
	assert_int_not_equal(again, idc);
	assert_non_null(stackres__frames(fx->r, again, &n));
	assert_int_equal(n, 2);
}

/* The cost of a 3-word stack and of the 1-word [stacks capped] one (stackres.c's stack_cost). */
#define COST3 (3 * sizeof(struct stackres_frame) + 128)
#define COST1 (1 * sizeof(struct stackres_frame) + 128)

/*
 * The caps on allocation stacks held: a process past its own cap has its new stacks' events
 * under its one [stacks capped] stack (counted each time), its stacks kept before are found as
 * before, another process keeps its room until the total is reached, and a process forgotten
 * gives its room back.  Sample stacks (user and kernel) are neither charged nor capped.
 */
static void test_stackres__stacks_capped_per_process_and_in_all(void **state)
{
	struct fixture *fx = *state;
	const uint64_t s1[] = {0x401000, 0x402000, 0x403000}, s2[] = {0x401000, 0x402000, 0x404000},
		       s3[] = {0x401000, 0x402000, 0x405000}, k[] = {0xffffffff81001010};
	const uint64_t capped = prof_stack_cut_word(0, 0) | PROF_STACK_CUT_CAPPED;
	int32_t a1, a2, a3, a3again, again, b1, b2, b2later, sample, kid;
	const struct stackres_frame *f;
	unsigned n;

	/* A: room for two stacks and its capped one; in all, one stack of B's and its capped one
	 * after that (a capped stack is kept past the caps: one per process). */
	stackres__set_caps(fx->r, 2 * COST3 + COST1, 3 * COST3 + 2 * COST1);
	assert_int_equal(stackres__intern(fx->r, &a1, 10, STACK_USER_RET, s1, 3), 0);
	assert_int_equal(stackres__intern(fx->r, &a2, 10, STACK_USER_RET, s2, 3), 0);
	assert_int_equal(stackres__capped(fx->r, false), 0);
	assert_int_equal(stackres__intern(fx->r, &a3, 10, STACK_USER_RET, s3, 3), 0);
	assert_int_equal(stackres__capped(fx->r, false), 1);
	assert_int_not_equal(a3, a1);
	assert_int_not_equal(a3, a2);
	f = stackres__frames(fx->r, a3, &n);
	assert_int_equal(n, 1);
	assert_true(prof_stack_is_cut(f[0].addr));
	assert_string_equal(f[0].sym.name, PROF_STACK_CAPPED_NAME);
	/* Again: the same capped stack, counted again; A's kept stacks found as before. */
	assert_int_equal(stackres__intern(fx->r, &a3again, 10, STACK_USER_RET, s3, 3), 0);
	assert_int_equal(a3again, a3);
	assert_int_equal(stackres__intern(fx->r, &again, 10, STACK_USER_RET, s1, 3), 0);
	assert_int_equal(again, a1);
	assert_int_equal(stackres__capped(fx->r, false), 2);
	/* A's samples are not capped, user or kernel. */
	assert_int_equal(stackres__intern(fx->r, &sample, 10, STACK_USER, s3, 3), 0);
	assert_int_equal(stackres__frames(fx->r, sample, &n)[2].addr, 0x405000);
	assert_int_equal(stackres__intern(fx->r, &kid, 10, STACK_KERNEL, k, 1), 0);
	assert_int_equal(stackres__frames(fx->r, kid, &n)[0].addr, k[0]);
	/* B has its own room: one stack, then the total is reached. */
	assert_int_equal(stackres__intern(fx->r, &b1, 11, STACK_USER_RET, s1, 3), 0);
	assert_int_equal(stackres__frames(fx->r, b1, &n)[2].addr, 0x403000);
	assert_int_equal(stackres__intern(fx->r, &b2, 11, STACK_USER_RET, s2, 3), 0);
	assert_int_equal(stackres__frames(fx->r, b2, &n)[0].addr, capped);
	assert_int_not_equal(b2, a3); /* each process its own */
	assert_int_equal(stackres__capped(fx->r, true), 3);
	assert_int_equal(stackres__capped(fx->r, false), 0);
	/* A forgotten: its room is back for B. */
	stackres__forget_pid(fx->r, 10);
	assert_int_equal(stackres__intern(fx->r, &b2later, 11, STACK_USER_RET, s2, 3), 0);
	assert_int_equal(stackres__frames(fx->r, b2later, &n)[2].addr, 0x404000);
	assert_int_equal(stackres__capped(fx->r, false), 0);
}

/* Functions of this binary the worker tests resolve in our own process. */
__attribute__((noinline)) void stackres_test_first(void);
__attribute__((noinline)) void stackres_test_second(void);
__attribute__((noinline)) void stackres_test_first(void)
{
	__asm__ volatile("nop; nop; nop; nop");
}
__attribute__((noinline)) void stackres_test_second(void)
{
	__asm__ volatile("nop; nop; nop; nop");
}

/* A stackres over the real /proc (our own process) and the fixture's kallsyms. */
static void live(struct fixture *fx, struct symbolizer **sym, struct stackres **r, bool worker)
{
	struct symbolizer_opts opts = {.debug_dir = "", .kallsyms = fx->kallsyms};

	assert_int_equal(symbolizer__new(sym, &opts), 0);
	assert_int_equal(stackres__new(r, *sym), 0);
	if (worker)
		assert_int_equal(stackres__start_worker(*r), 0);
}

static const char *frame_name(struct stackres *r, int32_t id, unsigned i)
{
	unsigned n;
	const struct stackres_frame *f = stackres__frames(r, id, &n);

	assert_true(i < n);
	return f[i].sym.name;
}

/* The worker symbolizes what the caller's thread would, user and kernel frames alike. */
static void test_stackres__worker_symbolizes_like_the_caller(void **state)
{
	struct fixture *fx = *state;
	uint64_t ips[] = {(uint64_t)(uintptr_t)stackres_test_first + 1,
			  (uint64_t)(uintptr_t)stackres_test_second + 2};
	uint64_t kips[] = {0xffffffff81002010, 0xffffffff81001020};
	uint32_t pid = (uint32_t)getpid();
	struct symbolizer *s[2];
	struct stackres *r[2];
	int32_t u[2], k[2];

	for (int i = 0; i < 2; i++) {
		live(fx, &s[i], &r[i], i == 1);
		assert_int_equal(stackres__load_pid(r[i], pid, NULL), 0);
		assert_int_equal(stackres__intern(r[i], &u[i], pid, STACK_USER, ips, 2), 0);
		assert_int_equal(stackres__intern(r[i], &k[i], pid, STACK_KERNEL, kips, 2), 0);
		assert_int_equal(stackres__sync(r[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		assert_string_equal(frame_name(r[i], u[i], 0), "stackres_test_first");
		assert_string_equal(frame_name(r[i], u[i], 1), "stackres_test_second");
		assert_string_equal(frame_name(r[i], k[i], 0), "vfs_read");
		assert_string_equal(frame_name(r[i], k[i], 1), "do_sys_open");
		stackres__free(r[i]);
		symbolizer__free(s[i]);
	}
}

struct after_check {
	struct stackres *r;
	int32_t first, last;
	unsigned named, calls;
};

/* On the worker: every stack queued before us is symbolized already. */
static void after_check(void *ctx, uint64_t arg)
{
	struct after_check *a = ctx;

	a->calls++;
	assert_int_equal(arg, 42);
	for (int32_t id = a->first; id <= a->last; id++) {
		unsigned n;
		const struct stackres_frame *f = stackres__frames(a->r, id, &n);

		a->named += n == 1 && f[0].sym.name && !strcmp(f[0].sym.name, "do_sys_open");
	}
}

/* Work runs in the order asked: a callback queued after N stacks sees all N symbolized, and
 * freeing the stackres runs what is still queued rather than dropping it (held processes are
 * resumed that way). */
static void test_stackres__worker_runs_work_in_order(void **state)
{
	struct fixture *fx = *state;
	enum { N = 500 };
	uint32_t pid = (uint32_t)getpid();
	struct after_check a = {0}, late = {0};
	struct symbolizer *s;
	struct stackres *r;

	live(fx, &s, &r, true);
	a.r = r;
	for (unsigned i = 0; i < N; i++) {
		/* N distinct kernel stacks inside one function: N stacks, one name. */
		uint64_t ips[] = {0xffffffff81001000 + i};
		int32_t id;

		assert_int_equal(stackres__intern(r, &id, pid, STACK_KERNEL, ips, 1), 0);
		if (i == 0)
			a.first = id;
		a.last = id;
	}
	assert_int_equal(stackres__after(r, after_check, &a, 42), 0);
	assert_int_equal(stackres__sync(r), 0);
	assert_int_equal(a.calls, 1);
	assert_int_equal(a.last - a.first + 1, N);
	assert_int_equal(a.named, N);
	/* Queued, not waited for: stackres__free still runs it. */
	late.r = r;
	late.first = a.first;
	late.last = a.first;
	assert_int_equal(stackres__after(r, after_check, &late, 42), 0);
	stackres__free(r);
	assert_int_equal(late.calls, 1);
	assert_int_equal(late.named, 1);
	symbolizer__free(s);
}

/* Every pointer the frames hold from the symbolizer, once each: what a sweep must keep. */
static void test_stackres__used_lists_every_frame_pointer(void **state)
{
	struct fixture *fx = *state;
	uint64_t kips[] = {0xffffffff81002010, 0xffffffff81001020, 0xffffffff81002020};
	uint64_t uips[] = {0x401000, 0x402000};
	const struct stackres_frame *f;
	struct hashmap *used = NULL;
	int32_t kid, uid;
	unsigned n;

	assert_int_equal(stackres__intern(fx->r, &kid, 100, STACK_KERNEL, kips, 3), 0);
	/* No such process: frames without a mapping or a name add nothing. */
	assert_int_equal(stackres__intern(fx->r, &uid, 100, STACK_USER_RET, uips, 2), 0);
	assert_int_equal(hashmap__new(&used, sizeof(const void *), 0), 0);
	assert_int_equal(stackres__used(fx->r, used), 0);
	f = stackres__frames(fx->r, kid, &n);
	assert_int_equal(n, 3);
	assert_string_equal(f[0].sym.name, "vfs_read");
	assert_string_equal(f[1].sym.name, "do_sys_open");
	/* The kernel mapping, "vfs_read" and "do_sys_open" (name and system_name are one). */
	assert_int_equal(hashmap__count(used), 3);
	for (unsigned i = 0; i < n; i++) {
		assert_non_null(hashmap__find(used, &f[i].sym.map));
		assert_non_null(hashmap__find(used, &f[i].sym.name));
		assert_non_null(hashmap__find(used, &f[i].sym.system_name));
	}
	assert_int_equal(symbolizer__sweep(fx->sym, used), 0);
	assert_string_equal(f[2].sym.name, "vfs_read");
	hashmap__free(used);
}

/*
 * A Python process as a fake maps file shows it (pyenv's layout): the executable, libpython in
 * two executable mappings of one file, an extension module, libc.  The pid is above any kernel's
 * pid_max: code objects are unreadable there, so Python frames are named "[python]".
 */
#define PY_PID	   4194305u
#define PY_EXE	   0x400100ULL	     /* main */
#define PY_LIB	   0x7f0000000000ULL /* libpython's first mapping */
#define PY_LIB2	   0x7f0000200000ULL /* its second: the same file (inode 200) */
#define PY_EXT	   0x7f1000000000ULL /* _ctypes.cpython-312-x86_64-linux-gnu.so */
#define PY_LIBC	   0x7f2000000000ULL
#define PY_OTHER   0x7f3000000000ULL /* libpython's path, another device: another file */
#define PY_EVAL	   (PY_LIB + 0x1000) /* _PyEval_EvalFrameDefault */
#define PY_FRAME_A (PROF_PY_FRAME_TAG | 3ULL << PROF_PY_INSTR_SHIFT | 0x5000) /* prof_py_frame */
#define PY_FRAME_B (PROF_PY_FRAME_TAG | 9ULL << PROF_PY_INSTR_SHIFT | 0x6000)
#define PY_PRINT   (PROF_PY_PRINT_TAG | 0x1234) /* a fingerprint word */

static const char py_maps[] =
	"00400000-00401000 r-xp 00000000 08:01 100 /opt/py/bin/python3.12\n"
	"7f0000000000-7f0000100000 r-xp 00000000 08:01 200 /opt/py/lib/libpython3.12.so.1.0\n"
	"7f0000200000-7f0000210000 r-xp 00300000 08:01 200 /opt/py/lib/libpython3.12.so.1.0\n"
	"7f1000000000-7f1000010000 r-xp 00000000 08:01 300 /opt/py/lib/_ctypes.so\n"
	"7f2000000000-7f2000100000 r-xp 00000000 08:01 400 /usr/lib/libc.so.6\n"
	"7f3000000000-7f3000010000 r-xp 00000000 08:02 200 /opt/py/lib/libpython3.12.so.1.0\n";

/* Leaf first: a C extension between two Python frames, libpython around and between them. */
static const uint64_t py_stack[] = {
	PY_LIBC + 0x100,  /* memcpy: below the innermost Python frame, stays */
	PY_LIB + 0x2000,  /* the C code of frame A's line (a builtin): stays */
	PY_FRAME_A,	  /* Python */
	PY_PRINT,	  /* its fingerprint */
	PY_LIB + 0x3000,  /* the interpreter's call path: left out */
	PY_LIB2 + 0x100,  /* the same file's other mapping: left out */
	PY_EXT + 0x100,	  /* the extension: stays */
	PY_LIBC + 0x200,  /* qsort: stays */
	PY_LIB + 0x4000,  /* left out */
	0x10,		  /* in no mapping: stays (not known to be the interpreter's) */
	PY_OTHER + 0x100, /* another file of libpython's name: stays */
	PY_FRAME_B,	  /* Python */
	PY_PRINT,	  /* its fingerprint */
	PY_LIB + 0x5000,  /* Py_RunMain: above the outermost Python frame, stays */
	PY_EXE,		  /* main: stays */
	PY_LIBC + 0x300,  /* __libc_start_main: stays */
};
#define PY_NFRAMES (sizeof(py_stack) / sizeof(py_stack[0]))

/* The fixture made again. */
static struct fixture *fresh(void **state)
{
	teardown(state);
	assert_int_equal(setup(state), 0);
	return *state;
}

/* PY_PID runs CPython minor (3.minor's layout), _PyEval_EvalFrameDefault at PY_EVAL. */
static void py_set(struct fixture *fx, unsigned minor)
{
	const struct py_version *v = py_version__find(3, minor);
	struct prof_py_proc py = {
		.runtime = 0x1000, .code_type = 0x2000, .version = 0x0300 | minor};

	assert_non_null(v);
	py.eval_lo = PY_EVAL;
	py.eval_hi = PY_EVAL + 0x800;
	py.o = v->bpf;
	assert_int_equal(stackres__python(fx->r, PY_PID, v, &py), 0);
}

/* A stackres on the fixture's symbolizer knowing PY_PID's mappings and (python) its CPython. */
static void py_setup(struct fixture *fx, bool worker, enum stackres_py_frames how, bool python)
{
	FILE *f = fmemopen((void *)py_maps, sizeof(py_maps) - 1, "r");
	struct maps *m = NULL;

	assert_non_null(f);
	assert_int_equal(maps__parse(&m, f), 0);
	fclose(f);
	stackres__set_python_frames(fx->r, how);
	if (worker)
		assert_int_equal(stackres__start_worker(fx->r), 0);
	assert_int_equal(stackres__load_pid(fx->r, PY_PID, m), 0);
	maps__free(m);
	if (python)
		py_set(fx, 12);
}

/* The addresses stackres__frames shows of stack id. */
static unsigned shown(struct stackres *r, int32_t id, uint64_t *out)
{
	unsigned n;
	const struct stackres_frame *f = stackres__frames(r, id, &n);

	for (unsigned i = 0; i < n; i++)
		out[i] = f[i].addr;
	return n;
}

/*
 * The default: the interpreter's frames between the innermost and the outermost Python frame
 * are left out, by file (both of libpython's mappings); the rest stays in order.  The profile
 * built from the stack has those frames and no others: every output takes the same view.  The
 * same on the worker's thread.
 */
static void test_stackres__python_frames_fold_the_interpreter(void **state)
{
	struct fixture *fx = *state;
	const uint64_t want[] = {
		PY_LIBC + 0x100,
		PY_LIB + 0x2000,
		PY_FRAME_A,
		PY_PRINT,
		PY_EXT + 0x100,
		PY_LIBC + 0x200,
		0x10,
		PY_OTHER + 0x100,
		PY_FRAME_B,
		PY_PRINT,
		PY_LIB + 0x5000,
		PY_EXE,
		PY_LIBC + 0x300,
	};
	uint64_t got[PY_NFRAMES];
	uint32_t locs[PY_NFRAMES], nl = 0;
	struct profile *p;
	char buf[64];
	int32_t id;
	unsigned n;

	for (int worker = 0; worker < 2; worker++) {
		if (worker)
			fx = fresh(state);
		py_setup(fx, worker, STACKRES_PY_PYTHON, true);
		assert_int_equal(
			stackres__intern(fx->r, &id, PY_PID, STACK_USER, py_stack, PY_NFRAMES), 0);
		assert_int_equal(stackres__sync(fx->r), 0);
		n = shown(fx->r, id, got);
		assert_int_equal(n, sizeof(want) / sizeof(want[0]));
		assert_memory_equal(got, want, sizeof(want));
		/* The profile's locations: the view without the fingerprints. */
		assert_int_equal(profile__new(&p, "cpu"), 0);
		assert_int_equal(build__locations(p, fx->r, id, locs, PY_NFRAMES, &nl), 0);
		assert_int_equal(nl, n - 2);
		assert_string_equal(profile__location_name(p, locs[2], buf, sizeof(buf)),
				    "[python]");
		assert_string_equal(profile__location_name(p, locs[7], buf, sizeof(buf)),
				    "[python]");
		profile__free(p);
		nl = 0;
	}
}

/* --python-frames all: every frame as walked. */
static void test_stackres__python_frames_all_keeps_every_frame(void **state)
{
	struct fixture *fx = *state;
	uint64_t got[PY_NFRAMES];
	int32_t id;

	py_setup(fx, false, STACKRES_PY_ALL, true);
	assert_int_equal(stackres__intern(fx->r, &id, PY_PID, STACK_USER, py_stack, PY_NFRAMES), 0);
	assert_int_equal(shown(fx->r, id, got), PY_NFRAMES);
	assert_memory_equal(got, py_stack, sizeof(py_stack));
}

/*
 * Untouched: a stack without Python frames (libpython's frames and all), one whose only
 * Python frame has nothing between it and itself, and a process whose CPython is not known.
 */
static void test_stackres__python_frames_fold_only_between_python_frames(void **state)
{
	struct fixture *fx = *state;
	const uint64_t native[] = {PY_LIBC + 0x100, PY_LIB + 0x2000, PY_LIB + 0x3000, PY_EXE};
	const uint64_t one[] = {PY_LIB + 0x2000, PY_FRAME_A, PY_PRINT, PY_LIB + 0x3000, PY_EXE};
	uint64_t got[PY_NFRAMES];
	int32_t id;

	py_setup(fx, false, STACKRES_PY_PYTHON, true);
	assert_int_equal(stackres__intern(fx->r, &id, PY_PID, STACK_USER, native, 4), 0);
	assert_int_equal(shown(fx->r, id, got), 4);
	assert_memory_equal(got, native, sizeof(native));
	assert_int_equal(stackres__intern(fx->r, &id, PY_PID, STACK_USER, one, 5), 0);
	assert_int_equal(shown(fx->r, id, got), 5);
	assert_memory_equal(got, one, sizeof(one));
	/* No CPython known (or no more): nothing is the interpreter's. */
	assert_int_equal(stackres__python(fx->r, PY_PID, NULL, NULL), 0);
	assert_int_equal(stackres__intern(fx->r, &id, PY_PID, STACK_USER, py_stack, PY_NFRAMES), 0);
	assert_int_equal(shown(fx->r, id, got), PY_NFRAMES);
	assert_memory_equal(got, py_stack, sizeof(py_stack));
}

/*
 * A sample that stopped the leaf _PyEval_EvalFrameDefault as it linked its first frame or after
 * it unlinked its last: the walk gave each invocation its caller's frames and left the outermost
 * eval frame native (the shape one run in three showed under e2e's py_callback.py).
 */
#define PY_FRAME_NEW (PROF_PY_FRAME_TAG | 0x7000) /* instruction 0: a call starting */
#define PY_LEFT	     (PY_EVAL + 0x400)		  /* the eval frame left native */

/* shown(id) is want[0..n) */
static void expect_shown(struct fixture *fx, const uint64_t *stack, unsigned n,
			 const uint64_t *want, unsigned nwant)
{
	uint64_t got[32];
	int32_t id;

	assert_int_equal(stackres__intern(fx->r, &id, PY_PID, STACK_USER, stack, n), 0);
	assert_int_equal(stackres__sync(fx->r), 0);
	assert_int_equal(shown(fx->r, id, got), nwant);
	assert_memory_equal(got, want, nwant * sizeof(*want));
}

#define N(a) (unsigned)(sizeof(a) / sizeof((a)[0]))

/* Leaf first: a callback starting under a C extension called from main, main and <module> run
 * by one invocation (3.11+). */
static const uint64_t py_starting[] = {
	PY_FRAME_NEW,	 PY_PRINT, /* the callback, not marked as its call's first yet */
	PY_FRAME_A,	 PY_PRINT, PY_FRAME_B, PY_PRINT, /* main, <module>: the invocation below */
	PY_LIB + 0x3000,				 /* _PyFunction_Vectorcall */
	PY_EXT + 0x100,					 /* the extension */
	PY_LIBC + 0x200,				 /* qsort */
	PY_LEFT,					 /* the invocation of main and <module> */
	PY_LIB + 0x5000,				 /* PyEval_EvalCode */
	PY_EXE,
};

/* 3.11+, its first frame not started: the leaf keeps it; the rest replaces the native frame. */
static void test_stackres__python_call_starting_realigned(void **state)
{
	struct fixture *fx = *state;
	const uint64_t all[] = {PY_FRAME_NEW,	 PY_PRINT,	  PY_LIB + 0x3000, PY_EXT + 0x100,
				PY_LIBC + 0x200, PY_FRAME_A,	  PY_PRINT,	   PY_FRAME_B,
				PY_PRINT,	 PY_LIB + 0x5000, PY_EXE};
	const uint64_t python[] = {PY_FRAME_NEW,    PY_PRINT, PY_EXT + 0x100, PY_LIBC + 0x200,
				   PY_FRAME_A,	    PY_PRINT, PY_FRAME_B,     PY_PRINT,
				   PY_LIB + 0x5000, PY_EXE};

	for (unsigned minor = 11; minor <= 13; minor++) {
		py_setup(fx, false, STACKRES_PY_ALL, false);
		py_set(fx, minor);
		expect_shown(fx, py_starting, N(py_starting), all, N(all));
		fx = fresh(state);
		py_setup(fx, true, STACKRES_PY_PYTHON, false);
		py_set(fx, minor);
		expect_shown(fx, py_starting, N(py_starting), python, N(python));
		fx = fresh(state);
	}
}

/*
 * 3.8–3.10 (the frame object made current inside the call), and any version at a return: the
 * leaf invocation has no frame; the native eval frame is shown there, the frames go down one.
 */
static void test_stackres__python_no_frame_linked_realigned(void **state)
{
	struct fixture *fx = *state;
	const uint64_t leaf_caller[] = {
		PY_FRAME_A,	 PY_PRINT, /* main: the caller's frame, still current */
		PY_LIB + 0x3000, PY_EXT + 0x100,  PY_LIBC + 0x200,
		PY_FRAME_B,	 PY_PRINT, /* <module>: main's invocation got it */
		PY_LEFT,	 PY_LIB + 0x5000, PY_EXE,
	};
	const uint64_t want[] = {PY_LEFT,	  PY_LIB + 0x3000, PY_EXT + 0x100, PY_LIBC + 0x200,
				 PY_FRAME_A,	  PY_PRINT,	   PY_FRAME_B,	   PY_PRINT,
				 PY_LIB + 0x5000, PY_EXE};
	const unsigned minors[] = {8, 10, 11, 12};

	for (unsigned k = 0; k < N(minors); k++) {
		py_setup(fx, false, STACKRES_PY_ALL, false);
		py_set(fx, minors[k]);
		expect_shown(fx, leaf_caller, N(leaf_caller), want, N(want));
		fx = fresh(state);
	}
	/* A function the eval frame called at its edge (3.8/3.9's _Py_CheckFunctionResult after
	 * the frame is unlinked) stays the leaf. */
	py_setup(fx, false, STACKRES_PY_ALL, false);
	py_set(fx, 9);
	{
		const uint64_t s1[] = {PY_LIB + 0x2000, PY_FRAME_A, PY_PRINT,
				       PY_LIB + 0x3000, PY_LEFT,    PY_EXE};
		const uint64_t w1[] = {PY_LIB + 0x2000, PY_LEFT,  PY_LIB + 0x3000,
				       PY_FRAME_A,	PY_PRINT, PY_EXE};

		expect_shown(fx, s1, N(s1), w1, N(w1));
	}
	fx = fresh(state);
	/* 3.10: a frame at instruction 0 is no different (one frame per invocation). */
	py_setup(fx, false, STACKRES_PY_ALL, false);
	py_set(fx, 10);
	{
		uint64_t s2[N(leaf_caller)], w2[N(want)];

		memcpy(s2, leaf_caller, sizeof(s2));
		memcpy(w2, want, sizeof(w2));
		s2[0] = w2[4] = PY_FRAME_NEW;
		expect_shown(fx, s2, N(s2), w2, N(w2));
	}
}

/* Left as walked: stacks of other shapes. */
static void test_stackres__python_other_shapes_not_realigned(void **state)
{
	struct fixture *fx = *state;
	/* two eval frames left native */
	const uint64_t two_left[] = {PY_FRAME_A, PY_PRINT,    PY_LIB + 0x3000,
				     PY_LEFT,	 PY_LEFT + 8, PY_EXE};
	/* the native eval frame above a Python frame */
	const uint64_t above[] = {PY_FRAME_A, PY_PRINT, PY_LEFT, PY_FRAME_B, PY_PRINT, PY_EXE};
	/* 3.11+, a call starting but nothing of a lower invocation with it */
	const uint64_t alone[] = {PY_FRAME_NEW, PY_PRINT, PY_LIB + 0x3000, PY_LEFT, PY_EXE};
	/* no eval frame left */
	const uint64_t none[] = {PY_FRAME_NEW, PY_PRINT, PY_FRAME_A, PY_PRINT, PY_EXE};
	const struct {
		const uint64_t *s;
		unsigned n;
	} cases[] = {
		{two_left, N(two_left)}, {above, N(above)}, {alone, N(alone)}, {none, N(none)}};

	py_setup(fx, false, STACKRES_PY_ALL, false);
	py_set(fx, 11);
	for (unsigned k = 0; k < N(cases); k++)
		expect_shown(fx, cases[k].s, cases[k].n, cases[k].s, cases[k].n);
	/* No CPython known: nothing is an eval frame. */
	assert_int_equal(stackres__python(fx->r, PY_PID, NULL, NULL), 0);
	expect_shown(fx, py_starting, N(py_starting), py_starting, N(py_starting));
}

/* The cut word is none of the words a stack holds otherwise, and says what it was given. */
static void test_stackres__cut_word_encoding(void **state)
{
	const uint64_t others[] = {
		0x401000,
		0x7ffffffff000,
		0xffffffff81001000,
		0xffff888100000000,
		prof_py_frame(0x7f0000001000, 12),
		prof_py_fingerprint(3, 0x7f0000002000, 0x7f0000003000),
		PROF_PY_PRINT_TAG | ((1ULL << 62) - 1),
	};
	uint64_t w;

	(void)state;
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		assert_false(prof_stack_is_cut(others[i]));
	w = prof_stack_cut_word(482, 0);
	assert_true(prof_stack_is_cut(w));
	assert_false(prof_py_is_frame(w));
	assert_false(prof_py_is_print(w));
	assert_int_equal(prof_stack_cut_frames(w), 482);
	assert_false(prof_stack_cut_bounded(w));
	w = prof_stack_cut_word(UINT32_MAX, 1);
	assert_true(prof_stack_is_cut(w));
	assert_int_equal(prof_stack_cut_frames(w), UINT32_MAX);
	assert_true(prof_stack_cut_bounded(w));
}

/* Leaf side, cut word and root side fill a cap exactly, in frames and in words. */
static void test_stackres__cut_sides_fill_the_cap(void **state)
{
	const struct prof_stack_cap caps[] = {{PROF_MAX_FRAMES, PROF_STACK_WORDS}, {255, 255}};

	(void)state;
	assert_true(PROF_MAX_FRAMES >= 1024);
	assert_int_equal(PROF_STACK_WORDS, 2 * PROF_MAX_FRAMES);
	assert_true(PROF_WALK_WORDS > PROF_STACK_WORDS);
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct prof_stack_cap c = caps[i];

		assert_int_equal(prof_stack_leaf_frames(c) + 1 + prof_stack_root_frames(c),
				 c.frames);
		assert_int_equal(prof_stack_leaf_words(c) + 1 + prof_stack_root_words(c), c.words);
		assert_true(prof_stack_leaf_frames(c) > prof_stack_root_frames(c));
	}
	assert_int_equal(prof_stack_leaf_frames(caps[0]), 768);
	assert_int_equal(prof_stack_root_frames(caps[0]), 255);
}

/* The cut word becomes a frame "[N frames cut]" without an address ("[N+ frames cut]" when the
 * walk stopped before the root, "[frames cut]" for an unknown count), between the frames around
 * it. */
static void test_stackres__cut_word_is_a_named_frame(void **state)
{
	struct fixture *fx = *state;
	uint64_t ips[] = {0x401000, prof_stack_cut_word(482, 0), 0x402000,
			  prof_stack_cut_word(7, 1), prof_stack_cut_word(0, 1)};
	const struct stackres_frame *f;
	uint32_t locs[8], n = 0;
	struct profile *p;
	int32_t id;
	unsigned nf;
	char buf[64];

	assert_int_equal(stackres__intern(fx->r, &id, 100, STACK_USER_RET, ips, 5), 0);
	f = stackres__frames(fx->r, id, &nf);
	assert_int_equal(nf, 5);
	assert_string_equal(f[1].sym.name, "[482 frames cut]");
	assert_null(f[1].sym.map);
	assert_string_equal(f[3].sym.name, "[7+ frames cut]");
	assert_string_equal(f[4].sym.name, "[frames cut]");
	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(build__locations(p, fx->r, id, locs, 8, &n), 0);
	assert_int_equal(n, 5);
	assert_string_equal(profile__location_name(p, locs[1], buf, sizeof(buf)),
			    "[482 frames cut]");
	assert_int_equal(p->locations[locs[1] - 1].address, 0);
	/* its own kind (not an interpreter's frame: svg's colour, dump's "kind") */
	assert_int_equal(profile__location_kind(p, locs[1]), PROFILE_FRAME_CUT);
	assert_int_equal(profile__location_kind(p, locs[4]), PROFILE_FRAME_CUT);
	assert_int_equal(profile__location_kind(p, locs[0]), PROFILE_FRAME_NATIVE);
	assert_int_equal(p->locations[locs[0] - 1].address, 0x401000);
	profile__free(p);
}

/* A user stack as large as a record carries (every frame a Python one) is kept whole. */
static void test_stackres__largest_stack_kept_whole(void **state)
{
	struct fixture *fx = *state;
	static uint64_t ips[PROF_STACK_WORDS];
	unsigned n;
	int32_t id;

	for (unsigned i = 0; i < PROF_STACK_WORDS; i++)
		ips[i] = 0x401000 + 16 * i;
	assert_int_equal(stackres__intern(fx->r, &id, 100, STACK_USER_RET, ips, PROF_STACK_WORDS),
			 0);
	stackres__frames(fx->r, id, &n);
	assert_int_equal(n, PROF_STACK_WORDS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stackres__same_frames_same_id, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stackres__user_stacks_differ_per_pid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stackres__kernel_stacks_shared_across_pids,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__no_frames_no_stack, setup, teardown),
		cmocka_unit_test(test_stackres__cut_word_encoding),
		cmocka_unit_test(test_stackres__cut_sides_fill_the_cap),
		cmocka_unit_test_setup_teardown(test_stackres__cut_word_is_a_named_frame, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stackres__largest_stack_kept_whole, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stackres__used_lists_every_frame_pointer,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__forgotten_pid_frees_and_reuses_ids,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__exec_starts_new_stacks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stackres__stacks_capped_per_process_and_in_all,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__many_distinct_stacks_keep_their_ids,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__worker_symbolizes_like_the_caller,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__worker_runs_work_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stackres__python_frames_fold_the_interpreter,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__python_frames_all_keeps_every_frame,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_stackres__python_frames_fold_only_between_python_frames, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_stackres__python_call_starting_realigned,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__python_no_frame_linked_realigned,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stackres__python_other_shapes_not_realigned,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
