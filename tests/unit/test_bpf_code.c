// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The compiled BPF objects themselves (build/<object>.bpf.o, disassembled by llvm-objdump): clang
 * builds a __u64 read at a variable offset of a __u8 array out of eight byte loads, seven
 * shifts and seven ors.  In the stack walker that was most of a frame's step (docs/
 * benchmarks.md, session 43): its windows and buffers are words now, and no function of ours
 * may assemble a word a byte at a time again (a left shift by 8 is the mark: nothing of ours
 * shifts by 8 for any other reason).
 *
 * And what the kernel's verifier makes of them: each program loaded (as root) with the
 * verifier's statistics, its instructions processed held to PROF_VERIFY_BUDGET.  A walk
 * cache whose state outlived the walk once doubled the heap return program's (212,449 ->
 * 566,295: --heap took 0.4 s longer to start); the limit is 1,000,000, past which the object
 * does not load at all.
 *
 * And the stack all of a program's calls share: 512 bytes from the program down its deepest
 * chain of calls (bpf-to-bpf calls, global functions and the callbacks of bpf_loop alike), each
 * frame rounded up to 16 bytes as the kernel does.  A kernel that gives a probe's program a
 * private stack (6.13+, where it does) checks less; one that does not refuses the program
 * ("combined stack size of 3 calls is 720"), as 6.18.44-fc-v1045 refused the heap return
 * program that v857 loaded.  Counted here from the instructions and the verifier's own stack
 * depths, whatever the kernel under the test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

/* Instructions the verifier may process for one program (of its 1,000,000). */
#define PROF_VERIFY_BUDGET 400000
#define LOG_BYTES	   4096
#define STACK_LIMIT	   512 /* MAX_BPF_STACK */
#define MAX_SUBPROGS	   64

static const char *const objects[] = {
	"build/heap.bpf.o",  "build/cpu.bpf.o",	 "build/offcpu.bpf.o",
	"build/calls.bpf.o", "build/dump.bpf.o", "build/proc.bpf.o",
};

/* Lines of obj's disassembly ending in "<<= 8", each function's count printed; -1 if the
 * disassembly could not be read. */
static int bytewise_shifts(const char *obj)
{
	char cmd[256], line[512], fn[256] = "?";
	int n = 0, in_fn = 0, insns = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "llvm-objdump -d --no-show-raw-insn %s", obj);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *lt = strchr(line, '<'), *gt = lt ? strstr(lt, ">:") : NULL;
		size_t len = strlen(line);

		/* A function's header ("0000000000000000 <name>:"), not a block label (LBB). */
		if (lt && gt && lt[1] != 'L' && (size_t)(gt - lt - 1) < sizeof(fn)) {
			if (in_fn)
				print_message("%s %s: %d\n", obj, fn, in_fn);
			memcpy(fn, lt + 1, (size_t)(gt - lt - 1));
			fn[gt - lt - 1] = 0;
			in_fn = 0;
			continue;
		}
		insns += strchr(line, '=') != NULL;
		while (len && (line[len - 1] == '\n' || line[len - 1] == ' '))
			line[--len] = 0;
		if (len > 5 && !strcmp(line + len - 5, "<<= 8")) {
			n++;
			in_fn++;
		}
	}
	if (in_fn)
		print_message("%s %s: %d\n", obj, fn, in_fn);
	if (pclose(p) != 0 || insns < 100)
		return -1; /* no llvm-objdump, or not the object we think */
	return n;
}

static void test_bpf_code__no_word_read_a_byte_at_a_time(void **state)
{
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		assert_int_equal(bytewise_shifts(objects[i]), 0);
}

struct subprogs {
	size_t start[MAX_SUBPROGS], n;
	int depth[MAX_SUBPROGS];
};

static int subprog_of(const struct subprogs *sp, size_t insn)
{
	int k = -1;

	for (size_t i = 0; i < sp->n && sp->start[i] <= insn; i++)
		k = (int)i;
	return k;
}

static void subprog_add(struct subprogs *sp, size_t start)
{
	size_t i = 0;

	while (i < sp->n && sp->start[i] < start)
		i++;
	if (i < sp->n && sp->start[i] == start)
		return;
	assert_true(sp->n < MAX_SUBPROGS);
	memmove(&sp->start[i + 1], &sp->start[i], (sp->n - i) * sizeof(sp->start[0]));
	sp->start[i] = start;
	sp->n++;
}

