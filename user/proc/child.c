// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/pidfd.h"
#include "proc/procinfo.h"
#include "util/fdlimit.h"
#include "util/log.h"

/* In the child, between fork and exec: wait for the go byte, then exec (errno to ef on failure).
 * Only async-signal-safe calls: another thread may hold a lock at fork. */
static void __attribute__((noreturn)) child_main(int go, int ef, char *const *cmd, char **envp)
{
	sigset_t none;
	char b;
	int e;

	/*
	 * CMD starts as if run by a shell: no signal ignored (we ignore SIGPIPE; whoever
	 * started us may ignore more) or blocked.  Handlers are reset by exec anyway;
	 * ignored ones would survive it.  The raw system calls: glibc refuses to touch the
	 * two signals it reserves (32, 33), and an ignored one is inherited all the same.
	 */
	for (int sig = 1; sig <= 64; sig++) {
		struct {
			void (*handler)(int);
			unsigned long flags;
			void (*restorer)(void);
			uint64_t mask;
		} dfl = {.handler = SIG_DFL};

		/* fails harmlessly for SIGKILL and SIGSTOP */
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(dfl.mask));
	}
	sigemptyset(&none);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(uint64_t));
	if (read(go, &b, 1) != 1)
		_exit(127); /* the profiler gave up */
	fdlimit__restore();
	execvpe(cmd[0], cmd, envp);
	e = errno;
	if (write(ef, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* entry sets the variable name (entry is "NAME=value")? */
static bool sets(const char *entry, const char *name_eq)
{
	const char *eq = strchr(name_eq, '=');

	return eq && !strncmp(entry, name_eq, (size_t)(eq - name_eq) + 1);
}

int child__spawn(struct child *c, char *const *cmd, bool (*hide_env)(const char *entry),
		 const char *const *set_env)
{
	extern char **environ;
	int go[2] = {-1, -1}, ef[2] = {-1, -1};
	char **envp = NULL;
	size_t n = 0;
	int err;

	/* CMD's environment is ours without what hide_env names (the --push credentials): built
	 * here, as the child may not allocate (a thread may hold malloc's lock at fork). */
	while (environ && environ[n])
		n++;
	for (size_t i = 0; set_env && set_env[i]; i++)
		n++;
	envp = calloc(n + 1, sizeof(*envp));
	if (!envp) {
		err = -ENOMEM;
		goto cleanup;
	}
	n = 0;
	for (char **e = environ; e && *e; e++) {
		bool replaced = false;

		for (size_t i = 0; set_env && set_env[i]; i++)
			replaced |= sets(*e, set_env[i]);
		if (!replaced && (!hide_env || !hide_env(*e)))
			envp[n++] = *e;
	}
	for (size_t i = 0; set_env && set_env[i]; i++)
		envp[n++] = (char *)set_env[i];
	if (pipe2(go, O_CLOEXEC) || pipe2(ef, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}
	c->pid = fork();
	if (c->pid < 0) {
		err = -errno;
		goto cleanup;
	}
	if (c->pid == 0) {
		close(go[1]);
		close(ef[0]);
		child_main(go[0], ef[1], cmd, envp);
	}
	close(go[0]);
	close(ef[1]);
	c->go_fd = go[1];
	c->err_fd = ef[0];
	go[0] = go[1] = ef[0] = ef[1] = -1; /* the child's now */
	/* Our child, not reaped yet: its pid cannot have been reused. */
	c->pidfd = pidfd__open(c->pid);
	if (c->pidfd < 0)
		pr_debug("pidfd_open(%d): %s\n", c->pid, strerror(-c->pidfd));
	err = 0;
cleanup:
	free(envp);
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (ef[i] >= 0)
			close(ef[i]);
	}
	return err;
}

int child__seize(struct child *c, long options)
{
	c->traced = ptrace(PTRACE_SEIZE, c->pid, 0, (void *)options) == 0;
	return c->traced ? 0 : -errno;
}

/*
 * One ptrace stop of a traced process p: CMD, or with --calls any process or thread of its tree
 * (fork, vfork and clone children are attached automatically and start stopped).
 */
static void tracee_stop(pid_t p, int st, const struct child_hooks *hooks)
{
	int sig = WSTOPSIG(st);
	uint32_t tgid;
	siginfo_t si;

	switch (st >> 16) {
	case PTRACE_EVENT_EXIT:
		/* At a process's exit stop its address space is still intact: the collector reads
		 * its maps and drains queued events so every stack gets symbolized, even for one
		 * that lives a few milliseconds.  A thread's exit changes no maps. */
		if (hooks && !procinfo__tgid(&tgid, (uint32_t)p) && tgid == (uint32_t)p)
			hooks->exiting(hooks->ctx, (uint32_t)p);
		ptrace(PTRACE_CONT, p, 0, 0);
		break;
	case PTRACE_EVENT_EXEC:
		/* The new image is mapped but has not run one instruction: attach to its runtime
		 * now, so its first call is seen. */
		if (hooks && hooks->exec_stop(hooks->ctx, (uint32_t)p))
			break; /* held until its unwind tables are loaded */
		ptrace(PTRACE_CONT, p, 0, 0);
		break;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		ptrace(PTRACE_CONT, p, 0, 0); /* SIGTRAP is ours, not the process's */
		break;
	case PTRACE_EVENT_STOP:
		/* A new child's first stop (SIGTRAP): let it run.  A group stop (SIGSTOP & co):
		 * stay stopped, keep tracing. */
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, p, 0, 0);
		else
			ptrace(PTRACE_CONT, p, 0, 0);
		break;
	default: /* a signal on its way to the process: deliver it */
		/* But the SIGSTOP of a dlopen hold (bpf_send_signal: SI_KERNEL) is ours: swallowed,
		 * re-injected it would be a group stop our SIGCONT may have come before. */
		if (sig == SIGSTOP && hooks && !ptrace(PTRACE_GETSIGINFO, p, 0, &si) &&
		    si.si_code == SI_KERNEL && !procinfo__tgid(&tgid, (uint32_t)p)) {
			if (!hooks->kernel_sigstop(hooks->ctx, tgid, (uint32_t)p))
				ptrace(PTRACE_CONT, p, 0, 0);
			break; /* else held: the caller continues it once its tables are in */
		}
		ptrace(PTRACE_CONT, p, 0, (void *)(long)sig);
		break;
	}
}

void child__wait(struct child *c, const struct child_hooks *hooks, int flags)
{
	int st;

	while (!c->exited) {
		pid_t p = waitpid(-1, &st, flags | __WALL);

		if (p <= 0) {
			if (p < 0 && errno == EINTR)
				continue;
			if (p < 0)
				c->exited = true; /* ECHILD: already reaped */
			return;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (p == c->pid) {
				c->status = st;
				c->exited = true;
				return;
			}
			continue; /* a traced descendant (or thread) went away */
		}
		if (WIFSTOPPED(st))
			tracee_stop(p, st, hooks);
	}
}

int child__release(struct child *c)
{
	int e = 0;
	ssize_t n;

	if (write(c->go_fd, "g", 1) != 1)
		return -errno;
	close(c->go_fd);
	c->go_fd = -1;
	n = read(c->err_fd, &e, sizeof(e)); /* EOF when exec succeeded (CLOEXEC) */
	close(c->err_fd);
	c->err_fd = -1;
	if (n == sizeof(e)) {
		child__wait(c, NULL, 0);
		return -e;
	}
	return 0;
}

void child__abandon(struct child *c, const struct child_hooks *hooks)
{
	close(c->go_fd); /* its read of the go byte fails: it exits 127 */
	c->go_fd = -1;
	child__wait(c, hooks, 0);
}

void child__close(struct child *c)
{
	if (c->go_fd >= 0)
		close(c->go_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->go_fd = c->err_fd = c->pidfd = -1;
}

int child__exit_status(int wait_status)
{
	return WIFEXITED(wait_status)	  ? WEXITSTATUS(wait_status)
	       : WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status)
					  : 0;
}
