// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "proc/procinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/cgroup.h"
#include "util/hashmap.h"
#include "util/strpool.h"

#define NAME_LEN 16

struct name_key {
	uint32_t pid, tid; /* tid 0 = the process */
};

/* A name and whether its thread (or, for tid 0, its process) has exited: a later sight of the
 * same id is a new thread or process that reused it, whose name must be read again. */
struct name_val {
	char name[NAME_LEN];
	uint8_t exited;
};

struct label_val {
	struct procinfo_labels l;
	uint8_t stale; /* the process exited: a later sight of the pid is another process */
};

struct procinfo {
	char root[256];
	struct hashmap *names;	/* name_key -> struct name_val */
	struct hashmap *labels; /* uint32_t pid -> struct label_val; NULL: labels off */
	struct hashmap *exes;	/* uint64_t pid -> const char * (interned in strings) */
	struct strpool *strings;
	int proc_fd;
};

void procinfo__forget(struct procinfo *pi, uint32_t pid)
{
	struct name_key *gone = NULL;
	const struct name_key *k;
	size_t it = 0, n = 0, cap = 0;

	while (hashmap__next(pi->names, &it, (const void **)&k, NULL)) {
		if (k->pid != pid)
			continue;
		if (n == cap) {
			struct name_key *g = realloc(gone, (cap = cap ? 2 * cap : 16) * sizeof(*g));

			if (!g)
				break;
			gone = g;
		}
		gone[n++] = *k;
	}
	for (size_t i = 0; i < n; i++)
		hashmap__delete(pi->names, &gone[i]);
	free(gone);
	if (pi->labels)
		hashmap__delete(pi->labels, &pid);
	hashmap__delete(pi->exes, &(uint64_t){pid});
}

int procinfo__new(struct procinfo **out, const char *proc_root)
{
	struct procinfo *pi = calloc(1, sizeof(*pi));
	int err;

	if (!pi)
		return -ENOMEM;
	snprintf(pi->root, sizeof(pi->root), "%s", proc_root ? proc_root : "/proc");
	pi->proc_fd = -1;
	err = hashmap__new(&pi->names, sizeof(struct name_key), sizeof(struct name_val));
	if (!err)
		err = hashmap__new(&pi->exes, sizeof(uint64_t), sizeof(const char *));
	if (!err)
		err = strpool__new(&pi->strings);
	if (err) {
		procinfo__free(pi);
		return err;
	}
	*out = pi;
	return 0;
}

void procinfo__free(struct procinfo *pi)
{
	if (!pi)
		return;
	hashmap__free(pi->names);
	hashmap__free(pi->labels);
	hashmap__free(pi->exes);
	strpool__free(pi->strings);
	if (pi->proc_fd >= 0)
		close(pi->proc_fd);
	free(pi);
}

int procinfo__enable_labels(struct procinfo *pi)
{
	int err;

	pi->proc_fd = open(pi->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pi->proc_fd < 0)
		return -errno;
	err = hashmap__new(&pi->labels, sizeof(uint32_t), sizeof(struct label_val));
	return err;
}

/* First sight of pid (or again after its exit): its labels, interned. */
static int note_labels(struct procinfo *pi, uint32_t pid)
{
	struct cgroup_labels cl;
	struct label_val *v;
	bool created;

	if (!pi->labels)
		return 0;
	if (hashmap__upsert(pi->labels, (void **)&v, &pid, &created))
		return -ENOMEM;
	if (!created && !v->stale)
		return 0;
	if (cgroup__labels(&cl, pi->proc_fd, pid)) {
		if (created)
			hashmap__delete(pi->labels, &pid); /* gone: try again at its next record */
		return 0;
	}
	v->l.ns_pid = cl.ns_pid;
	v->l.container_id = strpool__intern(pi->strings, cl.container_id);
	v->l.cgroup = strpool__intern(pi->strings, cl.cgroup);
	v->stale = 0;
	return v->l.container_id && v->l.cgroup ? 0 : -ENOMEM;
}

const struct procinfo_labels *procinfo__labels(struct procinfo *pi, uint32_t pid)
{
	const struct label_val *v = pi->labels ? hashmap__find(pi->labels, &pid) : NULL;

	return v ? &v->l : NULL;
}

/* The first line of a small kernel-made file, at most size - 1 bytes; -errno when it cannot be
 * read (the thread is gone). */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* -errno, leaving out untouched, when the file cannot be read (the thread is gone). */
static int read_name(const char *path, char *out)
{
	char buf[NAME_LEN];
	int err = read_line(path, buf, sizeof(buf));

	if (!err)
		memcpy(out, buf, NAME_LEN);
	return err;
}

