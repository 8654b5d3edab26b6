// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The pusher against tests/e2e/push_receiver.py run as a subprocess: a receiver written from the
 * protocol descriptions that decodes what arrives and can refuse, fail, or stall on command.
 * Waits are bounded by a count of polls (a failure, never a timing assertion).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/pprof.h"
#include "export/push.h"
#include "profile/profile.h"

#define FROM_NS	 1700000000123456789LL
#define DUR_NS	 2000000000LL
#define MAX_POLL 1500 /* x 20 ms: a generous bound, not a timing assertion */

struct receiver {
	pid_t pid;
	FILE *in, *out;
	char dir[64];
	char url[64];
};

struct fixture {
	struct receiver r;
	char tmp[64]; /* a --output-dir for the spool */
	uint8_t *pprof;
	size_t len;
	struct push *push;
};

static void receiver_start(struct receiver *r, bool refuse)
{
	const char *script = getenv("PUSH_RECEIVER") ?: "tests/e2e/push_receiver.py";
	int in[2], out[2];
	char line[64];

	snprintf(r->dir, sizeof(r->dir), "/tmp/push-recv.XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execlp("python3", "python3", script, r->dir, refuse ? "--refuse" : NULL, NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	r->in = fdopen(in[1], "w");
	r->out = fdopen(out[0], "r");
	assert_non_null(r->in);
	assert_non_null(r->out);
	assert_non_null(fgets(line, sizeof(line), r->out));
	snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%d", atoi(line));
}

/* A command, acknowledged by the receiver before we go on. */
static void receiver_cmd(struct receiver *r, const char *cmd)
{
	char line[64];

	fprintf(r->in, "%s\n", cmd);
	fflush(r->in);
	assert_non_null(fgets(line, sizeof(line), r->out));
	assert_true(!strncmp(line, "done", 4));
}

static void rm_rf(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static void receiver_stop(struct receiver *r)
{
	int status;

	if (!r->pid)
		return;
	fprintf(r->in, "quit\n");
	fclose(r->in);
	fclose(r->out);
	waitpid(r->pid, &status, 0);
	rm_rf(r->dir);
	r->pid = 0;
}

/* Files in dir whose name ends with suffix. */
static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), s = strlen(suffix);

		if (l > s && !strcmp(de->d_name + l - s, suffix) && de->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n;
}

static int received(struct receiver *r)
{
	return count_files(r->dir, ".json");
}

/* The n-th profile's sidecar (json.dump, sort_keys: `"key": value` with ", " between). */
static char *meta(struct receiver *r, int n)
{
	static char buf[8192];
	char path[128];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%06d.json", r->dir, n);
	f = fopen(path, "r");
	assert_non_null(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	buf[len] = 0;
	fclose(f);
	return buf;
}

#define assert_has(hay, needle)                                      \
	do {                                                         \
		if (!strstr((hay), (needle)))                        \
			fail_msg("'%s' not in %s", (needle), (hay)); \
	} while (0)

/* Requests the receiver answered with status (0: stalled). */
static int requests(struct receiver *r, int status)
{
	char path[128], line[256], want[32];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/requests.log", r->dir);
	snprintf(want, sizeof(want), "\"status\": %d}", status);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, want) != NULL;
	fclose(f);
	return n;
}

static uint64_t stat_of(struct push *p, size_t offset)
{
	struct push_stats st;

	push__stats(p, &st);
	return *(uint64_t *)((char *)&st + offset);
}
#define STAT(p, f) stat_of((p), offsetof(struct push_stats, f))

/* Polls until the counter reaches want (failing the test after MAX_POLL rounds). */
static void poll_until(struct push *p, size_t offset, uint64_t want, const char *what)
{
	for (int i = 0; i < MAX_POLL; i++) {
		assert_int_equal(push__poll(p), 0);
		if (stat_of(p, offset) >= want)
			return;
		usleep(20000);
	}
	fail_msg("%s never reached %llu (is %llu)", what, (unsigned long long)want,
		 (unsigned long long)stat_of(p, offset));
}
#define POLL_UNTIL(p, f, want) poll_until((p), offsetof(struct push_stats, f), (want), #f)

/* A one-sample cpu profile as gzip pprof. */
static void make_pprof(struct fixture *fx, const char *process)
{
	struct profile_mapping m = {0x1000, 0x2000, 0, "/bin/app", "", true};
	int64_t v[2] = {3, 30};
	struct profile *p;
	uint32_t mid, fid, lid;
	FILE *f;

	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	assert_int_equal(profile__add_type(p, "cpu", "nanoseconds"), 0);
	p->time_nanos = FROM_NS;
	p->duration_nanos = DUR_NS;
	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	assert_int_equal(profile__function(p, &fid, "spin", "spin", "", 0), 0);
	assert_int_equal(profile__location(p, &lid, 0x1100, mid, fid, 0), 0);
	assert_int_equal(profile__add_sample(p, 7, 7, process, process, &lid, 1, v, false), 0);
	free(fx->pprof);
	f = open_memstream((char **)&fx->pprof, &fx->len);
	assert_non_null(f);
	assert_int_equal(pprof__write(p, f), 0);
	assert_int_equal(fclose(f), 0);
	profile__free(p);
}

static const struct push_label labels[] = {{"service_name", "svc-a"}, {"env", "test"}};

static int submit(struct fixture *fx)
{
	struct push_item it = {
		.data = fx->pprof,
		.len = fx->len,
		.name = "process_cpu",
		.labels = labels,
		.nlabels = 2,
		.from_ns = FROM_NS,
		.until_ns = FROM_NS + DUR_NS,
	};

	return push__submit(fx->push, &it);
}

static struct push_opts fast_opts(struct fixture *fx, const char *spool)
{
	return (struct push_opts){
		.url = fx->r.url,
		.spool_dir = spool,
		.max_tries = 3,
		.backoff_ms = 20,
		.backoff_max_ms = 100,
		.timeout_ms = 2000,
		.connect_timeout_ms = 1000,
	};
}

static char *spool_dir(struct fixture *fx)
{
	static char path[96];

	snprintf(path, sizeof(path), "%s/spool", fx->tmp);
	return path;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	/* The receiver is local: no proxy from the environment may come between. */
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("https_proxy");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	unsetenv("BPFTRACE_PROF_PUSH_TOKEN");
	unsetenv("BPFTRACE_PROF_PUSH_USER");
	unsetenv("BPFTRACE_PROF_PUSH_PASSWORD");
	unsetenv("BPFTRACE_PROF_PUSH_TENANT");
	signal(SIGPIPE, SIG_IGN);
	snprintf(fx->tmp, sizeof(fx->tmp), "/tmp/push-spool.XXXXXX");
	if (!mkdtemp(fx->tmp))
		return -1;
	make_pprof(fx, "app");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	push__free(fx->push);
	receiver_stop(&fx->r);
	rm_rf(fx->tmp);
	free(fx->pprof);
	free(fx);
	return 0;
}

/* The stored body is byte for byte what was submitted. */
static void assert_body(struct fixture *fx, int n)
{
	char path[128];
	uint8_t *buf = malloc(fx->len + 1);
	size_t len;
	FILE *f;

	assert_non_null(buf);
	snprintf(path, sizeof(path), "%s/%06d.pb.gz", fx->r.dir, n);
	f = fopen(path, "rb");
	assert_non_null(f);
	len = fread(buf, 1, fx->len + 1, f);
	fclose(f);
	assert_int_equal(len, fx->len);
	assert_memory_equal(buf, fx->pprof, fx->len);
	free(buf);
}

static void test_push__pyroscope_delivers_labels_and_times(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;
	const char *m;

	receiver_start(&fx->r, false);
	o = fast_opts(fx, NULL);
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	assert_int_equal(received(&fx->r), 1);
	m = meta(&fx->r, 1);
	assert_has(m, "\"endpoint\": \"push\"");
	assert_has(m, "\"content_type\": \"application/proto\"");
	assert_has(m, "\"__name__\": \"process_cpu\"");
	assert_has(m, "\"service_name\": \"svc-a\"");
	assert_has(m, "\"env\": \"test\"");
	/* From the pprof's own time_nanos and duration_nanos, decoded by the receiver. */
	assert_has(m, "\"from\": 1700000000123456789");
	assert_has(m, "\"until\": 1700000002123456789");
	assert_has(m, "\"authorization\": \"\"");
	assert_body(fx, 1);
	assert_int_equal(STAT(fx->push, submitted), 1);
	assert_int_equal(STAT(fx->push, retried), 0);
	assert_int_equal(STAT(fx->push, sent_bytes), fx->len);
	assert_int_equal(push__timeout_ms(fx->push), -1);
}

static void test_push__ingest_delivers_name_and_range(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;
	const char *m;

	receiver_start(&fx->r, false);
	o = fast_opts(fx, NULL);
	o.protocol = PUSH_PYROSCOPE_INGEST;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	m = meta(&fx->r, 1);
	assert_has(m, "\"endpoint\": \"ingest\"");
	assert_has(m, "\"labels\": {\"env\": \"test\", \"service_name\": \"svc-a\"}");
	/* From the query: 19 digits, read as nanoseconds. */
	assert_has(m, "\"from\": 1700000000123456789");
	assert_has(m, "\"until\": 1700000002123456789");
	assert_body(fx, 1);
}

static void test_push__parca_delivers_labels(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;
	const char *m;

	receiver_start(&fx->r, false);
	o = fast_opts(fx, NULL);
	o.protocol = PUSH_PARCA;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	m = meta(&fx->r, 1);
	assert_has(m, "\"endpoint\": \"parca\"");
	assert_has(m, "\"content_type\": \"application/json\"");
	assert_has(m, "\"__name__\": \"process_cpu\"");
	assert_has(m, "\"service_name\": \"svc-a\"");
	assert_has(m, "\"from\": 1700000000123456789");
	assert_body(fx, 1);
}

static void test_push__500_retried_then_delivered(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	receiver_cmd(&fx->r, "fail 500 2");
	o = fast_opts(fx, NULL);
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	assert_int_equal(STAT(fx->push, retried), 2);
	assert_int_equal(STAT(fx->push, failed), 0);
	assert_int_equal(requests(&fx->r, 500), 2);
	assert_int_equal(requests(&fx->r, 200), 1);
	assert_int_equal(received(&fx->r), 1);
}

static void test_push__429_retried(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	receiver_cmd(&fx->r, "fail 429 1");
	o = fast_opts(fx, NULL);
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	assert_int_equal(STAT(fx->push, retried), 1);
	assert_int_equal(requests(&fx->r, 429), 1);
}

static void test_push__400_final_not_retried(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	receiver_cmd(&fx->r, "fail 400 1");
	o = fast_opts(fx, spool_dir(fx));
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, failed, 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(push__poll(fx->push), 0);
	assert_int_equal(STAT(fx->push, retried), 0);
	assert_int_equal(STAT(fx->push, sent), 0);
	assert_int_equal(STAT(fx->push, spooled), 0);
	assert_int_equal(requests(&fx->r, 400), 1);
	assert_int_equal(received(&fx->r), 0);
	assert_int_equal(push__timeout_ms(fx->push), -1);
}

/* The receiver's port is bound but not listening: connections are refused. */
static void test_push__refused_spooled_then_sent(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;
	char path[512];
	struct dirent *de;
	struct stat st;
	DIR *d;

	receiver_start(&fx->r, true);
	o = fast_opts(fx, fx->tmp);
	o.max_tries = 2;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, spooled, 1);
	assert_int_equal(STAT(fx->push, retried), 1);
	assert_int_equal(STAT(fx->push, failed), 0);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 1);
	/* 0600, in a 0700 directory. */
	d = opendir(spool_dir(fx));
	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(path, sizeof(path), "%s/%s", spool_dir(fx), de->d_name);
	closedir(d);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(spool_dir(fx), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	receiver_cmd(&fx->r, "listen");
	POLL_UNTIL(fx->push, spool_sent, 1);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 0);
	assert_int_equal(received(&fx->r), 1);
	assert_has(meta(&fx->r, 1), "\"service_name\": \"svc-a\"");
	assert_has(meta(&fx->r, 1), "\"__name__\": \"process_cpu\"");
	assert_has(meta(&fx->r, 1), "\"env\": \"test\"");
	assert_body(fx, 1);
	assert_int_equal(STAT(fx->push, sent), 0);
	assert_int_equal(STAT(fx->push, dropped), 0);
}

