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
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <bpf/libbpf.h>

/* Instructions the verifier may process for one program (of its 1,000,000). */
#define PROF_VERIFY_BUDGET 400000
#define LOG_BYTES	   4096

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

/* The verifier's count for each program that loads by default ("processed N insns"). */
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

			if (!bpf_program__autoload(prog))
				continue;
			assert_non_null(s);
			assert_int_equal(sscanf(s, "processed %ld insns", &insns), 1);
			print_message("%s %s: %ld\n", objects[i], bpf_program__name(prog), insns);
			assert_true(insns > 0 && insns <= PROF_VERIFY_BUDGET);
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
