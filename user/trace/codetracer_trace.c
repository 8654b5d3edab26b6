// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CodeTracer's trace folder (runtime_tracing's JSON form): trace.json is one array of
 * externally tagged records ({"Call": {…}}), streamed as events arrive; trace_paths.json lists
 * the paths by id; files/ holds the sources, copied from the target's root when a path is first
 * named (the process may be gone by the end).
 *
 * What a profiler knows honestly: which function was entered where, and when it returned.  So
 * the records are Path, Function, Call (no arguments), Step (the call's line), Return (no
 * value), and the threads' starts, switches and exits.  The canonical start (Path 0, Function
 * "<toplevel>" 0, its Call, Type 0) is written before the first call, once path 0 is known.
 *
 * Sources are named by the target (Python's co_filename is whatever compile() was given), so
 * each is opened with the rights of the process that named it, read from its /proc/PID/status
 * when it names it, by a child that has no others (proc/asuser.h).  That child is forked and
 * waited for on a thread of ours, the copier, so the event loop only queues: opening the
 * process's root and reading its status (a few system calls per path, as before), never a fork
 * (about 3 ms here, fork to reaped, for a Python run's 150 sources in 35 children: one child
 * serves every queued path of one root and one set of credentials).  The copier runs while
 * events arrive rather than at the end, so a source is read close to when it was named, like a
 * short-lived script's, not after it is deleted.  A path is keyed by (root, path): the first
 * root (mount namespace and root directory) seen keeps its paths as they are; another root's
 * are under "/[root N]" in trace_paths.json and files/.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/asuser.h"
#include "proc/safe_open.h"
#include "trace/trace_sink.h"
#include "util/hashmap.h"
#include "util/json.h"
#include "util/log.h"
#include "util/strpool.h"

#define CT_SOURCE_MAX	   (16u << 20)	/* larger sources are not copied (counted) */
#define CT_SOURCES_MAX	   (256u << 20) /* all sources together: past it, counted */
#define CT_FILES_MAX	   4096 /* sources tried (distinct root and path): past it, counted */
#define CT_ROOTS_MAX	   CT_FILES_MAX /* each root is some file's */
/* An open answers in microseconds; one that does not (a lookup on a stalled file system) has
 * its opener killed, and after a few of those the copier gives up. */
#define CT_OPEN_TIMEOUT_MS 2000
#define CT_STALLS_MAX	   4

struct ct_func {
	int64_t path_id; /* -1: its runtime named no file */
	int64_t func_id; /* -1: no Function record written yet */
};

/* A root that sources are named in: a mount namespace and a root directory in it. */
struct ct_root {
	uint64_t mntns, dev, ino;
	int fd; /* O_PATH, held while copies from it wait (-1 otherwise) */
	/* Its mount namespace, held with fd: a namespace whose last process exits is torn down,
	 * and a path looked up from fd would then miss the mounts made in it (-1: none). */
	int ns_fd;
	uint32_t pending; /* copies queued from it */
};

/* A path's key: the same path in two roots is two files.  root: 1 + index in roots, 0 unknown
 * (the process was gone). */
struct ct_path_key {
	const char *path; /* interned */
	uint32_t root;
	uint32_t pad;
};

/* A copy to make, with what the process that named the path could do then. */
struct ct_job {
	struct asuser_cred cred;
	const char *path; /* as named, inside the root (interned) */
	const char *dest; /* its Path record's string, below files/ (interned) */
	uint32_t pid;
	uint32_t root; /* 1 + index in roots */
};

/* The process naming a path: where it lives, what it may read. */
struct ct_target {
	struct asuser_cred cred;
	uint32_t root; /* 1 + index in roots; 0: unknown */
	int root_fd;
	int ns_fd; /* its mount namespace (nsfs), -1 if unreadable */
};

struct ct_trace {
	struct trace_sink sink;
	int dir_fd;   /* the trace folder (not ours to close) */
	int files_fd; /* files/, -1 until the first copy (the copier's) */
	FILE *f;      /* trace.json */
	const char *proc_root;
	bool started; /* the canonical start is written */
	bool any;     /* a record is written (the next needs a comma) */
	bool have_tid;
	uint32_t cur_tid;
	bool have_main;	   /* the first thread: <toplevel> is its call */
	uint32_t main_tid; /* its exit is written at the end, after <toplevel> returns */
	int64_t next_func;
	struct ct_func *funcs; /* by iid */
	uint32_t nfuncs;
	const char **paths; /* by path id (interned) */
	uint32_t npaths, cap_paths;
	struct hashmap *path_ids; /* struct ct_path_key -> uint32_t id */
	struct hashmap *threads;  /* tid -> uint8_t (started, not exited) */
	struct strpool *strings;  /* the event loop's; the copier only reads its strings */
	uint64_t tried;		  /* copies queued (the event loop's) */
	bool warned_cap;
	/* Shared with the copier, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct ct_root *roots;
	uint32_t nroots, cap_roots;
	struct ct_job *jobs;
	size_t njobs, cap_jobs;
	bool stop, drain;
	struct codetracer_stats stats;
	uint64_t copied;
	/* The copier's own. */
	pthread_t copier;
	bool copier_on;
	uint64_t copied_bytes;
	uint32_t stalls;
};

static struct ct_trace *ctt(struct trace_sink *s)
{
	return (struct ct_trace *)s;
}

static int status(struct ct_trace *t)
{
	return ferror(t->f) ? -EIO : 0;
}

/* The separator and the record's tag: {"Tag": (payload follows, then '}' by the caller). */
static void rec(struct ct_trace *t, const char *tag)
{
	fprintf(t->f, "%s{\"%s\":", t->any ? ",\n" : "", tag);
	t->any = true;
}

/* Each component of an absolute path, none of them "", "." or "..". */
static bool plain_path(const char *p)
{
	const char *c = p;

	if (*p != '/')
		return false;
	while (*c == '/') {
		const char *e = strchr(c + 1, '/');
		size_t n = e ? (size_t)(e - c - 1) : strlen(c + 1);

		if (!n || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
			return false;
		if (!e)
			break;
		c = e;
	}
	return true;
}

/* files/<path>: directories made as needed (ours, 0700, fresh: nobody else writes there). */
static int store(struct ct_trace *t, const char *path, const char *data, size_t len)
{
	char buf[4096], *comp, *next;
	int dir, fd = -1, err = 0;
	ssize_t w;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	if (t->files_fd < 0) {
		if (mkdirat(t->dir_fd, "files", 0700) && errno != EEXIST)
			return -errno;
		t->files_fd =
			openat(t->dir_fd, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (t->files_fd < 0)
			return -errno;
	}
	snprintf(buf, sizeof(buf), "%s", path + 1);
	dir = dup(t->files_fd);
	if (dir < 0)
		return -errno;
	for (comp = buf; (next = strchr(comp, '/')); comp = next + 1) {
		int sub;

		*next = '\0';
		if (mkdirat(dir, comp, 0700) && errno != EEXIST) {
			err = -errno;
			goto cleanup;
		}
		sub = openat(dir, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			err = -errno;
			goto cleanup;
		}
		close(dir);
		dir = sub;
	}
	err = safe_open__create(&fd, dir, comp);
	if (err)
		goto cleanup;
	while (len) {
		w = write(fd, data, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -EIO;
			goto cleanup;
		}
		data += w;
		len -= (size_t)w;
	}
cleanup:
	if (fd >= 0 && close(fd) && !err)
		err = -EIO;
	close(dir);
	return err;
}

/* Not copied: counted by why (under lock), and said on stderr. */
static void not_copied(struct ct_trace *t, uint32_t pid, const char *path, int err)
{
	uint64_t *c;

	switch (err) {
	case -ENOENT:
	case -ENOTDIR:
	case -ESRCH:
		c = &t->stats.missing;
		break;
	case -EACCES:
	case -EPERM:
		c = &t->stats.denied;
		break;
	case -EXDEV:
		c = &t->stats.kernel_fs;
		break;
	case -EINVAL:
	case -ELOOP:
	case -EFBIG:
	case -ESTALE:
		c = &t->stats.refused;
		break;
	case -E2BIG:
		c = &t->stats.bytes_cap;
		break;
	case -ETIMEDOUT:
	case -ECANCELED:
		c = &t->stats.stalled;
		break;
	default:
		c = &t->stats.failed;
	}
	pthread_mutex_lock(&t->lock);
	(*c)++;
	pthread_mutex_unlock(&t->lock);
	pr_warn("codetracer: source %.255s of pid %" PRIu32 " not copied: %s\n", path, pid,
		err == -E2BIG	? "the sources copied already fill 256 MiB"
		: err == -ESRCH ? "its process is gone"
				: asuser__strerror(err));
}

/* The copier: one job's descriptor (or why there is none) into files/. */
static void copy_one(struct ct_trace *t, const struct ct_job *j, int fd)
{
	char *data = NULL;
	size_t len = 0;
	int err = fd < 0 ? fd : 0;

	if (!err)
		err = safe_open__read_all(&data, &len, fd, CT_SOURCE_MAX);
	if (!err && t->copied_bytes + len > CT_SOURCES_MAX)
		err = -E2BIG;
	if (!err)
		err = store(t, j->dest, data, len);
	if (err) {
		not_copied(t, j->pid, j->path, err);
	} else {
		t->copied_bytes += len;
		pthread_mutex_lock(&t->lock);
		t->copied++;
		pthread_mutex_unlock(&t->lock);
	}
	free(data);
	if (fd >= 0)
		close(fd);
}

/* The copier: jobs of one root and one set of credentials, by as few openers as stalls allow. */
static void copy_group(struct ct_trace *t, const struct ct_job *jobs, size_t n)
{
	const char **paths = calloc(n, sizeof(*paths));
	int *fds = calloc(n, sizeof(*fds));
	struct ct_root *r;
	size_t done = 0;
	int root_fd;

	pthread_mutex_lock(&t->lock);
	root_fd = t->roots[jobs[0].root - 1].fd; /* held open while these are pending */
	pthread_mutex_unlock(&t->lock);
	if (!paths || !fds) {
		for (size_t i = 0; i < n; i++)
			not_copied(t, jobs[i].pid, jobs[i].path, -ENOMEM);
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++)
		paths[i] = jobs[i].path;
	while (done < n) {
		size_t k;

		if (t->stalls >= CT_STALLS_MAX) {
			for (k = done; k < n; k++)
				fds[k] = -ECANCELED;
			break;
		}
		asuser__open(fds + done, &jobs[0].cred, root_fd, paths + done, n - done,
			     CT_SOURCE_MAX, CT_OPEN_TIMEOUT_MS);
		for (k = done; k < n && fds[k] != -ETIMEDOUT; k++)
			;
		if (k < n)
			t->stalls++; /* the rest, not tried, by a new opener */
		done = k < n ? k + 1 : n;
	}
	for (size_t i = 0; i < n; i++)
		copy_one(t, &jobs[i], fds[i]);
cleanup:
	pthread_mutex_lock(&t->lock);
	r = &t->roots[jobs[0].root - 1];
	r->pending -= (uint32_t)n;
	if (!r->pending && r->fd >= 0) {
		close(r->fd);
		r->fd = -1;
		if (r->ns_fd >= 0)
			close(r->ns_fd);
		r->ns_fd = -1;
	}
	pthread_mutex_unlock(&t->lock);
	free(paths);
	free(fds);
}

static void *copier_main(void *arg)
{
	struct ct_trace *t = arg;
	struct ct_job *batch = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&t->lock);
	for (;;) {
		struct ct_job *q;
		size_t n, qcap, i, j;

		while (!t->njobs && !t->stop)
			pthread_cond_wait(&t->wake, &t->lock);
		if (t->stop && (!t->drain || !t->njobs))
			break;
		/* Take the queue whole, leave it our empty array. */
		q = t->jobs, qcap = t->cap_jobs, n = t->njobs;
		t->jobs = batch, t->cap_jobs = cap, t->njobs = 0;
		batch = q, cap = qcap;
		pthread_mutex_unlock(&t->lock);
		for (i = 0; i < n; i = j) {
			for (j = i + 1; j < n && batch[j].root == batch[i].root &&
					asuser__same_cred(&batch[j].cred, &batch[i].cred);
			     j++)
				;
			copy_group(t, batch + i, j - i);
		}
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	free(batch);
	return NULL;
}

/* Every signal stays with the caller's threads (SIGINT, SIGCHLD: the session's). */
static int start_copier(struct ct_trace *t)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = -pthread_create(&t->copier, NULL, copier_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		t->copier_on = true;
	return err;
}

/* drain: copy what is queued first (finish); else drop it (an aborted trace). */
static void stop_copier(struct ct_trace *t, bool drain)
{
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	t->drain = drain;
	pthread_cond_signal(&t->wake);
	pthread_mutex_unlock(&t->lock);
	if (t->copier_on)
		pthread_join(t->copier, NULL);
	t->copier_on = false;
}

/* The root st (in mount namespace mntns): its number, 1 for the first seen. */
static int root_of(struct ct_trace *t, uint32_t *out, uint32_t pid, const struct stat *st,
		   uint64_t mntns)
{
	int err = 0;
	uint32_t i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < t->nroots; i++)
		if (t->roots[i].mntns == mntns && t->roots[i].dev == (uint64_t)st->st_dev &&
		    t->roots[i].ino == (uint64_t)st->st_ino)
			break;
	if (i == t->nroots) {
		if (t->nroots == CT_ROOTS_MAX) {
			err = -E2BIG;
			goto cleanup;
		}
		if (t->nroots == t->cap_roots) {
			uint32_t cap = t->cap_roots ? 2 * t->cap_roots : 4;
			struct ct_root *n = realloc(t->roots, cap * sizeof(*n));

			if (!n) {
				err = -ENOMEM;
				goto cleanup;
			}
			t->roots = n;
			t->cap_roots = cap;
		}
		t->roots[i] = (struct ct_root){.mntns = mntns,
					       .dev = (uint64_t)st->st_dev,
					       .ino = (uint64_t)st->st_ino,
					       .fd = -1,
					       .ns_fd = -1};
		t->nroots++;
		if (i)
			pr_info("codetracer: pid %" PRIu32 " has another root or mount namespace: "
				"its sources are under /[root %" PRIu32 "]\n",
				pid, i + 1);
	}
	*out = i + 1;
cleanup:
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* pid's root and rights, now: -ESRCH/-ENOENT when it is gone. */
static int target_of(struct ct_trace *t, struct ct_target *out, uint32_t pid)
{
	char name[PATH_MAX];
	struct stat root, ns;
	int dir, err;

	if (snprintf(name, sizeof(name), "%s/%" PRIu32, t->proc_root, pid) >= (int)sizeof(name))
		return -ENAMETOOLONG;
	/* One directory for all: a pid reused meanwhile cannot mix two processes' answers. */
	dir = open(name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	err = asuser__read_cred(&out->cred, dir);
	if (!err) {
		out->root_fd = openat(dir, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (out->root_fd < 0)
			err = -errno;
	}
	if (!err && fstat(out->root_fd, &root))
		err = -errno;
	if (!err)
		out->ns_fd = openat(dir, "ns/mnt", O_RDONLY | O_CLOEXEC);
	if (!err && (out->ns_fd < 0 || fstat(out->ns_fd, &ns)))
		ns.st_ino = 0; /* no namespaces (a test's proc root): the root alone */
	if (!err)
		err = root_of(t, &out->root, pid, &root, (uint64_t)ns.st_ino);
	close(dir);
	return err;
}

/* Queue a copy of path (as pid names it in tg's root) to files/<dest>, or count why not. */
static int want_copy(struct ct_trace *t, uint32_t pid, struct ct_target *tg, int why,
		     const char *path, const char *dest)
{
	struct ct_root *r;
	struct ct_job *j;
	int err = 0;

	if (!plain_path(path)) {
		pthread_mutex_lock(&t->lock);
		t->stats.not_plain++;
		pthread_mutex_unlock(&t->lock);
		pr_warn("codetracer: source %.255s of pid %" PRIu32
			" not copied: not a plain absolute path\n",
			path, pid);
		return 0;
	}
	if (why == -ENOENT)
		why = -ESRCH; /* its /proc directory: the process is gone */
	if (why && why != -ESRCH && why != -E2BIG) {
		pthread_mutex_lock(&t->lock);
		t->stats.failed++;
		pthread_mutex_unlock(&t->lock);
		pr_warn("codetracer: source %.255s of pid %" PRIu32
			" not copied: its root or credentials could not be read: %s\n",
			path, pid, strerror(-why));
		return 0;
	}
	if (!why && t->tried >= CT_FILES_MAX)
		why = -EDQUOT;
	if (why == -E2BIG || why == -EDQUOT) {
		pthread_mutex_lock(&t->lock);
		t->stats.files_cap++;
		pthread_mutex_unlock(&t->lock);
		if (!t->warned_cap)
			pr_warn("codetracer: %u sources tried: the sources named after them are "
				"not copied (counted)\n",
				CT_FILES_MAX);
		t->warned_cap = true;
		return 0;
	}
	if (!why && !t->copier_on)
		why = start_copier(t);
	if (why) {
		not_copied(t, pid, path, why);
		return 0;
	}
	pthread_mutex_lock(&t->lock);
	if (t->njobs == t->cap_jobs) {
		size_t cap = t->cap_jobs ? 2 * t->cap_jobs : 16;
		struct ct_job *n = realloc(t->jobs, cap * sizeof(*n));

		if (!n) {
			err = -ENOMEM;
			goto cleanup;
		}
		t->jobs = n;
		t->cap_jobs = cap;
	}
	j = &t->jobs[t->njobs++];
	*j = (struct ct_job){
		.cred = tg->cred, .path = path, .dest = dest, .pid = pid, .root = tg->root};
	r = &t->roots[tg->root - 1];
	if (r->fd < 0) {
		r->fd = tg->root_fd; /* the first of this root's pending copies: it keeps the fd */
		tg->root_fd = -1;
		r->ns_fd = tg->ns_fd;
		tg->ns_fd = -1;
	}
	r->pending++;
	t->tried++;
	pthread_cond_signal(&t->wake);
cleanup:
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* The id of path in pid's root (a Path record and a queued copy at its first sight). */
static int path_id(struct ct_trace *t, uint32_t pid, const char *path, uint32_t *out)
{
	struct ct_target tg = {.root_fd = -1, .ns_fd = -1};
	struct ct_path_key key = {0};
	const char *dest;
	uint32_t *id;
	bool created;
	int err, why = 0;

	if (pid)
		why = target_of(t, &tg, pid);
	key.path = strpool__intern(t->strings, path);
	key.root = why ? 0 : tg.root;
	if (!key.path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = hashmap__upsert(t->path_ids, (void **)&id, &key, &created);
	if (err)
		goto cleanup;
	if (!created) {
		*out = *id;
		goto cleanup;
	}
	dest = key.path;
	if (key.root > 1 && plain_path(key.path)) {
		char buf[PATH_MAX + 32];

		snprintf(buf, sizeof(buf), "/[root %" PRIu32 "]%s", key.root, key.path);
		dest = strpool__intern(t->strings, buf);
	}
	if (dest && t->npaths == t->cap_paths) {
		uint32_t cap = t->cap_paths ? 2 * t->cap_paths : 16;
		const char **n = realloc(t->paths, cap * sizeof(*n));

		if (n) {
			t->paths = n;
			t->cap_paths = cap;
		}
	}
	if (!dest || t->npaths == t->cap_paths) {
		hashmap__delete(t->path_ids, &key);
		err = -ENOMEM;
		goto cleanup;
	}
	*id = *out = t->npaths;
	t->paths[t->npaths++] = dest;
	rec(t, "Path");
	json__write_string(t->f, dest, strlen(dest));
	putc('}', t->f);
	if (pid)
		err = want_copy(t, pid, &tg, why, key.path, dest);
	if (!err)
		err = status(t);
cleanup:
	if (tg.root_fd >= 0)
		close(tg.root_fd);
	if (tg.ns_fd >= 0)
		close(tg.ns_fd);
	return err;
}

static int grow_funcs(struct ct_trace *t, uint32_t iid)
{
	uint32_t n = t->nfuncs, cap;
	struct ct_func *f;

	if (iid < n)
		return 0;
	cap = n ? n : 64;
	while (cap <= iid)
		cap *= 2;
	f = realloc(t->funcs, cap * sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (uint32_t i = n; i < cap; i++)
		f[i] = (struct ct_func){.path_id = -1, .func_id = -1};
	t->funcs = f;
	t->nfuncs = cap;
	return 0;
}

static int ct_process(struct trace_sink *s, uint32_t pid, const char *name)
{
	(void)s, (void)pid, (void)name;
	return 0;
}

static int ct_thread(struct trace_sink *s, uint32_t pid, uint32_t tid, const char *name)
{
	(void)s, (void)pid, (void)tid, (void)name;
	return 0; /* started at its first call (after the canonical start) */
}

static int ct_name(struct trace_sink *s, uint32_t iid, const char *name)
{
	(void)name;
	return grow_funcs(ctt(s), iid);
}

static int ct_source(struct trace_sink *s, uint32_t iid, uint32_t pid, const char *file)
{
	struct ct_trace *t = ctt(s);
	uint32_t id;
	int err = grow_funcs(t, iid);

	if (!err)
		err = path_id(t, pid, file, &id);
	if (!err)
		t->funcs[iid].path_id = id;
	return err;
}

/* Path 0 is the first file named; a trace without any gets an unnamed one. */
static int start(struct ct_trace *t)
{
	uint32_t id;
	int err = 0;

	if (t->started)
		return 0;
	if (!t->npaths)
		err = path_id(t, 0, "<unknown>", &id);
	if (err)
		return err;
	t->started = true;
	rec(t, "Function");
	fputs("{\"path_id\":0,\"line\":1,\"name\":\"<toplevel>\"}}", t->f);
	rec(t, "Call");
	fputs("{\"function_id\":0,\"args\":[]}}", t->f);
	rec(t, "Type");
	fputs("{\"kind\":30,\"lang_type\":\"None\",\"specific_info\":{\"kind\":\"None\"}}}", t->f);
	return status(t);
}

/* Records that follow are tid's. */
static int switch_to(struct ct_trace *t, uint32_t tid)
{
	uint8_t *seen;
	bool created;
	int err = start(t);

	if (!err)
		err = hashmap__upsert(t->threads, (void **)&seen, &tid, &created);
	if (err)
		return err;
	if (created && !t->have_main) {
		t->have_main = true;
		t->main_tid = tid;
	}
	if (created) {
		rec(t, "ThreadStart");
		fprintf(t->f, "%" PRIu32 "}", tid);
	} else if (!t->have_tid || t->cur_tid != tid) {
		rec(t, "ThreadSwitch");
		fprintf(t->f, "%" PRIu32 "}", tid);
	}
	t->have_tid = true;
	t->cur_tid = tid;
	return status(t);
}

static int call(struct ct_trace *t, uint32_t tid, uint32_t iid, const char *name, uint32_t line)
{
	struct ct_func *fn;
	int64_t path;
	int err = switch_to(t, tid);

	if (!err)
		err = grow_funcs(t, iid);
	if (err)
		return err;
	fn = &t->funcs[iid];
	path = fn->path_id >= 0 ? fn->path_id : 0;
	if (fn->func_id < 0) {
		fn->func_id = t->next_func++;
		rec(t, "Function");
		fprintf(t->f, "{\"path_id\":%" PRId64 ",\"line\":%" PRIu32 ",\"name\":", path,
			line);
		json__write_string(t->f, name, strlen(name));
		fputs("}}", t->f);
	}
	rec(t, "Call");
	fprintf(t->f, "{\"function_id\":%" PRId64 ",\"args\":[]}}", fn->func_id);
	rec(t, "Step");
	fprintf(t->f, "{\"path_id\":%" PRId64 ",\"line\":%" PRIu32 "}}", path, line);
	return status(t);
}

static int ret(struct ct_trace *t)
{
	rec(t, "Return");
	fputs("{\"return_value\":{\"kind\":\"None\",\"type_id\":0}}}", t->f);
	return status(t);
}

static int ct_begin_line(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts,
			 uint32_t iid, const char *name, uint32_t line)
{
	(void)pid, (void)ts;
	return call(ctt(s), tid, iid, name, line);
}

static int ct_begin(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t iid,
		    const char *name)
{
	return ct_begin_line(s, pid, tid, ts, iid, name, 0);
}

static int ct_end(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct ct_trace *t = ctt(s);
	int err = switch_to(t, tid);

	(void)pid, (void)ts;
	return err ? err : ret(t);
}

static int ct_instant(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t iid,
		      const char *name)
{
	int err = ct_begin(s, pid, tid, ts, iid, name);

	return err ? err : ret(ctt(s));
}

static int ct_thread_exit(struct trace_sink *s, uint32_t pid, uint32_t tid, uint64_t ts)
{
	struct ct_trace *t = ctt(s);

	(void)pid, (void)ts;
	if (!hashmap__find(t->threads, &tid) || (t->have_main && tid == t->main_tid))
		return 0;
	hashmap__delete(t->threads, &tid);
	rec(t, "ThreadExit");
	fprintf(t->f, "%" PRIu32 "}", tid);
	if (t->have_tid && t->cur_tid == tid)
		t->have_tid = false;
	return status(t);
}

static int write_paths(struct ct_trace *t)
{
	FILE *f;
	int err = safe_open__fcreate(&f, t->dir_fd, "trace_paths.json");

	if (err)
		return err;
	putc('[', f);
	for (uint32_t i = 0; i < t->npaths; i++) {
		if (i)
			fputs(",\n", f);
		json__write_string(f, t->paths[i], strlen(t->paths[i]));
	}
	fputs("]\n", f);
	err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -EIO;
	return err;
}

/* The threads still running exit at the end, after the toplevel call returns.  The drop
 * counters are the caller's to show (trace_metadata.json has no place for them). */
static int ct_finish(struct trace_sink *s, uint64_t ts, const char *const *names,
		     const uint64_t *values, size_t n)
{
	struct ct_trace *t = ctt(s);
	size_t it = 0;
	const void *k;
	void *v;
	int err = 0;

	(void)ts, (void)names, (void)values, (void)n;
	/* The copies queued are made before the counts are read (and the folder committed). */
	stop_copier(t, true);
	/* <toplevel> returns on the thread it began on, which then exits; the others after. */
	if (t->started && t->have_main)
		err = switch_to(t, t->main_tid);
	if (!err && t->started)
		err = ret(t);
	if (!err && t->have_main) {
		rec(t, "ThreadExit");
		fprintf(t->f, "%" PRIu32 "}", t->main_tid);
	}
	while (!err && hashmap__next(t->threads, &it, &k, &v)) {
		if (t->have_main && *(const uint32_t *)k == t->main_tid)
			continue;
		rec(t, "ThreadExit");
		fprintf(t->f, "%" PRIu32 "}", *(const uint32_t *)k);
	}
	fputs("\n]\n", t->f);
	if (!err)
		err = status(t);
	if (fclose(t->f) && !err)
		err = -EIO;
	t->f = NULL;
	if (!err)
		err = write_paths(t);
	return err;
}

static void ct_free(struct trace_sink *s)
{
	struct ct_trace *t = ctt(s);

	if (!t)
		return;
	stop_copier(t, false);
	for (uint32_t i = 0; i < t->nroots; i++) {
		if (t->roots[i].fd >= 0)
			close(t->roots[i].fd);
		if (t->roots[i].ns_fd >= 0)
			close(t->roots[i].ns_fd);
	}
	free(t->roots);
	free(t->jobs);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->wake);
	if (t->f)
		fclose(t->f);
	if (t->files_fd >= 0)
		close(t->files_fd);
	hashmap__free(t->path_ids);
	hashmap__free(t->threads);
	strpool__free(t->strings);
	free(t->paths);
	free(t->funcs);
	free(t);
}

static const struct trace_sink_ops ct_ops = {
	.process = ct_process,
	.thread = ct_thread,
	.name = ct_name,
	.begin = ct_begin,
	.end = ct_end,
	.instant = ct_instant,
	.finish = ct_finish,
	.free = ct_free,
	.source = ct_source,
	.begin_line = ct_begin_line,
	.thread_exit = ct_thread_exit,
};

int codetracer_trace__new(struct trace_sink **out, int dir_fd, const char *proc_root)
{
	struct ct_trace *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->sink.ops = &ct_ops;
	t->dir_fd = dir_fd;
	t->files_fd = -1;
	t->proc_root = proc_root;
	t->next_func = 1; /* 0 is <toplevel> */
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->wake, NULL);
	err = hashmap__new(&t->path_ids, sizeof(struct ct_path_key), sizeof(uint32_t));
	if (!err)
		err = hashmap__new(&t->threads, sizeof(uint32_t), sizeof(uint8_t));
	if (!err)
		err = strpool__new(&t->strings);
	if (err)
		goto cleanup;
	err = safe_open__fcreate(&t->f, dir_fd, "trace.json");
	if (err)
		goto cleanup;
	fputs("[\n", t->f);
	*out = &t->sink;
	return 0;
cleanup:
	ct_free(&t->sink);
	return err;
}

void codetracer_trace__files(const struct trace_sink *s, uint64_t *copied, uint64_t *missing)
{
	const struct ct_trace *t = (const struct ct_trace *)s;

	*copied = t->copied;
	*missing = 0;
#define CODETRACER_SUM(f, nm, d) *missing += t->stats.f;
	PROF_CODETRACER_STATS(CODETRACER_SUM)
#undef CODETRACER_SUM
}

const struct codetracer_stats *codetracer_trace__stats(const struct trace_sink *s)
{
	return &((const struct ct_trace *)s)->stats;
}