/* Accepted, never answered: the request times out, is retried, then spooled. */
static void test_push__stalled_spooled_then_sent(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	receiver_cmd(&fx->r, "stall 1000");
	o = fast_opts(fx, fx->tmp);
	o.max_tries = 2;
	o.timeout_ms = 300;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, spooled, 1);
	assert_int_equal(STAT(fx->push, retried), 1);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 1);
	receiver_cmd(&fx->r, "ok");
	POLL_UNTIL(fx->push, spool_sent, 1);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 0);
	assert_int_equal(received(&fx->r), 1);
	assert_body(fx, 1);
}

/* A spool file last written two hours ago is deleted unsent when the spool is next scanned. */
static void test_push__old_spool_file_aged_out(void **state)
{
	struct fixture *fx = *state;
	struct timespec old[2];
	struct push_opts o;
	char path[512];
	struct dirent *de;
	DIR *d;

	receiver_start(&fx->r, true);
	o = fast_opts(fx, fx->tmp);
	o.max_tries = 1;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, spooled, 1);
	push__free(fx->push);
	fx->push = NULL;

	d = opendir(spool_dir(fx));
	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(path, sizeof(path), "%s/%s", spool_dir(fx), de->d_name);
	closedir(d);
	clock_gettime(CLOCK_REALTIME, &old[0]);
	old[0].tv_sec -= 7200;
	old[1] = old[0];
	assert_int_equal(utimensat(AT_FDCWD, path, old, 0), 0);

	receiver_cmd(&fx->r, "listen");
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(STAT(fx->push, aged_out), 1);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(push__poll(fx->push), 0);
	assert_int_equal(STAT(fx->push, spool_sent), 0);
	assert_int_equal(received(&fx->r), 0);
}

