// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * build__main_mapping: the mapping of the executable of the process with the most weight is
 * marked main, whatever order the mappings were added in.  Real processes: ours and a child
 * running sleep, whose executables procinfo reads from /proc.  build__profile: a mode's shape
 * (types, default, text report types, period) and the run's metadata, before any sample.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proc/procinfo.h"
#include "profile/build.h"
#include "profile/profile.h"
#include "profile/run.h"

static void exe_of(char *out, size_t size, uint32_t pid)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	/* The child may not have exec'd yet: wait until its executable is sleep's. */
	for (int i = 0; i < 500; i++) {
		n = readlink(path, out, size - 1);
		assert_true(n > 0);
		out[n] = 0;
		if (pid == (uint32_t)getpid() || !strstr(out, "test_build"))
			return;
		usleep(10000);
	}
	fail_msg("child %u never exec'd", pid);
}

static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Mappings kernel, libc, the child's executable, ours (two: text added after data); weights per
 * pid. */
static uint32_t main_for(int64_t ours, int64_t other)
{
	char self[PATH_MAX], one[PATH_MAX];
	uint32_t me = (uint32_t)getpid(), ids[5], loc, main_mapping;
	struct profile_mapping m[5] = {
		{0, UINT64_MAX, 0, "[kernel.kallsyms]", "", true},
		{0x7f0000000000, 0x7f0000100000, 0x1000, "/usr/lib/x86_64-linux-gnu/libc.so.6", "",
		 true},
		{0x500000, 0x600000, 0x1000, one, "", true},
		{0x402000, 0x403000, 0x2000, self, "", true},
		{0x401000, 0x402000, 0x1000, self, "", true},
	};
	pid_t child = sleeper();
	struct procinfo *pi;
	struct profile *p;

	exe_of(self, sizeof(self), me);
	exe_of(one, sizeof(one), (uint32_t)child);
	assert_int_equal(procinfo__new(&pi, NULL), 0);
	assert_int_equal(procinfo__note(pi, me, me), 0);
	assert_int_equal(procinfo__note(pi, (uint32_t)child, (uint32_t)child), 0);
	assert_string_equal(procinfo__exe(pi, (uint32_t)child), one);
	assert_string_equal(procinfo__exe(pi, me), self);
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(profile__mapping(p, &ids[i], &m[i]), 0);
	assert_int_equal(profile__location(p, &loc, 0x401010, ids[4], 0, 0), 0);
	assert_int_equal(profile__add_sample(p, me, me, "t", "t", &loc, 1, &ours, false), 0);
	assert_int_equal(profile__add_sample(p, (uint32_t)child, (uint32_t)child, "sleep", "sleep",
					     &loc, 1, &other, false),
			 0);
	assert_int_equal(build__main_mapping(p, pi), 0);
	main_mapping = p->main_mapping;
	profile__free(p);
	procinfo__free(pi);
	reap(child);
	return main_mapping;
}

static void test_build__main_mapping_is_the_busiest_process_executable(void **state)
{
	(void)state;
	/* Ours: its lowest mapping (text, added last), not the kernel that came first. */
	assert_int_equal(main_for(10, 3), 5);
	/* The child's. */
	assert_int_equal(main_for(3, 10), 3);
}

static void test_build__main_mapping_none_without_the_executable(void **state)
{
	struct profile_mapping k = {0, UINT64_MAX, 0, "[kernel.kallsyms]", "", true};
	uint32_t id, loc, me = (uint32_t)getpid();
	int64_t v = 5;
	struct procinfo *pi;
	struct profile *p;

	(void)state;
	assert_int_equal(procinfo__new(&pi, NULL), 0);
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	assert_int_equal(profile__mapping(p, &id, &k), 0);
	assert_int_equal(profile__location(p, &loc, 0x1000, id, 0, 0), 0);
	/* A process never noted (its executable unknown), then one whose file is not mapped. */
	assert_int_equal(profile__add_sample(p, me, me, "t", "t", &loc, 1, &v, false), 0);
	assert_int_equal(build__main_mapping(p, pi), 0);
	assert_int_equal(p->main_mapping, 0);
	assert_int_equal(procinfo__note(pi, me, me), 0);
	assert_int_equal(build__main_mapping(p, pi), 0);
	assert_int_equal(p->main_mapping, 0);
	profile__free(p);
	procinfo__free(pi);
}

