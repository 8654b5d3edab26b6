// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --metrics: addresses parsed (the loopback by default), the exposition text of a run's counters
 * (HELP/TYPE lines, a name once), and the server answering GET /metrics, 404 and 405 over a real
 * socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "export/metrics.h"
#include "profile/profile.h"

static void test_metrics__parse_addr(void **state)
{
	struct sockaddr_storage sa;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&sa;
	socklen_t len;

	(void)state;
	assert_int_equal(metrics__parse_addr("9464", &sa, &len), 0);
	assert_int_equal(a4->sin_family, AF_INET);
	assert_int_equal(ntohl(a4->sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(ntohs(a4->sin_port), 9464);
	assert_int_equal(metrics__parse_addr("0.0.0.0:80", &sa, &len), 0);
	assert_int_equal(a4->sin_addr.s_addr, 0);
	assert_int_equal(metrics__parse_addr("[::1]:9464", &sa, &len), 0);
	assert_int_equal(a6->sin6_family, AF_INET6);
	assert_int_equal(len, sizeof(*a6));
	assert_int_equal(metrics__parse_addr("", &sa, &len), -EINVAL);
	assert_int_equal(metrics__parse_addr("0", &sa, &len), -EINVAL);
	assert_int_equal(metrics__parse_addr("65536", &sa, &len), -EINVAL);
	assert_int_equal(metrics__parse_addr("-1", &sa, &len), -EINVAL);
	assert_int_equal(metrics__parse_addr("localhost:80", &sa, &len), -EINVAL);
	assert_int_equal(metrics__parse_addr(":80", &sa, &len), -EINVAL);
	assert_int_equal(metrics__parse_addr("[::1]80", &sa, &len), -EINVAL);
	assert_int_equal(metrics__parse_addr("1.2.3.4:80x", &sa, &len), -EINVAL);
}

static struct profile *counters(void)
{
	struct profile *p;

	assert_int_equal(profile__new(&p, "metrics"), 0);
	assert_int_equal(profile__add_counter_kind(p, "ringbuf_full", "lost\nrecords \\ full", 7,
						   PROF_KIND_DROP),
			 0);
	assert_int_equal(profile__add_counter_kind(p, "maps_reads", "reads", 3, PROF_KIND_BOOK), 0);
	/* the same name again: one series */
	assert_int_equal(profile__add_counter_kind(p, "ringbuf_full", "again", 9, PROF_KIND_DROP),
			 0);
	return p;
}

static void test_metrics__render(void **state)
{
	struct metrics_gauges g = {
		.rss_bytes = 4096, .processes_tracked = 2, .backlog = {.held = 1 << 20, .full = 5}};
	struct profile *p = counters();
	char *text;
	size_t len;

	(void)state;
	assert_int_equal(metrics__render(&text, &len, p, &g), 0);
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text,
			       "# HELP bpftrace_prof_ringbuf_full_total lost\\nrecords \\\\ full\n"
			       "# TYPE bpftrace_prof_ringbuf_full_total counter\n"
			       "bpftrace_prof_ringbuf_full_total 7\n"));
	assert_null(strstr(text, "bpftrace_prof_ringbuf_full_total 9"));
	assert_non_null(strstr(text, "bpftrace_prof_maps_reads_total 3\n"));
	assert_non_null(strstr(text, "# TYPE bpftrace_prof_resident_memory_bytes gauge\n"
				     "bpftrace_prof_resident_memory_bytes 4096\n"));
	assert_non_null(strstr(text, "bpftrace_prof_processes_tracked 2\n"));
	assert_non_null(strstr(text, "# TYPE bpftrace_prof_backlog_bytes gauge\n"
				     "bpftrace_prof_backlog_bytes 1048576\n"));
	assert_non_null(strstr(text, "# TYPE bpftrace_prof_backlog_full_total counter\n"
				     "bpftrace_prof_backlog_full_total 5\n"));
	assert_non_null(strstr(text, "bpftrace_prof_build_info{version=\""));
	free(text);
	profile__free(p);
}

/* request to port: the whole answer into out. */
static void ask(unsigned port, const char *request, char *out, size_t size)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(send(fd, request, strlen(request), 0), (ssize_t)strlen(request));
	while (got + 1 < size && (n = recv(fd, out + got, size - 1 - got, 0)) > 0)
		got += (size_t)n;
	out[got] = 0;
	close(fd);
}

static void test_metrics__serves(void **state)
{
	struct metrics *m = NULL;
	char spec[32], out[8192];
	unsigned port = 0;

	(void)state;
	/* a free port of the loopback, by trying */
	for (unsigned p = 19464 + (unsigned)getpid() % 1000; p < 19464 + 2000 && !m; p++) {
		snprintf(spec, sizeof(spec), "%u", p);
		if (!metrics__start(&m, spec))
			port = p;
	}
	assert_non_null(m);
	ask(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", out, sizeof(out));
	assert_non_null(strstr(out, "HTTP/1.1 503 "));
	assert_int_equal(metrics__set(m, "a_total 1\n", 10), 0);
	ask(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", out, sizeof(out));
	assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(out, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(out, "Content-Length: 10\r\n"));
	assert_non_null(strstr(out, "\r\n\r\na_total 1\n"));
	ask(port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n", out, sizeof(out));
	assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
	ask(port, "GET / HTTP/1.1\r\n\r\n", out, sizeof(out));
	assert_non_null(strstr(out, "HTTP/1.1 404 "));
	ask(port, "GET /metricsx HTTP/1.1\r\n\r\n", out, sizeof(out));
	assert_non_null(strstr(out, "HTTP/1.1 404 "));
	ask(port, "POST /metrics HTTP/1.1\r\n\r\n", out, sizeof(out));
	assert_non_null(strstr(out, "HTTP/1.1 405 "));
	/* the port is taken now: said at start */
	{
		struct metrics *again = NULL;

		assert_int_equal(metrics__start(&again, spec), -EADDRINUSE);
		assert_null(again);
	}
	metrics__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics__parse_addr),
		cmocka_unit_test(test_metrics__render),
		cmocka_unit_test(test_metrics__serves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