static void test_push__full_queue_counts_drops(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, true);
	o = fast_opts(fx, NULL);
	o.queue_max = 2;
	assert_int_equal(push__new(&fx->push, &o), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(submit(fx), 0);
	assert_int_equal(STAT(fx->push, submitted), 5);
	assert_int_equal(STAT(fx->push, dropped), 3);
	assert_int_equal(STAT(fx->push, spooled), 0);
}

static void test_push__full_queue_spools(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, true);
	o = fast_opts(fx, fx->tmp);
	o.queue_max = 1;
	assert_int_equal(push__new(&fx->push, &o), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(submit(fx), 0);
	assert_int_equal(STAT(fx->push, spooled), 2);
	assert_int_equal(STAT(fx->push, dropped), 0);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 2);
}

static void test_push__spool_bounded(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, true);
	o = fast_opts(fx, fx->tmp);
	o.queue_max = 1;
	o.spool_max_files = 2;
	assert_int_equal(push__new(&fx->push, &o), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(submit(fx), 0);
	assert_int_equal(STAT(fx->push, spooled), 2);
	assert_int_equal(STAT(fx->push, dropped), 2);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 2);
}

static void test_push__env_bearer_and_tenant_reach_headers(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	setenv("BPFTRACE_PROF_PUSH_TOKEN", "tok-123", 1);
	setenv("BPFTRACE_PROF_PUSH_TENANT", "team-a", 1);
	o = fast_opts(fx, NULL);
	assert_int_equal(push__new(&fx->push, &o), 0);
	unsetenv("BPFTRACE_PROF_PUSH_TOKEN");
	unsetenv("BPFTRACE_PROF_PUSH_TENANT");
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	assert_has(meta(&fx->r, 1), "\"authorization\": \"Bearer tok-123\"");
	assert_has(meta(&fx->r, 1), "\"tenant\": \"team-a\"");
}