static void test_build__profile_takes_the_shape(void **state)
{
	static const char *const types[][2] = {{"alloc_objects", "count"},
					       {"alloc_space", "bytes"},
					       {"inuse_objects", "count"},
					       {"inuse_space", "bytes"}};
	struct profile_run run = {.cmdline = "bpftrace-prof --heap -p 1", .time_nanos = 7};
	struct build_inputs in = {.run = &run};
	struct profile *p = NULL;
	bool command = false;

	(void)state;
	assert_int_equal(build__profile(&p, &in,
					&(struct build_shape){
						.mode = "heap",
						.types = types,
						.ntypes = 4,
						.default_type = 3,
						.text_types = {3, 1},
						.ntext_types = 2,
						.period_type = "space",
						.period_unit = "bytes",
						.period = 524288,
					}),
			 0);
	assert_string_equal(p->mode, "heap");
	assert_int_equal(p->ntypes, 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(p->types[i].type, types[i][0]);
		assert_string_equal(p->types[i].unit, types[i][1]);
	}
	assert_int_equal(p->default_type, 3);
	assert_int_equal(p->ntext_types, 2);
	assert_int_equal(p->text_types[0], 3);
	assert_int_equal(p->text_types[1], 1);
	assert_string_equal(p->period_type.type, "space");
	assert_string_equal(p->period_type.unit, "bytes");
	assert_int_equal(p->period, 524288);
	/* The run's metadata, applied by the same call. */
	assert_int_equal(p->time_nanos, 7);
	for (uint32_t i = 0; i < p->ncomments; i++)
		command |= !strcmp(p->comments[i], "command: bpftrace-prof --heap -p 1");
	assert_true(command);
	assert_int_equal(p->nsamples, 0);
	profile__free(p);
}

/* No period type in the shape: none in the profile (pprof then writes no period_type). */
static void test_build__profile_without_period(void **state)
{
	static const char *const types[][2] = {{"events", "count"}, {"offcpu", "nanoseconds"}};
	struct profile_run run = {.cmdline = "x"};
	struct build_inputs in = {.run = &run};
	struct profile *p = NULL;

	(void)state;
	assert_int_equal(build__profile(&p, &in,
					&(struct build_shape){.mode = "offcpu",
							      .types = types,
							      .ntypes = 2,
							      .default_type = 1,
							      .text_types = {1},
							      .ntext_types = 1}),
			 0);
	assert_int_equal(p->ntypes, 2);
	assert_int_equal(p->default_type, 1);
	assert_int_equal(p->ntext_types, 1);
	assert_int_equal(p->text_types[0], 1);
	assert_null(p->period_type.type);
	assert_null(p->period_type.unit);
	assert_int_equal(p->period, 0);
	profile__free(p);
}

/* A profile that is no run of ours (a trace read back): the shape, no run metadata. */
static void test_build__profile_without_run(void **state)
{
	static const char *const types[][2] = {{"inuse_space", "bytes"}};
	struct build_inputs in = {0};
	struct profile *p = NULL;

	(void)state;
	assert_int_equal(build__profile(&p, &in,
					&(struct build_shape){.mode = "heap",
							      .types = types,
							      .ntypes = 1,
							      .period_type = "space",
							      .period_unit = "bytes",
							      .period = 64}),
			 0);
	assert_int_equal(p->ntypes, 1);
	assert_string_equal(p->period_type.type, "space");
	assert_int_equal(p->period, 64);
	assert_int_equal(p->ncomments, 0);
	assert_int_equal(p->ncounters, 0);
	assert_int_equal(p->time_nanos, 0);
	profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build__main_mapping_is_the_busiest_process_executable),
		cmocka_unit_test(test_build__main_mapping_none_without_the_executable),
		cmocka_unit_test(test_build__profile_takes_the_shape),
		cmocka_unit_test(test_build__profile_without_period),
		cmocka_unit_test(test_build__profile_without_run),
	};

	return cmocka_run_group_tests_name("build", tests, NULL, NULL);
}
