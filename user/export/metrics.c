// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/metrics.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "util/clock.h"
#include "util/log.h"

struct metrics {
	int listen_fd;
	int stop[2]; /* a byte on stop[1] ends the thread */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	char *text; /* what GET /metrics answers; guarded by lock */
	size_t len;
};

int metrics__parse_addr(const char *spec, struct sockaddr_storage *sa, socklen_t *len)
{
	char host[64] = METRICS_DEFAULT_ADDR, *end;
	const char *port = spec, *colon;
	unsigned long p;

	memset(sa, 0, sizeof(*sa));
	if (!spec || !*spec)
		return -EINVAL;
	if (spec[0] == '[') { /* [v6]:port */
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = 0;
		port = close + 2;
	} else if ((colon = strrchr(spec, ':'))) {
		if ((size_t)(colon - spec) >= sizeof(host) || colon == spec)
			return -EINVAL;
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = 0;
		port = colon + 1;
	}
	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p == 0 || p > 65535 || *port == '-' || *port == '+')
		return -EINVAL;
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)p);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)sa;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)p);
		*len = sizeof(*a);
	}
	return 0;
}

static void send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n <= 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the client went, or stalled past the timeout */
		buf += n;
		len -= (size_t)n;
	}
}

static void answer(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n",
			 status, type, len);

	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

/* One request: its head read (capped in bytes and time), one answer, closed. */
static void serve(struct metrics *m, int fd)
{
	char req[METRICS_REQUEST_MAX + 1];
	int64_t deadline = clock__mono_ns() + (int64_t)METRICS_TIMEOUT_MS * 1000000;
	size_t got = 0;
	char *body = NULL;
	size_t len = 0;

	while (got < METRICS_REQUEST_MAX) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = (deadline - clock__mono_ns()) / 1000000;
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return;
		n = recv(fd, req + got, METRICS_REQUEST_MAX - got, 0);
		if (n <= 0)
			return;
		got += (size_t)n;
		req[got] = 0;
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[got] = 0;
	if (strncmp(req, "GET ", 4)) {
		answer(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
		return;
	}
	if (strncmp(req + 4, "/metrics", 8) || (req[12] != ' ' && req[12] != '?')) {
		answer(fd, "404 Not Found", "text/plain", "/metrics only\n", 14);
		return;
	}
	pthread_mutex_lock(&m->lock);
	if (m->text && (body = malloc(m->len ? m->len : 1))) {
		memcpy(body, m->text, m->len);
		len = m->len;
	}
	pthread_mutex_unlock(&m->lock);
	if (!body) {
		answer(fd, "503 Service Unavailable", "text/plain", "not ready\n", 10);
		return;
	}
	answer(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
	free(body);
}

static void *server(void *arg)
{
	struct metrics *m = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = m->listen_fd, .events = POLLIN},
				      {.fd = m->stop[0], .events = POLLIN}};
		struct timeval tv = {.tv_sec = METRICS_TIMEOUT_MS / 1000};
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		serve(m, fd);
		close(fd);
	}
	return NULL;
}

