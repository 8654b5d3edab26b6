// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/pynames.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prof_python.h"
#include "sym/pycode.h"
#include "sym/pythreads.h"
#include "util/clock.h"
#include "util/hashmap.h"
#include "util/log.h"

/* Code objects cached per process: past this many, frames are read without caching. */
#define PY_CODES_MAX	   16384
/* Python thread names read at once per process, and how often a process's are read again (for
 * a thread not named yet). */
#define PY_NAMES_MAX	   1024
#define PY_NAMES_REREAD_NS (100 * 1000000ULL)
/* Reads a thread seen unnamed waits through (symbolizer__python_retry: one per 100 ms at most)
 * before it is given up: threading registers a thread in _active after it starts running. */
#define PY_NAMES_TRIES	   30
#define PY_WANTED_MAX	   256

/* A code object of a process, read once. */
struct py_code_entry {
	const char *name, *file; /* interned; NULL: unreadable */
	uint8_t *table;		 /* its line table (malloc'd) */
	uint32_t table_len;
	int32_t firstlineno;
	uint64_t print; /* prof_py_fingerprint of it as read */
};

struct pynames {
	struct strpool *pool;	     /* the symbolizer's */
	const struct py_version *py; /* the CPython it runs (symbolizer__set_python) */
	uint64_t py_runtime, py_code_type;
	struct hashmap *pycodes;  /* code object address -> struct py_code_entry */
	struct hashmap *pynames;  /* uint64_t tid -> const char * (interned): Python thread names */
	uint64_t pynames_read_ns; /* when they were last read (CLOCK_MONOTONIC) */
	struct hashmap *pywanted; /* uint64_t tid -> uint32_t reads since: seen, not named yet */
};

int pynames__new(struct pynames **out, struct strpool *pool)
{
	struct pynames *py = calloc(1, sizeof(*py));

	if (!py)
		return -ENOMEM;
	py->pool = pool;
	*out = py;
	return 0;
}

static void py_codes__free(struct pynames *p)
{
	size_t it = 0;
	void *v;

	while (p->pycodes && hashmap__next(p->pycodes, &it, NULL, &v))
		free(((struct py_code_entry *)v)->table);
	hashmap__free(p->pycodes);
	p->pycodes = NULL;
}

void pynames__free(struct pynames *p)
{
	if (!p)
		return;
	py_codes__free(p);
	hashmap__free(p->pynames);
	hashmap__free(p->pywanted);
	free(p);
}

void pynames__set_python(struct pynames *p, const struct py_version *v, uint64_t runtime,
			 uint64_t code_type)
{
	if (p->py != v || p->py_code_type != code_type)
		py_codes__free(p); /* other code objects, or another layout */
	p->py = v;
	p->py_runtime = runtime;
	p->py_code_type = code_type;
}

bool pynames__running(const struct pynames *p)
{
	return p && p->py;
}

/* Read the code object at code into e (names interned); -ENOMEM, or 0 with e->name NULL when it
 * could not be read. */
static int py_code__read(const struct pynames *p, uint32_t pid, uint64_t code,
			 struct py_code_entry *e)
{
	struct pycode c;
	int err;

	memset(e, 0, sizeof(*e));
	/* The fingerprint from the head that gave the names (one object: a second read of its
	 * fields could meet the next object at that address, and name it after the first). */
	err = pycode__read(p->py, pycode__read_pid, (void *)(uintptr_t)pid, code, p->py_code_type,
			   &c);
	if (err) {
		pr_debug("pid %u: Python code object at 0x%" PRIx64 " unreadable: %s\n", pid, code,
			 strerror(-err));
		pycode__free(&c);
		return 0;
	}
	e->name = strpool__intern(p->pool, c.name);
	e->file = strpool__intern(p->pool, c.filename);
	if (!e->name || !e->file) {
		pycode__free(&c);
		return -ENOMEM;
	}
	e->firstlineno = c.firstlineno;
	e->print = prof_py_fingerprint((uint32_t)c.firstlineno, c.names[0], c.names[1]);
	e->table = c.table; /* ours now */
	e->table_len = c.table_len;
	c.table = NULL;
	pycode__free(&c);
	return 0;
}

/* Is e the object the walker saw (print 0, or an unreadable walk: no fingerprint to check)? */
static bool py_code__matches(const struct py_code_entry *e, uint64_t print)
{
	return e->name && (!print || print == prof_py_fingerprint(0, 0, 0) || e->print == print);
}

int pynames__resolve(struct pynames *p, uint32_t pid, uint64_t frame, uint64_t print,
		     struct sym_result *out)
{
	uint64_t code = prof_py_frame_code(frame);
	struct py_code_entry fresh, *e = NULL;
	struct pycode c;
	bool created = true;
	int err = 0;