/* Read once, then gone from our environment: unset, and the value's bytes wiped where they were
 * (what /proc/self/environ shows). */
static void test_push__env_secrets_taken(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o = {.url = "http://127.0.0.1:9"};
	char *tok, *pw, *ten;

	setenv("BPFTRACE_PROF_PUSH_TOKEN", "tok-123", 1);
	setenv("BPFTRACE_PROF_PUSH_PASSWORD", "pw-456", 1);
	setenv("BPFTRACE_PROF_PUSH_TENANT", "team-a", 1);
	tok = getenv("BPFTRACE_PROF_PUSH_TOKEN");
	pw = getenv("BPFTRACE_PROF_PUSH_PASSWORD");
	ten = getenv("BPFTRACE_PROF_PUSH_TENANT");
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_null(getenv("BPFTRACE_PROF_PUSH_TOKEN"));
	assert_null(getenv("BPFTRACE_PROF_PUSH_PASSWORD"));
	assert_null(getenv("BPFTRACE_PROF_PUSH_TENANT"));
	assert_int_equal(tok[0] | pw[0] | ten[0], 0);
}

static void test_push__env_basic_auth_reaches_headers(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	setenv("BPFTRACE_PROF_PUSH_USER", "alice", 1);
	setenv("BPFTRACE_PROF_PUSH_PASSWORD", "s3cret", 1);
	o = fast_opts(fx, NULL);
	assert_int_equal(push__new(&fx->push, &o), 0);
	unsetenv("BPFTRACE_PROF_PUSH_USER");
	unsetenv("BPFTRACE_PROF_PUSH_PASSWORD");
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	/* base64("alice:s3cret") */
	assert_has(meta(&fx->r, 1), "\"authorization\": \"Basic YWxpY2U6czNjcmV0\"");
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_push__auth_file_checked_and_used(void **state)
{
	struct fixture *fx = *state;
	char path[128];
	struct push_opts o;

	receiver_start(&fx->r, false);
	snprintf(path, sizeof(path), "%s/auth", fx->tmp);
	o = fast_opts(fx, NULL);
	o.auth_file = path;

	write_file(path, "# push credentials\ntoken=from-file\ntenant=t2\n", 0644);
	assert_int_equal(push__new(&fx->push, &o), -EPERM);
	assert_null(fx->push);
	write_file(path, "tokn=x\n", 0600);
	assert_int_equal(push__new(&fx->push, &o), -EINVAL);

	/* The file wins over the environment. */
	setenv("BPFTRACE_PROF_PUSH_TOKEN", "from-env", 1);
	write_file(path, "# push credentials\ntoken=from-file\r\ntenant=t2\n", 0600);
	assert_int_equal(push__new(&fx->push, &o), 0);
	unsetenv("BPFTRACE_PROF_PUSH_TOKEN");
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	assert_has(meta(&fx->r, 1), "\"authorization\": \"Bearer from-file\"");
	assert_has(meta(&fx->r, 1), "\"tenant\": \"t2\"");
}

/* A token as long as the auth file allows reaches the backend whole (a 2 KiB header buffer
 * used to cut it: 401 for every profile). */
static void test_push__long_token_whole(void **state)
{
	struct fixture *fx = *state;
	static char text[4096], want[4200];
	char path[128];
	struct push_opts o;

	receiver_start(&fx->r, false);
	snprintf(path, sizeof(path), "%s/auth", fx->tmp);
	strcpy(text, "token=");
	for (int i = 0; i < 4000; i++)
		text[6 + i] = "abcdefghijklmnopqrstuvwxyz0123456789"[i % 36];
	snprintf(want, sizeof(want), "\"authorization\": \"Bearer %s\"", text + 6);
	strcat(text, "\ntenant=");
	for (int i = 0; i < 80; i++)
		strcat(text, "t");
	strcat(text, "\n");
	write_file(path, text, 0600);
	o = fast_opts(fx, NULL);
	o.auth_file = path;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, sent, 1);
	assert_has(meta(&fx->r, 1), want);
	assert_int_equal(STAT(fx->push, auth_failed), 0);
}

