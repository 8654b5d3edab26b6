/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Diagnostics on stderr, filtered by -v/-q.  libbpf's messages go through the same printer. */
#ifndef PROF_LOG_H
#define PROF_LOG_H

enum log_level {
	LOG_ERROR = -1, /* always shown, even with -q */
	LOG_WARN = 0,	/* shown unless -q */
	LOG_INFO = 1,	/* -v */
	LOG_DEBUG = 2,	/* -vv */
	LOG_LIBBPF = 3, /* -vvv: libbpf's own messages */
};

void log__set_verbosity(int v);
void log__printf(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What the run does and what it wrote (the start lines, "wrote …"): shown unless -q, as plain
 * "bpftrace-prof: " lines, not warnings. */
void log__note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Called, under stderr's lock, before any line is printed: the status line (export/status.h)
 * clears itself there.  NULL: none. */
void log__set_line_hook(void (*fn)(void *ctx), void *ctx);
/* Install as libbpf's print callback. */
void log__hook_libbpf(void);

#define pr_err(...)   log__printf(LOG_ERROR, __VA_ARGS__)
#define pr_warn(...)  log__printf(LOG_WARN, __VA_ARGS__)
#define pr_info(...)  log__printf(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log__printf(LOG_DEBUG, __VA_ARGS__)
#define pr_note(...)  log__note(__VA_ARGS__)

#endif /* PROF_LOG_H */