int procinfo__run_ns(struct procinfo *pi, uint32_t pid, uint32_t tid, uint64_t *out)
{
	char path[320], buf[96], *end;
	unsigned long long v;
	int err;

	/* "<ns on the CPU> <ns waiting for one> <times run>" (kernel: sched-stats.rst) */
	snprintf(path, sizeof(path), "%s/%u/task/%u/schedstat", pi->root, pid, tid);
	err = read_line(path, buf, sizeof(buf));
	if (err)
		return err;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (end == buf || *end != ' ' || errno)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * pid's executable as its mappings name it (the kernel writes both paths the same way, "
 * (deleted)" aside), read at its first sight and at exec.  Not there: keep what we had.
 */
static int note_exe(struct procinfo *pi, uint32_t pid)
{
	char path[320], exe[PATH_MAX];
	const char *s, **v;
	ssize_t n;
	size_t len;

	snprintf(path, sizeof(path), "%s/%u/exe", pi->root, pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0; /* gone, or a kernel thread */
	exe[n] = 0;
	len = (size_t)n;
	if (len > 10 && !strcmp(exe + len - 10, " (deleted)"))
		exe[len - 10] = 0;
	s = strpool__intern(pi->strings, exe);
	if (!s || hashmap__upsert(pi->exes, (void **)&v, &(uint64_t){pid}, NULL))
		return -ENOMEM;
	*v = s;
	return 0;
}

const char *procinfo__exe(struct procinfo *pi, uint32_t pid)
{
	const char **v = hashmap__find(pi->exes, &(uint64_t){pid});

	return v ? *v : NULL;
}

static int note_one(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	struct name_key k = {pid, tid};
	struct name_val *v;
	char path[320];
	bool created;

	if (hashmap__upsert(pi->names, (void **)&v, &k, &created))
		return -ENOMEM;
	if (!created && !v->exited)
		return 0;
	if (tid)
		snprintf(path, sizeof(path), "%s/%u/task/%u/comm", pi->root, pid, tid);
	else
		snprintf(path, sizeof(path), "%s/%u/comm", pi->root, pid);
	/* An exited id that cannot be read is still the old one: keep its final name. */
	if (!read_name(path, v->name))
		v->exited = 0;
	return tid ? 0 : note_exe(pi, pid);
}

int procinfo__note(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	int err = note_one(pi, pid, tid);

	if (!err)
		err = note_one(pi, pid, 0);
	return err ? err : note_labels(pi, pid);
}

static int set_one(struct procinfo *pi, uint32_t pid, uint32_t tid, const char *comm, bool exited)
{
	struct name_key k = {pid, tid};
	struct name_val *v;

	if (hashmap__upsert(pi->names, (void **)&v, &k, NULL))
		return -ENOMEM;
	snprintf(v->name, NAME_LEN, "%s", comm);
	v->exited = exited;
	return 0;
}

int procinfo__set_comm(struct procinfo *pi, uint32_t pid, uint32_t tid, const char *comm)
{
	int err = set_one(pi, pid, tid, comm, false);

	/* The main thread's name is the process name ps shows; exec: a new executable. */
	if (!err && tid == pid)
		err = set_one(pi, pid, 0, comm, false);
	if (!err && tid == pid)
		err = note_exe(pi, pid);
	return err;
}

int procinfo__exited(struct procinfo *pi, uint32_t pid, uint32_t tid, const char *comm,
		     bool group_dead)
{
	int err = set_one(pi, pid, tid, comm, true);

	if (!err && tid == pid)
		err = set_one(pi, pid, 0, comm, group_dead);
	if (!err && group_dead && pi->labels) {
		struct label_val *v = hashmap__find(pi->labels, &pid);

		if (v)
			v->stale = 1;
	}
	/* A leader that left first keeps the name; the process ends with its last thread. */
	if (!err && tid != pid && group_dead) {
		struct name_val *v = hashmap__find(pi->names, &(struct name_key){pid, 0});

		if (v)
			v->exited = 1;
	}
	return err;
}

static const char *lookup(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	struct name_key k = {pid, tid};
	const struct name_val *v = hashmap__find(pi->names, &k);

	return v && v->name[0] ? v->name : NULL;
}

const char *procinfo__comm(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	const char *n = lookup(pi, pid, tid);

	return n ? n : procinfo__process(pi, pid);
}

const char *procinfo__process(struct procinfo *pi, uint32_t pid)
{
	const char *n = lookup(pi, pid, 0);

	if (!n)
		n = lookup(pi, pid, pid);
	return n ? n : "?";
}

/* The process (thread group) a -p id belongs to: -p takes a thread id as its process. */
int procinfo__tgid(uint32_t *out, uint32_t pid)
{
	char path[64], line[256];
	int err = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Tgid: %u", out) == 1) {
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/* include/linux/sched.h: the task is a kernel thread (no user memory, no executable). */
#define PF_KTHREAD 0x00200000u

int procinfo__kthread(uint32_t pid)
{
	char path[64], buf[1024];
	unsigned long long flags;
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	/* "pid (comm) state ppid pgrp session tty_nr tpgid flags …": comm may hold ") ", so
	 * the fields start after its last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %llu", &flags) != 1)
		return -EINVAL;
	return flags & PF_KTHREAD ? 1 : 0;
}

uint32_t procinfo__perf_max_stack(void)
{
	unsigned v = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "r");

	if (f) {
		v = fscanf(f, "%u", &v) == 1 ? v : 0;
		fclose(f);
	}
	return v;
}