/* 401 and 403 say the credentials are wrong: the profiles wait in the spool (not dropped as
 * other 4xx are), counted, and go once the backend takes them. */
static void test_push__401_403_spooled_not_dropped(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	receiver_cmd(&fx->r, "fail 401 1");
	receiver_cmd(&fx->r, "fail 403 1");
	o = fast_opts(fx, fx->tmp);
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	assert_int_equal(submit(fx), 0);
	POLL_UNTIL(fx->push, spooled, 2);
	assert_int_equal(STAT(fx->push, auth_failed), 2);
	assert_int_equal(STAT(fx->push, failed), 0);
	assert_int_equal(STAT(fx->push, dropped), 0);
	assert_int_equal(STAT(fx->push, retried), 0);
	assert_int_equal(requests(&fx->r, 401), 1);
	assert_int_equal(requests(&fx->r, 403), 1);
	POLL_UNTIL(fx->push, spool_sent, 2);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 0);
	assert_int_equal(received(&fx->r), 2);
	assert_body(fx, 1);
}

/* user:password@ in the URL is refused: the URL is on the command line, in every profile. */
static void test_push__url_credentials_refused(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o = {.url = "https://alice:tok-123@127.0.0.1:9/"};

	assert_int_equal(push__new(&fx->push, &o), -EINVAL);
	assert_null(fx->push);
	assert_true(push__url_has_credentials("http://tok@pyroscope:4040"));
	assert_true(push__url_has_credentials("https://a:b@h/x"));
	assert_false(push__url_has_credentials("https://h:4040/a@b"));
	assert_false(push__url_has_credentials("https://h?x=a@b"));
	assert_false(push__url_has_credentials("http://[::1]:4040/"));
	assert_true(push__is_secret_env("BPFTRACE_PROF_PUSH_TOKEN=x"));
	assert_true(push__is_secret_env("BPFTRACE_PROF_PUSH_TENANT="));
	assert_false(push__is_secret_env("PATH=/bin"));
	assert_false(push__is_secret_env("BPFTRACE_PROF_PUS"));
}

