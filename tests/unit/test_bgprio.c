// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* util/bgprio: real threads, their real nice read back from the kernel. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/bgprio.h"

struct worker {
	struct bgprio *p;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int started, stop;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	bgprio__worker(w->p, "prof-test");
	pthread_mutex_lock(&w->lock);
	w->started = 1;
	pthread_cond_broadcast(&w->cond);
	while (!w->stop)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static pthread_t start(struct worker *w, struct bgprio *p)
{
	pthread_t t;

	memset(w, 0, sizeof(*w));
	w->p = p;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	assert_int_equal(pthread_create(&t, NULL, worker_main, w), 0);
	pthread_mutex_lock(&w->lock);
	while (!w->started)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return t;
}

static void stop(struct worker *w, pthread_t t)
{
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(t, NULL);
}

static int nice_of(pid_t tid)
{
	int v;

	errno = 0;
	v = getpriority(PRIO_PROCESS, (id_t)tid);
	assert_false(v == -1 && errno);
	return v;
}

static void comm_of(pid_t tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, (int)len, f));
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/* Named, lowered to 19 while nobody waits; raised to the creator's nice while anyone does (the
 * raises nest, a lower too many does not unbalance the next raise). */
static void test_bgprio__lowered_and_raised(void **state)
{
	struct bgprio p;
	struct worker w;
	char comm[32];
	pthread_t t;

	if (geteuid())
		skip(); /* going back up needs CAP_SYS_NICE */
	unsetenv("BPFTRACE_PROF_WORKER_NICE");
	assert_int_equal(nice_of(0), 0);
	bgprio__init(&p);
	t = start(&w, &p);
	comm_of(p.tid, comm, sizeof(comm));
	assert_string_equal(comm, "prof-test");
	assert_int_equal(nice_of(p.tid), 19);
	assert_int_equal(nice_of(0), 0); /* only the worker */

	bgprio__raise(&p);
	assert_int_equal(nice_of(p.tid), 0);
	bgprio__raise(&p);
	bgprio__lower(&p);
	assert_int_equal(nice_of(p.tid), 0); /* one waiter left */
	bgprio__lower(&p);
	assert_int_equal(nice_of(p.tid), 19);
	bgprio__lower(&p); /* unmatched: ignored */
	bgprio__raise(&p);
	assert_int_equal(nice_of(p.tid), 0);
	bgprio__lower(&p);
	assert_int_equal(nice_of(p.tid), 19);
	stop(&w, t);
	bgprio__destroy(&p);
}

/* Raised before the worker runs (a hold as the session starts): it starts raised. */
static void test_bgprio__raised_before_start(void **state)
{
	struct bgprio p;
	struct worker w;
	pthread_t t;

	if (geteuid())
		skip();
	unsetenv("BPFTRACE_PROF_WORKER_NICE");
	bgprio__init(&p);
	bgprio__raise(&p);
	t = start(&w, &p);
	assert_int_equal(nice_of(p.tid), 0);
	bgprio__lower(&p);
	assert_int_equal(nice_of(p.tid), 19);
	stop(&w, t);
	bgprio__destroy(&p);
}

/* BPFTRACE_PROF_WORKER_NICE: 0 keeps the worker where it was; a value out of 0-19 is the
 * default's. */
static void test_bgprio__env(void **state)
{
	static const struct {
		const char *env;
		int nice;
	} cases[] = {{"0", 0}, {"7", 7}, {"20", 19}, {"-3", 19}, {"x", 19}, {"", 19}};
	struct bgprio p;
	struct worker w;
	pthread_t t;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("BPFTRACE_PROF_WORKER_NICE", cases[i].env, 1);
		bgprio__init(&p);
		t = start(&w, &p);
		assert_int_equal(nice_of(p.tid), cases[i].nice);
		stop(&w, t);
		bgprio__destroy(&p);
	}
	unsetenv("BPFTRACE_PROF_WORKER_NICE");
}

/* Without CAP_SYS_NICE (and RLIMIT_NICE 0) a worker could not be raised again: it is not
 * lowered at all. In a child, which drops the capability from its effective set. */
static void test_bgprio__not_lowered_when_it_could_not_go_back(void **state)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3];
	struct rlimit rl = {0, 0};
	int status;
	pid_t pid;

	if (geteuid())
		skip();
	unsetenv("BPFTRACE_PROF_WORKER_NICE");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct bgprio p;
		struct worker w;
		pthread_t t;
		int nice;

		if (syscall(SYS_capget, &hdr, caps) || setrlimit(RLIMIT_NICE, &rl))
			_exit(2);
		caps[CAP_TO_INDEX(CAP_SYS_NICE)].effective &= ~CAP_TO_MASK(CAP_SYS_NICE);
		if (syscall(SYS_capset, &hdr, caps))
			_exit(3);
		bgprio__init(&p);
		t = start(&w, &p);
		nice = nice_of(p.tid);
		stop(&w, t);
		bgprio__destroy(&p);
		_exit(nice == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bgprio__lowered_and_raised),
		cmocka_unit_test(test_bgprio__raised_before_start),
		cmocka_unit_test(test_bgprio__env),
		cmocka_unit_test(test_bgprio__not_lowered_when_it_could_not_go_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