	if (p && p->py) {
		if (!p->pycodes && hashmap__new(&p->pycodes, sizeof(code), sizeof(fresh)))
			return -ENOMEM;
		e = hashmap__find(p->pycodes, &code);
		created = !e;
		if (!e && hashmap__count(p->pycodes) < PY_CODES_MAX) {
			err = hashmap__upsert(p->pycodes, (void **)&e, &code, &created);
			if (err)
				return err;
			memset(e, 0, sizeof(*e));
		}
		/* Not cached, or cached as another object (freed since, its address reused): read
		 * the object there now; it replaces the entry, whether or not it is the frame's. */
		if (!e || !py_code__matches(e, print)) {
			err = py_code__read(p, pid, code, &fresh);
			if (err) {
				if (created && e)
					hashmap__delete(p->pycodes, &code);
				return err;
			}
			if (e) {
				free(e->table);
				*e = fresh;
			} else {
				e = &fresh;
			}
		}
	}
	if (!e || !py_code__matches(e, print)) {
		if (e == &fresh)
			free(fresh.table);
		out->name = NULL;
		return 0;
	}
	out->name = out->system_name = e->name;
	out->file = e->file;
	out->start_line = e->firstlineno;
	c = (struct pycode){
		.table = e->table, .table_len = e->table_len, .firstlineno = e->firstlineno};
	out->line = pycode__line(p->py, &c, prof_py_frame_instr(frame));
	if (e == &fresh)
		free(fresh.table);
	return 0;
}

/* After a read: wanted threads now named go, the others count one more read (at most
 * PY_NAMES_TRIES; past 64 to drop, the rest go after the next read). */
static void pywanted_prune(struct pynames *p)
{
	uint64_t gone[64];
	const uint64_t *key;
	size_t it = 0, n = 0;
	void *v;

	while (p->pywanted && n < 64 && hashmap__next(p->pywanted, &it, (const void **)&key, &v))
		if ((p->pynames && hashmap__find(p->pynames, key)) ||
		    ++*(uint32_t *)v >= PY_NAMES_TRIES)
			gone[n++] = *key;
	for (size_t i = 0; i < n; i++)
		hashmap__delete(p->pywanted, &gone[i]);
}

/* Read pid's Python thread names now (it runs Python: p->py). */
static int read_pynames(struct pynames *p, uint32_t pid)
{
	struct pythread_name *names;
	size_t n = 0;
	uint64_t key;
	int err;

	p->pynames_read_ns = (uint64_t)clock__mono_ns();
	if (!p->pynames && hashmap__new(&p->pynames, sizeof(uint64_t), sizeof(const char *)))
		return -ENOMEM;
	names = calloc(PY_NAMES_MAX, sizeof(*names));
	if (!names)
		return -ENOMEM;
	err = pythreads__read(names, PY_NAMES_MAX, &n, p->py, pycode__read_pid,
			      (void *)(uintptr_t)pid, p->py_runtime);
	pr_debug("pid %u: %zu Python thread names (%s)\n", pid, n, err ? strerror(-err) : "ok");
	if (err == -ENOMEM)
		goto cleanup;
	err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const char *name = strpool__intern(p->pool, names[i].name);
		void *v;

		key = names[i].tid;
		if (!name || (!hashmap__find(p->pynames, &key) &&
			      hashmap__count(p->pynames) >= PYTHREADS_MAX_THREADS)) {
			err = name ? 0 : -ENOMEM;
			break;
		}
		err = hashmap__upsert(p->pynames, &v, &key, NULL);
		if (!err)
			*(const char **)v = name;
	}
cleanup:
	free(names);
	if (!err)
		pywanted_prune(p);
	return err;
}

int pynames__thread(struct pynames *p, uint32_t pid, uint32_t tid)
{
	uint64_t key = tid, now;
	bool created;
	void *v;

	if (!p || !p->py || (p->pynames && hashmap__find(p->pynames, &key)))
		return 0;
	/* Wanted until named (or given up): a later read may find it (symbolizer__python_retry). */
	if (!p->pywanted && hashmap__new(&p->pywanted, sizeof(uint64_t), sizeof(uint32_t)))
		return -ENOMEM;
	if (hashmap__count(p->pywanted) < PY_WANTED_MAX) {
		if (hashmap__upsert(p->pywanted, &v, &key, &created))
			return -ENOMEM;
		if (created)
			*(uint32_t *)v = 0;
	}
	now = (uint64_t)clock__mono_ns();
	if (p->pynames_read_ns && now - p->pynames_read_ns < PY_NAMES_REREAD_NS)
		return 0;
	return read_pynames(p, pid);
}

int pynames__retry(struct pynames *p, uint32_t pid)
{
	if (p && p->py && p->pywanted && hashmap__count(p->pywanted) &&
	    (uint64_t)clock__mono_ns() - p->pynames_read_ns >= PY_NAMES_REREAD_NS)
		return read_pynames(p, pid);
	return 0;
}

int pynames__read(struct pynames *p, uint32_t pid)
{
	return p && p->py ? read_pynames(p, pid) : 0;
}

const char *pynames__thread_name(const struct pynames *p, uint32_t tid)
{
	uint64_t key = tid;
	const char **v;

	if (!p || !p->pynames)
		return NULL;
	v = hashmap__find(p->pynames, &key);
	return v ? *v : NULL;
}

int pynames__mark(const struct pynames *p, int (*mark)(void *ctx, const void *s), void *ctx)
{
	size_t it = 0;
	void *v;
	int err = 0;

	while (!err && p && p->pycodes && hashmap__next(p->pycodes, &it, NULL, &v)) {
		const struct py_code_entry *e = v;

		if (!(err = mark(ctx, e->name)))
			err = mark(ctx, e->file);
	}
	it = 0;
	while (!err && p && p->pynames && hashmap__next(p->pynames, &it, NULL, &v))
		err = mark(ctx, *(const char **)v);
	return err;
}