/* More services than max_series in one profile: max_series requests, the last one "other". */
static void test_push__submit_profile_caps_series(void **state)
{
	struct profile_mapping m = {0x1000, 0x2000, 0, "/bin/app", "", true};
	struct fixture *fx = *state;
	struct push_opts o;
	struct profile *p;
	uint32_t mid, fid, lid;
	int other = 0;
	char name[16];

	receiver_start(&fx->r, false);
	o = fast_opts(fx, NULL);
	o.max_series = 4;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	p->time_nanos = FROM_NS;
	p->duration_nanos = DUR_NS;
	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	assert_int_equal(profile__function(p, &fid, "spin", "spin", "", 0), 0);
	assert_int_equal(profile__location(p, &lid, 0x1100, mid, fid, 0), 0);
	for (int i = 1; i <= 70; i++) {
		int64_t v[1] = {i};

		snprintf(name, sizeof(name), "proc%d", i);
		assert_int_equal(profile__add_sample(p, i, i, name, name, &lid, 1, v, false), 0);
	}
	assert_int_equal(push__submit_profile(fx->push, p), 0);
	profile__free(p);
	assert_int_equal(STAT(fx->push, submitted), 4);
	assert_int_equal(STAT(fx->push, series_folded), 67);
	assert_int_equal(STAT(fx->push, build_failed), 0);
	POLL_UNTIL(fx->push, sent, 4);
	assert_int_equal(received(&fx->r), 4);
	for (int i = 1; i <= 4; i++)
		other += strstr(meta(&fx->r, i), "\"service_name\": \"other\"") != NULL;
	assert_int_equal(other, 1);
}

/* A failed allocation returns NULL, as without ASan (test_push__split_failure_counted). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

/* Our address space now, in bytes (VmSize). */
static uint64_t vm_size(void)
{
	char line[128];
	uint64_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %" SCNu64, &kb) == 1)
			break;
	fclose(f);
	assert_true(kb > 0);
	return kb << 10;
}

/* Allocations fail (a real RLIMIT_AS, in a child): the profile that cannot be split is counted
 * in push_build_failed, not only logged.  Splitting 100,000 samples takes a 2.4 MB array; the
 * limit leaves 1 MB. */
