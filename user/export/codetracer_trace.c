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
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/json.h"
#include "export/trace_sink.h"
#include "proc/safe_open.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/strpool.h"

#define CT_SOURCE_MAX  (16u << 20)  /* larger sources are not copied (counted missing) */
#define CT_SOURCES_MAX (256u << 20) /* all sources together: past it, counted missing */

struct ct_func {
	int64_t path_id; /* -1: its runtime named no file */
	int64_t func_id; /* -1: no Function record written yet */
};

struct ct_trace {
	struct trace_sink sink;
	int dir_fd;   /* the trace folder (not ours to close) */
	int files_fd; /* files/, -1 until the first copy */
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
	struct hashmap *path_ids; /* interned path pointer -> uint32_t id */
	struct hashmap *threads;  /* tid -> uint8_t (started, not exited) */
	struct strpool *strings;
	uint64_t copied, missing;
	uint64_t copied_bytes;
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

/* A bounded copy of untrusted bytes that a terminal prints as they are. */
static void printable(char *out, size_t size, const char *s)
{
	size_t i;

	for (i = 0; i + 1 < size && s[i]; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[i] = '\0';
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
	fd = openat(dir, comp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
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

/* The source as pid sees it, through its root: refused or missing files are counted. */
static void copy_source(struct ct_trace *t, uint32_t pid, const char *path)
{
	int root = -1, fd = -1, err;
	char *data = NULL, shown[256];
	size_t len = 0;

	err = plain_path(path) ? 0 : -EINVAL;
	if (!err)
		err = safe_open__root(&root, t->proc_root, pid);
	if (!err)
		err = safe_open__at(&fd, root, path, 0, CT_SOURCE_MAX, NULL);
	if (!err)
		err = safe_open__read_all(&data, &len, fd, CT_SOURCE_MAX);
	if (!err && t->copied_bytes + len > CT_SOURCES_MAX)
		err = -E2BIG;
	if (!err)
		err = store(t, path, data, len);
	if (err) {
		t->missing++;
		printable(shown, sizeof(shown), path);
		pr_warn("codetracer: source %s of pid %" PRIu32 " not copied: %s\n", shown, pid,
			err == -EINVAL && !plain_path(path) ? "not a plain absolute path"
			: err == -E2BIG ? "the sources copied already fill 256 MiB"
					: safe_open__strerror(err));
	} else {
		t->copied++;
		t->copied_bytes += len;
	}
	free(data);
	if (fd >= 0)
		close(fd);
	if (root >= 0)
		close(root);
}

/* The id of path (a Path record and a copy at its first sight). */
static int path_id(struct ct_trace *t, uint32_t pid, const char *path, uint32_t *out)
{
	const char *p = strpool__intern(t->strings, path);
	uint32_t *id;
	bool created;
	int err;

	if (!p)
		return -ENOMEM;
	err = hashmap__upsert(t->path_ids, (void **)&id, &p, &created);
	if (err)
		return err;
	if (!created) {
		*out = *id;
		return 0;
	}
	if (t->npaths == t->cap_paths) {
		uint32_t cap = t->cap_paths ? 2 * t->cap_paths : 16;
		const char **n = realloc(t->paths, cap * sizeof(*n));

		if (!n) {
			hashmap__delete(t->path_ids, &p);
			return -ENOMEM;
		}
		t->paths = n;
		t->cap_paths = cap;
	}
	*id = *out = t->npaths;
	t->paths[t->npaths++] = p;
	rec(t, "Path");
	json__write_string(t->f, p, strlen(p));
	putc('}', t->f);
	if (pid)
		copy_source(t, pid, p);
	return status(t);
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
	int fd = openat(t->dir_fd, "trace_paths.json",
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f;
	int err;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
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
	int fd, err;

	if (!t)
		return -ENOMEM;
	t->sink.ops = &ct_ops;
	t->dir_fd = dir_fd;
	t->files_fd = -1;
	t->proc_root = proc_root;
	t->next_func = 1; /* 0 is <toplevel> */
	err = hashmap__new(&t->path_ids, sizeof(const char *), sizeof(uint32_t));
	if (!err)
		err = hashmap__new(&t->threads, sizeof(uint32_t), sizeof(uint8_t));
	if (!err)
		err = strpool__new(&t->strings);
	if (err)
		goto cleanup;
	fd = openat(dir_fd, "trace.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	t->f = fdopen(fd, "w");
	if (!t->f) {
		err = -errno;
		close(fd);
		goto cleanup;
	}
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
	*missing = t->missing;
}