int metrics__start(struct metrics **out, const char *spec)
{
	struct sockaddr_storage sa;
	struct metrics *m;
	socklen_t len;
	int one = 1, err;

	*out = NULL;
	err = metrics__parse_addr(spec, &sa, &len);
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->stop[0] = m->stop[1] = -1;
	pthread_mutex_init(&m->lock, NULL);
	m->listen_fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->listen_fd < 0 ||
	    setsockopt(m->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->listen_fd, (struct sockaddr *)&sa, len) || listen(m->listen_fd, 16) ||
	    pipe2(m->stop, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	err = -pthread_create(&m->thread, NULL, server, m);
	if (err)
		goto fail;
	m->started = true;
	*out = m;
	return 0;
fail:
	metrics__free(m);
	return err;
}

void metrics__free(struct metrics *m)
{
	if (!m)
		return;
	if (m->started) {
		char c = 0;

		if (write(m->stop[1], &c, 1) == 1)
			pthread_join(m->thread, NULL);
	}
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	for (int i = 0; i < 2; i++)
		if (m->stop[i] >= 0)
			close(m->stop[i]);
	pthread_mutex_destroy(&m->lock);
	free(m->text);
	free(m);
}

int metrics__set(struct metrics *m, const char *text, size_t len)
{
	char *copy = malloc(len ? len : 1), *old;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	pthread_mutex_lock(&m->lock);
	old = m->text;
	m->text = copy;
	m->len = len;
	pthread_mutex_unlock(&m->lock);
	free(old);
	return 0;
}

/* A HELP text: backslash and newline escaped, as the format asks. */
static void help(FILE *f, const char *name, const char *text)
{
	fprintf(f, "# HELP %s ", name);
	for (const char *s = text ? text : ""; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('\n', f);
}

/* bpftrace_prof_<name><suffix>, with any byte a metric name cannot hold as '_'. */
static void metric_name(char *out, size_t size, const char *name, const char *suffix)
{
	size_t n = (size_t)snprintf(out, size, "bpftrace_prof_%s%s", name, suffix);

	for (size_t i = 0; i < n && i < size - 1; i++)
		if (!((out[i] >= 'a' && out[i] <= 'z') || (out[i] >= 'A' && out[i] <= 'Z') ||
		      (out[i] >= '0' && out[i] <= '9') || out[i] == '_'))
			out[i] = '_';
}

static void gauge(FILE *f, const char *name, const char *text, uint64_t v)
{
	char full[128];

	metric_name(full, sizeof(full), name, "");
	help(f, full, text);
	fprintf(f, "# TYPE %s gauge\n%s %" PRIu64 "\n", full, full, v);
}

int metrics__render(char **out, size_t *len, const struct profile *p,
		    const struct metrics_gauges *g)
{
	FILE *f = open_memstream(out, len);
	char name[128];

	if (!f)
		return -ENOMEM;
	fprintf(f,
		"# HELP bpftrace_prof_build_info bpftrace-prof's version\n"
		"# TYPE bpftrace_prof_build_info gauge\n"
		"bpftrace_prof_build_info{version=\"%s\"} 1\n",
		PROF_VERSION);
	gauge(f, "resident_memory_bytes", "bpftrace-prof's resident memory", g->rss_bytes);
	gauge(f, "bpf_map_bytes", "kernel memory of bpftrace-prof's BPF maps", g->bpf_map_bytes);
	gauge(f, "processes_tracked", "processes followed now", g->processes_tracked);
	gauge(f, "uptime_seconds", "seconds since profiling started", g->uptime_ns / 1000000000);
	gauge(f, "backlog_bytes",
	      "memory of the backlog (--backlog): records moved out of the ring buffer, not yet "
	      "read, and a spare chunk",
	      g->backlog.held);
	fprintf(f,
		"# HELP bpftrace_prof_events_total ring-buffer records consumed\n"
		"# TYPE bpftrace_prof_events_total counter\n"
		"bpftrace_prof_events_total %" PRIu64 "\n"
		"# HELP bpftrace_prof_backlog_full_total times the backlog was full while records "
		"waited in the ring buffer\n"
		"# TYPE bpftrace_prof_backlog_full_total counter\n"
		"bpftrace_prof_backlog_full_total %" PRIu64 "\n",
		g->events, g->backlog.full);
	for (uint32_t i = 0; p && i < p->ncounters; i++) {
		const struct profile_counter *c = &p->counters[i];
		bool seen = false;

		/* A name twice in the lists: its first value only (a series is unique). */
		for (uint32_t k = 0; k < i && !seen; k++)
			seen = !strcmp(p->counters[k].name, c->name);
		if (seen)
			continue;
		metric_name(name, sizeof(name), c->name, "_total");
		help(f, name, c->desc);
		fprintf(f, "# TYPE %s counter\n%s %" PRIu64 "\n", name, name, c->value);
	}
	if (fclose(f)) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Maps counted at most (ours are a few dozen). */
#define METRICS_MAPS_MAX 1024

/* The memlock of each BPF map among our descriptors (/proc/self/fdinfo), summed, each map once
 * however many descriptors it has. */
static uint64_t bpf_map_bytes(void)
{
	DIR *d = opendir("/proc/self/fdinfo");
	uint32_t ids[METRICS_MAPS_MAX];
	unsigned nids = 0;
	struct dirent *e;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && nids < METRICS_MAPS_MAX) {
		char path[64], line[256];
		bool map = false, seen = false;
		uint64_t memlock = 0;
		uint32_t id = 0;
		FILE *f;

		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		/* Most of our descriptors are links and perf events: only maps' fdinfo is read. */
		snprintf(path, sizeof(path), "/proc/self/fd/%.32s", e->d_name);
		n = readlink(path, line, sizeof(line) - 1);
		if (n <= 0 || (size_t)n != strlen("anon_inode:bpf-map") ||
		    memcmp(line, "anon_inode:bpf-map", (size_t)n))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%.32s", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "map_type:", 9))
				map = true;
			else if (!strncmp(line, "memlock:", 8))
				memlock = strtoull(line + 8, NULL, 10);
			else if (!strncmp(line, "map_id:", 7))
				id = (uint32_t)strtoul(line + 7, NULL, 10);
		}
		fclose(f);
		for (unsigned i = 0; i < nids && !seen; i++)
			seen = ids[i] == id;
		if (!map || seen)
			continue;
		ids[nids++] = id;
		sum += memlock;
	}
	closedir(d);
	return sum;
}

void metrics__read_self(struct metrics_gauges *g)
{
	unsigned long long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%llu %llu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	g->rss_bytes = (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
	g->bpf_map_bytes = bpf_map_bytes();
}