static void test_push__split_failure_counted(void **state)
{
	struct profile_mapping m = {0x1000, 0x2000, 0, "/bin/app", "", true};
	struct fixture *fx = *state;
	struct push_opts o = {.url = "http://127.0.0.1:9"};
	struct profile *p;
	uint32_t mid, fid, lid;
	int status;
	pid_t pid;

	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(profile__new(&p, "cpu"), 0);
	assert_int_equal(profile__add_type(p, "samples", "count"), 0);
	p->time_nanos = FROM_NS;
	p->duration_nanos = DUR_NS;
	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	assert_int_equal(profile__function(p, &fid, "spin", "spin", "", 0), 0);
	assert_int_equal(profile__location(p, &lid, 0x1100, mid, fid, 0), 0);
	for (uint32_t i = 1; i <= 100000; i++) {
		int64_t v[1] = {1};

		assert_int_equal(profile__add_sample(p, i, i, "app", "app", &lid, 1, v, false), 0);
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint64_t limit = vm_size() + (1 << 20);
		struct rlimit rl = {limit, limit};
		int err;

		alarm(30); /* a hang fails the test too */
		if (setrlimit(RLIMIT_AS, &rl))
			_exit(10);
		err = push__submit_profile(fx->push, p);
		if (err != -ENOMEM)
			_exit(11);
		if (STAT(fx->push, build_failed) != 1 || STAT(fx->push, submitted) != 0)
			_exit(12);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* Without the limit the same profile goes (one service). */
	assert_int_equal(push__submit_profile(fx->push, p), 0);
	assert_int_equal(STAT(fx->push, build_failed), 0);
	assert_int_equal(STAT(fx->push, submitted), 1);
	profile__free(p);
}

/* At exit, what cannot be sent in time goes to the spool. */
static void test_push__flush_spools_the_rest(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;

	receiver_start(&fx->r, false);
	receiver_cmd(&fx->r, "stall 1000");
	o = fast_opts(fx, fx->tmp);
	o.timeout_ms = 60000;
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(submit(fx), 0);
	assert_int_equal(submit(fx), 0);
	assert_int_equal(push__flush(fx->push, 300), 0);
	assert_int_equal(STAT(fx->push, spooled), 2);
	assert_int_equal(STAT(fx->push, sent), 0);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 2);
	assert_true(push__timeout_ms(fx->push) >= 0); /* the spool waits its turn */
}

/* A whole profile: one request per service, each labelled with its service_name. */
static void test_push__submit_profile_one_series_per_service(void **state)
{
	struct profile_mapping m = {0x1000, 0x2000, 0, "/bin/app", "", true};
	struct fixture *fx = *state;
	int64_t v[2] = {1, 10};
	struct push_opts o;
	struct profile *p;
	uint32_t mid, fid, lid;
	bool seen_a = false, seen_c = false;

	receiver_start(&fx->r, false);
	o = fast_opts(fx, NULL);
	assert_int_equal(push__new(&fx->push, &o), 0);
	assert_int_equal(profile__new(&p, "heap"), 0);
	assert_int_equal(profile__add_type(p, "alloc_space", "bytes"), 0);
	assert_int_equal(profile__add_type(p, "inuse_space", "bytes"), 0);
	p->time_nanos = FROM_NS;
	p->duration_nanos = DUR_NS;
	assert_int_equal(profile__mapping(p, &mid, &m), 0);
	assert_int_equal(profile__function(p, &fid, "leak", "leak", "", 0), 0);
	assert_int_equal(profile__location(p, &lid, 0x1100, mid, fid, 0), 0);
	assert_int_equal(profile__add_sample(p, 5, 5, "a", "alpha", &lid, 1, v, false), 0);
	assert_int_equal(profile__add_sample(p, 6, 6, "c", "ctr", &lid, 1, v, false), 0);
	assert_int_equal(profile__set_process(p, &(struct profile_process){6, 1, "c0ffee", "/x"}),
			 0);
	assert_int_equal(push__submit_profile(fx->push, p), 0);
	profile__free(p);
	POLL_UNTIL(fx->push, sent, 2);
	assert_int_equal(received(&fx->r), 2);
	for (int i = 1; i <= 2; i++) {
		const char *mt = meta(&fx->r, i);

		assert_has(mt, "\"__name__\": \"memory\"");
		assert_has(mt, "\"hostname\": \"");
		if (strstr(mt, "\"service_name\": \"alpha\"")) {
			seen_a = true;
		} else {
			assert_has(mt, "\"service_name\": \"c0ffee\"");
			assert_has(mt, "\"container_id\": \"c0ffee\"");
			seen_c = true;
		}
	}
	assert_true(seen_a && seen_c);
}

