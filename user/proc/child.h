/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `-- CMD`: the child we start ourselves.  It waits between fork and exec until the probes are
 * attached (child__release), may be ptrace-seized so that it (and, with the caller's options,
 * its whole tree) stops at exit and exec, and ends with a shell-style exit status.  The stops
 * that need the collector reach it through hooks: this layer knows processes, not profiles.
 */
#ifndef PROF_CHILD_H
#define PROF_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct child {
	pid_t pid;
	int pidfd;  /* signals reach this child only, never a process that reuses its pid */
	int go_fd;  /* write a byte: the child may exec */
	int err_fd; /* exec failure: the child writes errno here (closed on exec) */
	int status; /* its wait status, once exited */
	bool exited;
	bool traced; /* ptrace-seized: it stops at exit so its maps can be read one last time */
};

/* No child yet: every fd closed. */
#define CHILD_INIT                                     \
	{                                              \
		.pidfd = -1, .go_fd = -1, .err_fd = -1 \
	}

/* What the ptrace stops of CMD's tree ask of the caller.  A NULL hooks pointer: none asked
 * (every stop continues as if each hook had declined). */
struct child_hooks {
	void *ctx;
	/* The exit stop of a process (not a thread): its address space is still intact. */
	void (*exiting)(void *ctx, uint32_t pid);
	/* The exec stop of pid; true: the caller holds it and continues it later itself. */
	bool (*exec_stop)(void *ctx, uint32_t pid);
	/* A SIGSTOP sent by the kernel (a dlopen hold's bpf_send_signal) to thread tid of tgid;
	 * true: held, the caller continues it; false: continued without the signal. */
	bool (*kernel_sigstop)(void *ctx, uint32_t tgid, uint32_t tid);
};

/*
 * Fork CMD (cmd[0] looked up in $PATH at exec) stopped before its exec; its environment is ours
 * without the entries hide_env (may be NULL) returns true for, and with set_env's "NAME=value"
 * entries (NULL-terminated, may be NULL) in place of ours of the same names.  0 or -errno.
 */
int child__spawn(struct child *c, char *const *cmd, bool (*hide_env)(const char *entry),
		 const char *const *set_env);
/* PTRACE_SEIZE with options (PTRACE_O_*): 0 (c->traced) or -errno. */
int child__seize(struct child *c, long options);
/* Let it exec: 0 once it has, or the exec's errno as -errno (then it has been reaped). */
int child__release(struct child *c);
/*
 * Reap CMD or handle the ptrace stops of its tree until CMD has exited.  flags: WNOHANG or 0
 * (wait for the exit).  We have no other children: every report is CMD's or a tracee's.
 */
void child__wait(struct child *c, const struct child_hooks *hooks, int flags);
/* Never released: let it go away without running CMD, and reap it. */
void child__abandon(struct child *c, const struct child_hooks *hooks);
/* Its fds closed (the child itself untouched). */
void child__close(struct child *c);
/* A wait status as a shell reports it: the exit code, or 128 + the signal that killed it. */
int child__exit_status(int wait_status);

#endif /* PROF_CHILD_H */
