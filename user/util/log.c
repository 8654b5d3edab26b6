// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

#include <bpf/libbpf.h>

static int verbosity;

void log__set_verbosity(int v)
{
	verbosity = v;
}

void log__printf(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	if ((int)lvl > verbosity)
		return;
	va_start(ap, fmt);
	/* One line whole: worker threads (symbolizer, unwinder, source copier) log too. */
	flockfile(stderr);
	fputs("bpftrace-prof: ", stderr);
	if (lvl == LOG_WARN)
		fputs("warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	funlockfile(stderr);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (verbosity < LOG_LIBBPF && level != LIBBPF_WARN)
		return 0;
	if (verbosity < LOG_DEBUG)
		return 0; /* libbpf's warnings are noise unless asked for; our own errors explain */
	return vfprintf(stderr, fmt, ap);
}

void log__hook_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