/* The spool is never reached through a symbolic link. */
static void test_push__spool_symlink_refused(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o = {.url = "http://127.0.0.1:9", .spool_dir = fx->tmp};
	char target[96];

	snprintf(target, sizeof(target), "%s/elsewhere", fx->tmp);
	assert_int_equal(mkdir(target, 0700), 0);
	assert_int_equal(symlink(target, spool_dir(fx)), 0);
	/* O_DIRECTORY | O_NOFOLLOW on a symbolic link: ENOTDIR, the link is not followed. */
	assert_int_equal(push__new(&fx->push, &o), -ENOTDIR);
	assert_null(fx->push);
}

/* A spool file that is not ours (or damaged) is deleted and counted, not sent. */
static void test_push__bad_spool_file_dropped(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o;
	char path[128];

	receiver_start(&fx->r, false);
	o = fast_opts(fx, fx->tmp);
	assert_int_equal(mkdir(spool_dir(fx), 0700), 0);
	snprintf(path, sizeof(path), "%s/0000000000000000001-1-1.spool", spool_dir(fx));
	write_file(path, "bpftrace-prof push spool 1\nname x\ndata 999\nshort", 0600);
	assert_int_equal(push__new(&fx->push, &o), 0);
	POLL_UNTIL(fx->push, dropped, 1);
	assert_int_equal(count_files(spool_dir(fx), ".spool"), 0);
	assert_int_equal(STAT(fx->push, spool_sent), 0);
	assert_int_equal(received(&fx->r), 0);
}

static void test_push__bad_url_refused(void **state)
{
	struct fixture *fx = *state;
	struct push_opts o = {.url = "ftp://x"};

	assert_int_equal(push__new(&fx->push, &o), -EINVAL);
	assert_null(fx->push);
}

static void test_push__protocol_names(void **state)
{
	enum push_protocol pr;

	(void)state;
	assert_int_equal(push__parse_protocol(&pr, "pyroscope"), 0);
	assert_int_equal(pr, PUSH_PYROSCOPE);
	assert_int_equal(push__parse_protocol(&pr, "pyroscope-ingest"), 0);
	assert_int_equal(pr, PUSH_PYROSCOPE_INGEST);
	assert_int_equal(push__parse_protocol(&pr, "parca"), 0);
	assert_int_equal(pr, PUSH_PARCA);
	assert_int_equal(push__parse_protocol(&pr, "otlp"), 0);
	assert_int_equal(pr, PUSH_OTLP);
	assert_int_equal(push__parse_protocol(&pr, "OTLP"), -EINVAL);
	assert_int_equal(push__parse_protocol(&pr, "otlp-grpc"), -EINVAL);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_push__pyroscope_delivers_labels_and_times),
		T(test_push__ingest_delivers_name_and_range),
		T(test_push__parca_delivers_labels),
		T(test_push__500_retried_then_delivered),
		T(test_push__429_retried),
		T(test_push__400_final_not_retried),
		T(test_push__refused_spooled_then_sent),
		T(test_push__stalled_spooled_then_sent),
		T(test_push__old_spool_file_aged_out),
		T(test_push__full_queue_counts_drops),
		T(test_push__full_queue_spools),
		T(test_push__spool_bounded),
		T(test_push__env_bearer_and_tenant_reach_headers),
		T(test_push__env_basic_auth_reaches_headers),
		T(test_push__env_secrets_taken),
		T(test_push__auth_file_checked_and_used),
		T(test_push__flush_spools_the_rest),
		T(test_push__long_token_whole),
		T(test_push__401_403_spooled_not_dropped),
		T(test_push__url_credentials_refused),
		T(test_push__submit_profile_caps_series),
		T(test_push__split_failure_counted),
		T(test_push__submit_profile_one_series_per_service),
		T(test_push__spool_symlink_refused),
		T(test_push__bad_spool_file_dropped),
		T(test_push__bad_url_refused),
		T(test_push__protocol_names),
	};
#undef T

	return cmocka_run_group_tests_name("push", tests, NULL, NULL);
}
