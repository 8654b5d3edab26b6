// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Which allocator a process's malloc reaches (user/attach/heap_front.c), on files built here and
 * on real processes started with LD_PRELOAD. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/heap_front.h"
#include "proc/maps.h"
#include "proc/safe_open.h"

#define SAMPLER	 "build/libbpftrace-prof-sampler.so"
#define JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

static int open_or_fail(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail_msg("%s: %s (make all)", path, strerror(errno));
	return fd;
}

/* An executable or library exporting free is an allocator; one carrying the otel_memory probes
 * is a sampler (-- CMD's executable: cmd_exe). */
static void test_heap_front__allocators_and_samplers_told(void **state)
{
	static const struct {
		const char *path;
		bool own, probes;
	} files[] = {
		{"build/targets/own_alloc", true, false},
		{"build/targets/walk_alias", false, false},
		{"build/targets/otel_probes", false, true},
		{SAMPLER, true, true},
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int fd = open_or_fail(files[i].path);
		bool own = !files[i].own;

		assert_int_equal(heap_front__own_allocator(fd), files[i].own);
		close(fd);
		if (heap_front__cmd_exe(files[i].path, &own) != files[i].probes ||
		    own != files[i].own)
			fail_msg("%s: cmd_exe told it wrong", files[i].path);
	}
}

/* `sleep 30` with LD_PRELOAD=preload: its pid, once the sampler is mapped (*m: its maps). */
static pid_t start_sleep(const char *preload, struct maps **m)
{
	char env[4096], *argv[] = {"sleep", "30", NULL}, *envp[] = {env, NULL};
	pid_t pid;

	snprintf(env, sizeof(env), "LD_PRELOAD=%s", preload);
	assert_int_equal(posix_spawn(&pid, "/bin/sleep", NULL, NULL, argv, envp), 0);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(maps__read_pid(m, "/proc", (uint32_t)pid), 0);
		for (size_t k = 0; k < (*m)->count; k++)
			if (strstr((*m)->entries[k].path, "libbpftrace-prof-sampler.so"))
				return pid;
		maps__free(*m);
		usleep(10000);
	}
	fail_msg("the sampler never mapped into sleep (LD_PRELOAD=%s)", preload);
	return -1;
}

/* preload_ahead of the sampler in `sleep` started with LD_PRELOAD=preload. */
static bool ahead_of_sampler(const char *preload)
{
	const struct maps_entry *otel = NULL;
	struct maps *m;
	pid_t pid = start_sleep(preload, &m);
	int root_fd;
	bool r;

	for (size_t k = 0; k < m->count; k++)
		if (m->entries[k].exec &&
		    strstr(m->entries[k].path, "/libbpftrace-prof-sampler.so"))
			otel = &m->entries[k];
	assert_non_null(otel);
	assert_int_equal(safe_open__root(&root_fd, "/proc", (uint32_t)pid), 0);
	r = heap_front__preload_ahead((uint32_t)pid, m, root_fd, otel);
	close(root_fd);
	maps__free(m);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return r;
}

/* jemalloc ahead of the sampler, then behind it; the exe (sleep) has no allocator of its own; a
 * copy of the sampler ahead of it is a sampler, not an allocator ahead of it (the name it is
 * known by there, not the sampler's, is what the profiler would not recognise). */
static void test_heap_front__preload_order_on_real_processes(void **state)
{
	char sampler[4096], dir[] = "/tmp/test_heap_front.XXXXXX", copy[4200], list[8400];
	struct stat exe;
	pid_t pid;
	struct maps *m;

	if (access(JEMALLOC, R_OK))
		fail_msg("no %s (libjemalloc2, a build dependency: scripts/install-deps.sh)",
			 JEMALLOC);
	assert_non_null(realpath(SAMPLER, sampler));
	snprintf(list, sizeof(list), "%s:%s", JEMALLOC, sampler);
	assert_true(ahead_of_sampler(list));
	snprintf(list, sizeof(list), "%s %s", sampler, JEMALLOC);
	assert_false(ahead_of_sampler(list));
	assert_false(ahead_of_sampler(sampler));

	assert_non_null(mkdtemp(dir));
	snprintf(copy, sizeof(copy), "%s/libcopy.so", dir);
	snprintf(list, sizeof(list), "cp '%s' '%s'", sampler, copy);
	assert_int_equal(system(list), 0);
	snprintf(list, sizeof(list), "%s:%s", copy, sampler);
	assert_false(ahead_of_sampler(list));
	unlink(copy);
	rmdir(dir);

	pid = start_sleep(sampler, &m);
	maps__free(m);
	assert_false(heap_front__exe_allocator((uint32_t)pid, &exe));
	assert_true(exe.st_ino != 0); /* opened: its identity is known */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_front__allocators_and_samplers_told),
		cmocka_unit_test(test_heap_front__preload_order_on_real_processes),
	};

	return cmocka_run_group_tests_name("heap_front", tests, NULL, NULL);
}
