// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "track/holds.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/pidfd.h"
#include "util/fdpass.h"
#include "util/clock.h"
#include "util/log.h"

struct hold {
	uint64_t id;
	int pidfd;
	struct prof_held_key key;
	int64_t taken_ms;
};

struct holds {
	pthread_mutex_t lock; /* the exit holds are resumed on the symbolizer's thread */
	int map_fd;
	struct hold *v;
	size_t n, cap;
	uint64_t next_id;
	struct holds_stats stats;
};

static void resume_fd(int map_fd, int pidfd, const struct prof_held_key *key)
{
	if (pidfd >= 0) {
		int err = pidfd__signal(pidfd, SIGCONT);

		if (err && err != -ESRCH)
			pr_warn("resuming held process %u failed: %s\n", key->tgid, strerror(-err));
		close(pidfd);
	}
	/* After the SIGCONT: dying in between costs the watchdog a harmless second SIGCONT. */
	bpf_map_delete_elem(map_fd, key);
}

int holds__new(struct holds **out, int map_fd)
{
	struct holds *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	h->map_fd = map_fd;
	*out = h;
	return 0;
}

void holds__free(struct holds *h)
{
	if (!h)
		return;
	holds__resume_all(h);
	free(h->v);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

int holds__take(struct holds *h, uint64_t *out, const struct prof_proc_event *e)
{
	struct prof_held_key key = {.tgid = e->pid, .seq = e->hold_seq};
	int fd = pidfd__open_started(e->pid, e->start_ns);
	struct hold *v;

	if (fd < 0) {
		bpf_map_delete_elem(h->map_fd, &key);
		pthread_mutex_lock(&h->lock);
		h->stats.gone++;
		pthread_mutex_unlock(&h->lock);
		return -ESRCH;
	}
	pthread_mutex_lock(&h->lock);
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;

		v = realloc(h->v, cap * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&h->lock);
			resume_fd(h->map_fd, fd, &key);
			return -ENOMEM;
		}
		h->v = v;
		h->cap = cap;
	}
	*out = ++h->next_id;
	h->v[h->n++] = (struct hold){*out, fd, key, clock__mono_ms()};
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* Under the lock: resume v[i] and drop it. */
static void resume_at(struct holds *h, size_t i)
{
	struct hold x = h->v[i];

	h->v[i] = h->v[--h->n];
	resume_fd(h->map_fd, x.pidfd, &x.key);
}

void holds__resume(struct holds *h, uint64_t id)
{
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n; i++) {
		if (h->v[i].id == id) {
			resume_at(h, i);
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
}

void holds__expire(struct holds *h, int64_t now_ms)
{
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n;) {
		if (now_ms - h->v[i].taken_ms >= HOLDS_MAX_MS) {
			pr_debug("process %u held %d ms: resumed\n", h->v[i].key.tgid,
				 HOLDS_MAX_MS);
			h->stats.timeouts++;
			resume_at(h, i);
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&h->lock);
}

void holds__resume_all(struct holds *h)
{
	pthread_mutex_lock(&h->lock);
	while (h->n)
		resume_at(h, h->n - 1);
	pthread_mutex_unlock(&h->lock);
}

struct holds_stats holds__stats(struct holds *h, bool reset)
{
	struct holds_stats s;

	pthread_mutex_lock(&h->lock);
	s = h->stats;
	if (reset)
		memset(&h->stats, 0, sizeof(h->stats));
	pthread_mutex_unlock(&h->lock);
	return s;
}

/* ---- the watchdog ---- */

enum { WD_MAP = 'M', WD_BYE = 'B' };

/* Resume every process prof_held lists (its start time checked); returns how many. */
static unsigned sweep(int map_fd)
{
	static struct prof_held_key keys[PROF_HELD_ENTRIES];
	struct prof_held_key *prev = NULL;
	struct prof_held_val val;
	unsigned n = 0, resumed = 0;

	while (n < PROF_HELD_ENTRIES && !bpf_map_get_next_key(map_fd, prev, &keys[n])) {
		prev = &keys[n];
		n++;
	}
	for (unsigned i = 0; i < n; i++) {
		int fd;

		if (bpf_map_lookup_elem(map_fd, &keys[i], &val))
			continue;
		fd = pidfd__open_started(keys[i].tgid, val.start_ns);
		if (fd >= 0 && !pidfd__signal(fd, SIGCONT))
			resumed++;
		if (fd >= 0)
			close(fd);
		bpf_map_delete_elem(map_fd, &keys[i]);
	}
	return resumed;
}

/* Receive one message: its tag, and *fd when it carried one.  0 at EOF, -1 on error. */
static int wd_recv(int sock, int *fd)
{
	char tag = 0;
	ssize_t n = fdpass__recv(sock, &tag, 1, fd);

	return n <= 0 ? (int)(n < 0 ? -1 : 0) : tag;
}

static void __attribute__((noreturn)) watchdog_main(int sock)
{
	static const int quiet[] = {SIGINT, SIGQUIT, SIGHUP, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU};
	int map_fd = -1, tag, dn;
	unsigned resumed = 0;

	/* Out of our session: a terminal's signals and job control are ours, not its. */
	setsid();
	prctl(PR_SET_NAME, "bpftrace-prof-wd");
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	/* Holding our stdout would keep a pipe reader waiting after we exit. */
	dn = open("/dev/null", O_RDWR);
	if (dn >= 0) {
		dup2(dn, STDIN_FILENO);
		dup2(dn, STDOUT_FILENO);
		if (dn > STDERR_FILENO)
			close(dn);
	}
	for (;;) {
		int fd = -1;

		tag = wd_recv(sock, &fd);
		if (tag == WD_MAP && fd >= 0) {
			if (map_fd >= 0)
				close(map_fd);
			map_fd = fd;
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (tag <= 0 || tag == WD_BYE)
			break;
	}
	if (map_fd < 0)
		_exit(0);
	resumed = sweep(map_fd);
	if (tag != WD_BYE) {
		/*
		 * We died: our programs detach as our fds close (maybe after our socket), and a
		 * stop may still be sent until the hold gate lapses (PROF_HOLD_GATE_NS): sweep
		 * until then.
		 */
		for (int i = 0; i < 8; i++) {
			nanosleep(&(struct timespec){.tv_nsec = 100 * 1000000L}, NULL);
			resumed += sweep(map_fd);
		}
		if (resumed)
			fprintf(stderr,
				"bpftrace-prof: the profiler ended without resuming %u held "
				"process%s: resumed\n",
				resumed, resumed == 1 ? "" : "es");
	}
	_exit(0);
}

int holds__watchdog_start(int *out)
{
	int sv[2], st, err;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (pid == 0) {
		/* Twice: the watchdog is not our child, so no wait of ours ever reaps it. */
		pid_t w = fork();

		if (w)
			_exit(w < 0);
		close(sv[0]);
		/* Nothing of ours but its socket: no BPF object, no file stays open through it. */
		if (sv[1] != 3) {
			dup2(sv[1], 3);
			close(sv[1]);
		}
		syscall(SYS_close_range, 4, ~0U, 0);
		watchdog_main(3);
	}
	close(sv[1]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		close(sv[0]);
		return -ECHILD;
	}
	*out = sv[0];
	return 0;
}

static int wd_send(int sock, char tag, int fd)
{
	return fdpass__send(sock, &tag, 1, fd);
}

int holds__watchdog_arm(int sock, int map_fd)
{
	return wd_send(sock, WD_MAP, map_fd);
}

void holds__watchdog_bye(int sock)
{
	wd_send(sock, WD_BYE, -1);
}
