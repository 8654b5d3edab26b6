// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The preloaded heap sampler (user/sampler/), without a profiler: the check program
 * (tests/targets/sampler_check.c) run under LD_PRELOAD with the semaphores raised as the kernel
 * raises them on attach, or left at 0; under a second allocator preloaded after ours; and the
 * built library itself (its probe sites, its TLS model, its build flags).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define SAMPLER	    "build/libbpftrace-prof-sampler.so"
#define CHECK	    "build/targets/sampler_check"
#define NOPIE_CHECK "build/targets/sampler_check_nopie"
#define NEW_CHECK   "build/targets/sampler_new"
#define INTERPOSER  "build/targets/libinterpose_alloc.so"

/*
 * Run the check program with LD_PRELOAD (space-separated paths made absolute), the sample mean
 * and the seed (NULL: unset); its stdout into out.  Returns its exit status, -1 if it died.
 */
static int run_program(char *out, size_t size, const char *prog, const char *const *preload,
		       const char *bytes, const char *seed, const char *const *args)
{
	char pre[3 * PATH_MAX] = "", abs[PATH_MAX];
	const char *argv[8] = {prog};
	int fd[2], st;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	for (int i = 0; preload[i]; i++) {
		assert_non_null(realpath(preload[i], abs));
		strcat(pre, i ? " " : "");
		strcat(pre, abs);
	}
	for (int i = 0; args[i]; i++)
		argv[i + 1] = args[i];
	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		unsetenv("BPFTRACE_PROF_SAMPLE_BYTES");
		unsetenv("BPFTRACE_PROF_SAMPLER_SEED");
		if (bytes)
			setenv("BPFTRACE_PROF_SAMPLE_BYTES", bytes, 1);
		if (seed)
			setenv("BPFTRACE_PROF_SAMPLER_SEED", seed, 1);
		setenv("LD_PRELOAD", pre, 1);
		alarm(120); /* a hang is a failure, not a stuck test run */
		execv(prog, (char *const *)argv);
		_exit(127);
	}
	close(fd[1]);
	while (got + 1 < size && (n = read(fd[0], out + got, size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(fd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run_check(char *out, size_t size, const char *const *preload, const char *bytes,
		     const char *seed, const char *const *args)
{
	return run_program(out, size, CHECK, preload, bytes, seed, args);
}

static unsigned long long field(const char *out, const char *name)
{
	const char *p = strstr(out, name);

	assert_non_null(p);
	return strtoull(p + strlen(name), NULL, 10);
}

static const char *const only_sampler[] = {SAMPLER, NULL};
static const char *const sampler_then_interposer[] = {SAMPLER, INTERPOSER, NULL};
static const char *const interposer_then_sampler[] = {INTERPOSER, SAMPLER, NULL};

/* Every function on sampled and unsampled blocks, errors, errno, threads and fork. */
static void test_sampler__family_sampled(void **state)
{
	char out[4096];
	const char *args[] = {"family", NULL};

	assert_int_equal(run_check(out, sizeof(out), only_sampler, "64", "1", args), 0);
	assert_true(field(out, "sampled ") > 1000);
	assert_int_equal(field(out, "mean "), 64);
}

/* With the semaphores at 0 nothing is sampled or tagged, and every function still works. */
static void test_sampler__family_semaphores_down(void **state)
{
	char out[4096];
	const char *args[] = {"family", "off", NULL};

	assert_int_equal(run_check(out, sizeof(out), only_sampler, "64", "1", args), 0);
	assert_int_equal(field(out, "sampled "), 0);
	assert_int_equal(field(out, "live "), 0);
}

/*
 * Under a second allocator reached through RTLD_NEXT whose every block carries the tag (and a
 * bogus base below it): a tag match not confirmed in the set would hand it a pointer it never
 * gave out, and it aborts.
 */
static void test_sampler__under_another_allocator(void **state)
{
	char out[4096];
	const char *family[] = {"family", "interposed", NULL};
	const char *fuzz[] = {"fuzz", "30000", "interposed", NULL};

	assert_int_equal(run_check(out, sizeof(out), sampler_then_interposer, "64", "1", family),
			 0);
	assert_true(field(out, "sampled ") > 1000);
	assert_true(field(out, "interposer calls ") > 1000);
	assert_int_equal(field(out, "bypassed "), 0); /* in front of it */
	assert_int_equal(run_check(out, sizeof(out), sampler_then_interposer, "64", "2", fuzz), 0);
	assert_true(field(out, "interposer calls ") > 1000);
}

/*
 * An allocator looked up before the sampler (preloaded ahead of it here; linked into the
 * executable in bpftrace-prof itself) serves malloc and free: the sampler must sample nothing,
 * even with a profiler listening, and pass on the calls that still reach it to their
 * namesakes.  The second allocator has no reallocarray: glibc's must take it, whose realloc is
 * the second allocator's (a realloc of glibc's own would be handed a block it never gave out,
 * and the second allocator's free would abort on what glibc gave back).
 */
static void test_sampler__bypassed_under_an_allocator_found_first(void **state)
{
	char out[4096];
	const char *family[] = {"family", "interposed", "bypassed", NULL};
	const char *fuzz[] = {"fuzz", "20000", "interposed", "bypassed", NULL};

	assert_int_equal(run_check(out, sizeof(out), interposer_then_sampler, "64", "1", family),
			 0);
	assert_int_equal(field(out, "sampled "), 0);
	assert_int_equal(field(out, "bypassed "), 1);
	assert_true(field(out, "interposer calls ") > 1000);
	assert_int_equal(run_check(out, sizeof(out), interposer_then_sampler, "64", "2", fuzz), 0);
	assert_int_equal(field(out, "sampled "), 0);
}

/*
 * A non-PIE executable that takes the family's addresses (Debian's python3) imports them through
 * canonical PLT entries, which dlsym(RTLD_DEFAULT) returns as the executable's own, though its
 * calls reach the sampler: the sampler is in front and samples (it took itself for bypassed and
 * sampled nothing in Debian's python3).  An allocator preloaded ahead of it still bypasses it.
 */
static void test_sampler__in_front_of_a_non_pie_executable(void **state)
{
	char out[4096];
	const char *family[] = {"family", NULL};
	const char *under[] = {"family", "interposed", NULL};
	const char *ahead[] = {"family", "interposed", "bypassed", NULL};

	assert_int_equal(
		run_program(out, sizeof(out), NOPIE_CHECK, only_sampler, "64", "1", family), 0);
	assert_int_equal(field(out, "family in executable "), 1); /* the case, not a PIE build */
	assert_int_equal(field(out, "bypassed "), 0);
	assert_true(field(out, "sampled ") > 1000);
	assert_int_equal(run_program(out, sizeof(out), NOPIE_CHECK, sampler_then_interposer, "64",
				     "1", under),
			 0);
	assert_int_equal(field(out, "bypassed "), 0);
	assert_true(field(out, "sampled ") > 1000);
	assert_int_equal(run_program(out, sizeof(out), NOPIE_CHECK, interposer_then_sampler, "64",
				     "1", ahead),
			 0);
	assert_int_equal(field(out, "bypassed "), 1);
	assert_int_equal(field(out, "sampled "), 0);
}

/* Random family calls against a shadow model of sizes and contents. */
static void test_sampler__random_calls_keep_contents(void **state)
{
	char out[4096];
	const char *args[] = {"fuzz", "60000", NULL};

	assert_int_equal(run_check(out, sizeof(out), only_sampler, "64", "3", args), 0);
	assert_true(field(out, "sampled ") > 1000);
	assert_int_equal(field(out, "freed "), field(out, "sampled ") - field(out, "live "));
}

/* The weights of sampled blocks sum to the bytes allocated within 5 % for 16 B .. 1 MiB. */
static void test_sampler__weights_unbiased_per_size(void **state)
{
	char out[4096];
	const char *args[] = {"stats", NULL};

	assert_int_equal(run_check(out, sizeof(out), only_sampler, "512", "7", args), 0);
	assert_true(field(out, "size 16: ") > 2000);
}

/* The set of sampled blocks is bounded: past it allocations go unsampled, counted. */
static void test_sampler__set_full_counted(void **state)
{
	char out[4096];
	const char *args[] = {"full", NULL};

	assert_int_equal(run_check(out, sizeof(out), only_sampler, "1", "4", args), 0);
	assert_true(field(out, "table full ") > 0);
}

/* realloc leaves a big sampled block to the next allocator to move: not copied, not faulted
 * in again (sqlite3's growing sorter buffer paid a thousand page faults for the copies). */
static void test_sampler__realloc_does_not_copy_sampled_blocks(void **state)
{
	char out[4096];
	const char *args[] = {"grow", NULL};

	assert_int_equal(run_check(out, sizeof(out), only_sampler, "1", "5", args), 0);
}

/* One thread's samples follow from the seed alone; another seed, other samples. */
static void test_sampler__seeded_sequence(void **state)
{
	char a[4096], b[4096], c[4096];
	const char *args[] = {"seq", NULL};
	int ones = 0;

	assert_int_equal(run_check(a, sizeof(a), only_sampler, "256", "42", args), 0);
	assert_int_equal(run_check(b, sizeof(b), only_sampler, "256", "42", args), 0);
	assert_int_equal(run_check(c, sizeof(c), only_sampler, "256", "43", args), 0);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	/* 2,000 blocks of 16 B at a mean of 256: p = 1 - e^-1/16, about 121 expected. */
	for (const char *p = a; *p == '0' || *p == '1'; p++)
		ones += *p == '1';
	assert_in_range(ones, 60, 200);
}

/* The mean comes from the environment; anything but a positive number is the default. */
static void test_sampler__mean_from_environment(void **state)
{
	static const struct {
		const char *env;
		unsigned long long mean;
	} cases[] = {{"4096", 4096},
		     {NULL, 524288},
		     {"", 524288},
		     {"0", 524288},
		     {"12x", 524288},
		     {"-5", 524288},
		     {"99999999999999999999", 524288}};
	const char *args[] = {"seq", NULL};
	char out[4096];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(
			run_check(out, sizeof(out), only_sampler, cases[i].env, NULL, args), 0);
		assert_int_equal(field(out, "mean "), cases[i].mean);
	}
}

/* The symbol (function) of the library holding addr, from nm; into out. */
static void symbol_at(char *out, size_t size, unsigned long addr)
{
	FILE *nm = popen("nm -S --defined-only " SAMPLER, "r");
	char line[512], sym[256];
	unsigned long start, len;

	assert_non_null(nm);
	out[0] = 0;
	while (fgets(line, sizeof(line), nm))
		if (sscanf(line, "%lx %lx %*s %255s", &start, &len, sym) == 3 && addr >= start &&
		    addr < start + len)
			snprintf(out, size, "%s", sym);
	pclose(nm);
}

/* How many lines of CMD's output contain needle. */
static int count_lines(const char *cmd, const char *needle)
{
	FILE *f = popen(cmd, "r");
	char line[512];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	assert_int_equal(pclose(f), 0);
	return n;
}

/*
 * Every probe site of the built library (otel_memory's, our sampler_lost) is a one-byte nop (90),
 * never a 5-byte one (Linux 6.18 turns a uprobe there into a call that writes below %rsp and
 * crashes forked children).  One site per probe (each is a uprobe the kernel removes with a
 * grace period of its own): alloc's in sampler_fire_alloc, which keeps its frame pointer and
 * says by its fourth argument that two frames are the sampler's, and which every wrapper calls
 * (never jumps to): a stack taken at the probe has that function, then the wrapper the program
 * called, then the program.
 */
static void test_sampler__probe_sites_are_one_byte_nops(void **state)
{
	static const char *const wrappers[] = {
		"malloc",
		"calloc",
		"realloc",
		"reallocarray",
		"memalign",
		"aligned_alloc",
		"posix_memalign",
		"valloc",
		"pvalloc",
		"_Znwm",
		"_Znam",
		"_ZnwmRKSt9nothrow_t",
		"_ZnamRKSt9nothrow_t",
		"_ZnwmSt11align_val_t",
		"_ZnamSt11align_val_t",
		"_ZnwmSt11align_val_tRKSt9nothrow_t",
		"_ZnamSt11align_val_tRKSt9nothrow_t",
	};
	char line[512], cmd[512], sym[256];
	int sites = 0, allocs = 0, frees = 0, semaphores = 0, lost = 0;
	FILE *notes = popen("readelf -n " SAMPLER, "r");
	bool alloc = false, free_ = false;

	assert_non_null(notes);
	while (fgets(line, sizeof(line), notes)) {
		unsigned long loc, sem;
		char *p;
		FILE *od;

		if (strstr(line, "Provider:"))
			assert_true(strstr(line, "otel_memory") || strstr(line, "bpftrace_prof"));
		if (strstr(line, "Name:")) {
			alloc = strstr(line, "alloc") != NULL;
			free_ = strstr(line, "free") != NULL;
			lost += strstr(line, "sampler_lost") != NULL;
		}
		if (alloc && strstr(line, "Arguments:"))
			assert_non_null(strstr(line, "8@%rdi 8@%rsi 8@%rdx -4@$2"));
		p = strstr(line, "Location: ");
		if (!p)
			continue;
		loc = strtoul(p + 10, NULL, 16);
		p = strstr(line, "Semaphore: ");
		assert_non_null(p);
		sem = strtoul(p + 11, NULL, 16);
		semaphores += sem != 0;
		snprintf(cmd, sizeof(cmd),
			 "objdump -d --start-address=%#lx --stop-address=%#lx " SAMPLER
			 " | grep -c '^ *%lx:[[:space:]]*90[[:space:]]'",
			 loc, loc + 1, loc);
		od = popen(cmd, "r");
		assert_non_null(od);
		assert_non_null(fgets(cmd, sizeof(cmd), od));
		assert_int_equal(pclose(od), 0);
		assert_int_equal(atoi(cmd), 1);
		sites++;
		symbol_at(sym, sizeof(sym), loc);
		if (alloc) {
			allocs++;
			assert_string_equal(sym, "sampler_fire_alloc");
		} else if (free_) {
			frees++;
			assert_string_equal(sym, "sampler_fire_free");
		}
	}
	assert_int_equal(pclose(notes), 0);
	assert_int_equal(allocs, 1);
	assert_int_equal(frees, 1);
	assert_int_equal(lost, 1);
	assert_int_equal(sites, 3);
	assert_int_equal(semaphores, sites);
	/* Its frame: push %rbp; mov %rsp,%rbp before the site (a frame-pointer walk sees it). */
	snprintf(cmd, sizeof(cmd),
		 "objdump -d --no-show-raw-insn --disassemble=sampler_fire_alloc " SAMPLER
		 " | grep -E '^ +[0-9a-f]+:' | head -2");
	assert_int_equal(count_lines(cmd, "push   %rbp"), 1);
	assert_int_equal(count_lines(cmd, "mov    %rsp,%rbp"), 1);
	for (size_t i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++) {
		snprintf(cmd, sizeof(cmd), "objdump -d --disassemble='%s' " SAMPLER, wrappers[i]);
		if (count_lines(cmd, "call") < 1 || count_lines(cmd, "<sampler_fire_alloc>") < 1)
			fail_msg("%s does not call sampler_fire_alloc", wrappers[i]);
	}
	/* Called, never jumped to: the wrapper's frame stays under it. */
	assert_int_equal(
		count_lines("objdump -d " SAMPLER " | grep '<sampler_fire_alloc>$'; true", "jmp"),
		0);
}

/*
 * C++ operator new and delete, every variant, sampled and not: one sampling decision per new,
 * weights unbiased, bad_alloc and the new_handler loop the C++ library's.
 */
static void test_sampler__cxx_new(void **state)
{
	char out[4096];
	const char *none[] = {NULL};

	assert_int_equal(run_program(out, sizeof(out), NEW_CHECK, only_sampler, "64", "5", none),
			 0);
	assert_true(field(out, "\nsampled ") > 10000);
}

/* Initial-exec TLS only (no __tls_get_addr, no module-id relocations). */
static void test_sampler__tls_initial_exec(void **state)
{
	char line[1024];
	FILE *f = popen("readelf -W --dyn-syms -r " SAMPLER, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		assert_null(strstr(line, "__tls_get_addr"));
		assert_null(strstr(line, "DTPMOD"));
	}
	assert_int_equal(pclose(f), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sampler__family_sampled),
		cmocka_unit_test(test_sampler__family_semaphores_down),
		cmocka_unit_test(test_sampler__under_another_allocator),
		cmocka_unit_test(test_sampler__bypassed_under_an_allocator_found_first),
		cmocka_unit_test(test_sampler__in_front_of_a_non_pie_executable),
		cmocka_unit_test(test_sampler__random_calls_keep_contents),
		cmocka_unit_test(test_sampler__weights_unbiased_per_size),
		cmocka_unit_test(test_sampler__set_full_counted),
		cmocka_unit_test(test_sampler__realloc_does_not_copy_sampled_blocks),
		cmocka_unit_test(test_sampler__seeded_sequence),
		cmocka_unit_test(test_sampler__mean_from_environment),
		cmocka_unit_test(test_sampler__probe_sites_are_one_byte_nops),
		cmocka_unit_test(test_sampler__cxx_new),
		cmocka_unit_test(test_sampler__tls_initial_exec),
	};

	return cmocka_run_group_tests_name("sampler", tests, NULL, NULL);
}
