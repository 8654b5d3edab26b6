// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "util/escape.h"

static int verbosity;
static void (*line_hook)(void *ctx);
static void *line_hook_ctx;

void log__set_verbosity(int v)
{
	verbosity = v;
}

/* One message, its arguments escaped: they carry names and paths that targets chose (and
 * libbpf's name the binaries it attaches to).  Our messages are one line each, so only the
 * final newline is ours; libbpf's may be many lines (the verifier's log): with lines, every
 * newline is kept and the rest escaped. */
static void emit(const char *prefix, bool lines, const char *fmt, va_list ap)
{
	char small[1024], *msg = small;
	const char *p, *nl, *end;
	va_list aq;
	size_t len;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	if (n < 0)
		goto cleanup;
	len = (size_t)n;
	if (len >= sizeof(small)) {
		msg = malloc(len + 1);
		if (msg)
			vsnprintf(msg, len + 1, fmt, aq);
		else
			msg = small, len = sizeof(small) - 1; /* cut rather than lost */
	}
	end = msg + (len && msg[len - 1] == '\n' ? len - 1 : len);
	flockfile(stderr);
	if (line_hook)
		line_hook(line_hook_ctx);
	fputs(prefix, stderr);
	for (p = msg; lines && (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
		escape__write(stderr, p, (size_t)(nl - p));
		fputc('\n', stderr);
	}
	escape__write(stderr, p, (size_t)(end - p));
	fputc('\n', stderr);
	funlockfile(stderr);
cleanup:
	if (msg != small)
		free(msg);
	va_end(aq);
}

void log__printf(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if ((int)lvl > verbosity)
		return;
	va_start(ap, fmt);
	emit(lvl == LOG_WARN ? "bpftrace-prof: warning: " : "bpftrace-prof: ", false, fmt, ap);
	va_end(ap);
}

void log__note(const char *fmt, ...)
{
	va_list ap;

	if (verbosity < LOG_WARN)
		return;
	va_start(ap, fmt);
	emit("bpftrace-prof: ", false, fmt, ap);
	va_end(ap);
}

void log__set_line_hook(void (*fn)(void *ctx), void *ctx)
{
	flockfile(stderr);
	line_hook = fn;
	line_hook_ctx = ctx;
	funlockfile(stderr);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (verbosity < LOG_LIBBPF && level != LIBBPF_WARN)
		return 0;
	if (verbosity < LOG_DEBUG)
		return 0; /* libbpf's warnings are noise unless asked for; our own errors explain */
	emit("", true, fmt, ap);
	return 0;
}

void log__hook_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