/* The insn a call or a callback's address at insn i names, or -1 when it is neither. */
static long call_target(const struct bpf_insn *in, size_t i)
{
	if (in[i].code == (BPF_JMP | BPF_CALL) && in[i].src_reg == BPF_PSEUDO_CALL)
		return (long)i + in[i].imm + 1;
	if (in[i].code == (BPF_LD | BPF_IMM | BPF_DW) && in[i].src_reg == BPF_PSEUDO_FUNC)
		return (long)i + in[i].imm + 1;
	return -1;
}

/* The deepest chain's bytes from subprog k down (frames rounded up to 16). */
static int chain_bytes(const struct subprogs *sp, const struct bpf_insn *in, size_t cnt, int k,
		       int level)
{
	size_t end = (size_t)k + 1 < sp->n ? sp->start[k + 1] : cnt;
	int below = 0;

	assert_true(level < 16); /* no recursion in BPF: a loop here is a parse gone wrong */
	for (size_t i = sp->start[k]; i < end; i++) {
		long t = call_target(in, i);
		int b;

		if (t < 0)
			continue;
		b = chain_bytes(sp, in, cnt, subprog_of(sp, (size_t)t), level + 1);
		if (b > below)
			below = b;
	}
	return ((sp->depth[k] + 15) & ~15) + below;
}

/* prog's combined stack: its subprogs from its instructions as loaded, their depths from the
 * verifier's statistics ("stack depth 296+8+56...").  Those are as the program runs: a bpf_loop
 * the verifier inlined added 24 bytes to its caller after the kernel's own check, so this
 * count may be above the kernel's, never below. */
static int combined_stack(const struct bpf_program *prog, const char *log)
{
	const struct bpf_insn *in = bpf_program__insns(prog);
	size_t cnt = bpf_program__insn_cnt(prog);
	struct subprogs sp = {.n = 0};
	const char *s = strstr(log, "stack depth ");
	long t;

	assert_non_null(in);
	assert_non_null(s);
	subprog_add(&sp, 0);
	for (size_t i = 0; i < cnt; i++)
		if ((t = call_target(in, i)) >= 0)
			subprog_add(&sp, (size_t)t);
	s += strlen("stack depth ");
	for (size_t k = 0; k < sp.n; k++) {
		char *end;

		sp.depth[k] = (int)strtol(s, &end, 10);
		assert_true(end != s); /* as many depths as subprogs found */
		s = *end == '+' ? end + 1 : end;
	}
	return chain_bytes(&sp, in, cnt, 0, 0);
}

/* The verifier's count for each program that loads by default ("processed N insns"), and the
 * stack its calls share. */
static void test_bpf_code__verifier_work_under_budget(void **state)
{
	static char logs[32][LOG_BYTES];

	(void)state;
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		struct bpf_object *obj = bpf_object__open_file(objects[i], NULL);
		struct bpf_program *prog;
		size_t n = 0;

		assert_non_null(obj);
		bpf_object__for_each_program(prog, obj)
		{
			assert_true(n < sizeof(logs) / sizeof(logs[0]));
			logs[n][0] = 0;
			bpf_program__set_log_level(prog, 4); /* statistics only */
			bpf_program__set_log_buf(prog, logs[n++], LOG_BYTES);
		}
		assert_int_equal(bpf_object__load(obj), 0);
		n = 0;
		bpf_object__for_each_program(prog, obj)
		{
			const char *s = strstr(logs[n++], "processed ");
			long insns = -1;
			int stack;

			if (!bpf_program__autoload(prog))
				continue;
			assert_non_null(s);
			assert_int_equal(sscanf(s, "processed %ld insns", &insns), 1);
			stack = combined_stack(prog, logs[n - 1]);
			print_message("%s %s: %ld insns, stack %d\n", objects[i],
				      bpf_program__name(prog), insns, stack);
			assert_true(insns > 0 && insns <= PROF_VERIFY_BUDGET);
			assert_true(stack > 0 && stack <= STACK_LIMIT);
		}
		bpf_object__close(obj);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bpf_code__no_word_read_a_byte_at_a_time),
		cmocka_unit_test(test_bpf_code__verifier_work_under_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
