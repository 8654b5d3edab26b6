// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/unwinder.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "util/hashmap.h"
#include "util/clock.h"
#include "util/log.h"
#include "proc/maps.h"
#include "prof_unwind.h"
#include "proc/safe_open.h"
#include "sym/python.h"

/* Executable PT_LOAD segments kept per file (ELF files have one or two). */
#define MAX_SEGS   8
#define PAGE_MASK  4095ULL /* mappings start at a page boundary of the file */
/* Builds queued at once, each holding an open file: bounded so that a host with thousands of
 * distinct files never runs us out of descriptors. */
#define MAX_QUEUED 64

enum file_state {
	/* Known, but the queue holds its cap of open files: opened again and queued when a
	 * build ends (from a process that maps it) or when a process mapping it is added. */
	FILE_DEFERRED,
	FILE_BUILDING,
	FILE_READY,  /* table set */
	FILE_FAILED, /* no table: frame pointers, not rebuilt while the record is kept */
};

/* Defaults of the caps of struct unwinder_opts. */
#define MAX_UNUSED_TABLES 256
#define MAX_UNUSED_BYTES  (64ull << 20)
#define MAX_IDLE_FILES	  4096

/* A link of an intrusive LRU list: the head's next is the oldest. */
struct lru {
	struct lru *prev, *next; /* NULL when not on a list */
};

struct seg {
	uint64_t offset, vaddr, filesz;
};

/* A FIFO of table ids. */
struct id_list {
	uint32_t *ids;
	uint32_t head, n, cap;
};

/* One loaded table, shared by every file whose (base, rows) it holds. */
struct table {
	struct table *next; /* another table with the same content hash */
	struct lru lru;	    /* on unused_tables while no process record maps its files */
	struct file *files; /* the ready files that hold it (chained by tnext) */
	uint64_t hash, base;
	uint32_t id, nchunks;
	uint32_t users; /* mappings of process records whose file holds this table */
	bool pinned;	/* the vDSO's: kept for the whole run */
	bool kept;	/* unused, but a kernel entry we did not write points at it */
};

enum file_kind {
	KEY_FILE = 1, /* dev, ino, size, mtime of the mapped file */
	KEY_VDSO = 2, /* ino = hash of the image, size = its size */
};

struct file_key {
	uint32_t kind;
	uint32_t pad;
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};

struct file {
	struct lru lru;	    /* on idle_files while no process record maps it */
	struct file *tnext; /* the next file holding the same table */
	struct file_key key;
	enum file_state state;
	struct table *table; /* FILE_READY */
	uint32_t users;	     /* mappings of process records pointing here */
	uint32_t ready_gen;  /* poll generation that settled it (ready or failed) */
	uint32_t nsegs;
	struct seg segs[MAX_SEGS];
	char hint[32];	   /* the basename a process maps it by (a version hint for Python) */
	struct py_elf *py; /* the CPython in it (NULL: none) */
	bool py_warned;	   /* a version we do not walk was said once */
};

struct mapping {
	uint64_t start, end, offset;
	uint64_t inode; /* the maps line's identity, to open the file again (deferred) */
	uint32_t dev_major, dev_minor;
	struct file *file; /* NULL: anonymous, refused or gone: frame pointers */
	bool file_backed;  /* a path or the vDSO: kept first when there are too many */
};

struct proc {
	const struct py_version *py; /* what on_python was last told */
	uint64_t py_runtime;	     /* … and where */
	uint32_t n;
	struct mapping maps[];
};

/*
 * A build handed to the worker and back.  The worker reads the input fields and writes the
 * results; it never touches file (carried back for unwinder__poll) nor anything else of ours.
 */
struct job {
	struct job *next;
	struct file *file;
	int fd;		   /* input: an ELF file (owned), or -1 … */
	void *image;	   /* … an ELF image in memory (owned) */
	size_t image_size; /* results below */
	int err;
	struct prof_unwind_chunk *chunks;
	uint32_t nchunks, nsegs;
	uint64_t hash, base, us;
	struct seg segs[MAX_SEGS];
	char hint[32];	  /* input: file->hint */
	struct py_elf py; /* the CPython in the file, if any */
};

struct unwinder {
	int procs_fd, tables_fd, files_fd;
	char *proc_root;
	struct unwind_table_opts table_opts;
	void (*build_hook)(void *arg);
	void *build_hook_arg;
	void (*on_python)(void *arg, uint32_t pid, const struct py_version *v,
			  const struct prof_py_proc *py);
	void *on_python_arg;

	struct hashmap *files;	/* struct file_key -> struct file * */
	struct hashmap *tables; /* content hash -> struct table * (chain head) */
	struct hashmap *procs;	/* u32 pid -> struct proc * */
	uint32_t next_id;	/* next table id never used (ids start at 1; 0 means none) */
	/* Ids of evicted tables: quarantined until a walk of the process map started after their
	 * deletion finds no entry holding them, then free for the next load (oldest first). */
	struct id_list quarantine, free_ids;
	/* Tables no process record maps (not the vDSO's), oldest first; their count and size. */
	struct lru unused_tables;
	uint32_t nunused, nkept; /* kept: named by a kernel entry we did not write */
	uint64_t unused_bytes, kept_bytes;
	/* File records no process record maps (none building), oldest first. */
	struct lru idle_files;
	uint32_t nidle;
	uint32_t max_unused_tables, max_idle_files;
	uint64_t max_unused_bytes;
	uint64_t max_table_bytes; /* every loaded table, in use or not */
	uint32_t procs_max;	  /* the process map's max_entries: bounds a walk */
	bool evict_due;		  /* an LRU grew or the processes changed since the last pass */
	uint32_t queued;	  /* jobs queued and not yet taken back by poll */
	uint32_t deferred;	  /* files in FILE_DEFERRED */
	uint32_t max_queued;
	uint32_t gen;			/* poll generation */
	struct prof_unwind_proc *entry; /* scratch for one process's kernel entry */
	struct prof_unwind_chunk *cmp;	/* scratch for comparing a loaded chunk */
	struct unwinder_stats stats;
	uint64_t build_us;

	pthread_t thread;
	bool started, stop;
	pthread_mutex_t lock;
	pthread_cond_t work, done; /* the queue has work; a result is back */
	struct job *queue, *queue_tail, *results;
};

/* Hashmap values are stored unaligned: pointers in them are copied, never dereferenced. */
static void *slot__get(const void *slot)
{
	void *p;

	memcpy(&p, slot, sizeof(p));
	return p;
}

static void slot__set(void *slot, const void *p)
{
	memcpy(slot, &p, sizeof(p));
}

#define CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static void lru__init(struct lru *head)
{
	head->prev = head->next = head;
}

static bool lru__linked(const struct lru *l)
{
	return l->next != NULL;
}

/* Append l as the newest. */
static void lru__push(struct lru *head, struct lru *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static void lru__unlink(struct lru *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

/* The oldest, or NULL. */
static struct lru *lru__first(const struct lru *head)
{
	return head->next == head ? NULL : head->next;
}

static int id_list__push(struct id_list *l, uint32_t id)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? 2 * l->cap : 64;
		uint32_t *ids = malloc(cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		for (uint32_t i = 0; i < l->n; i++)
			ids[i] = l->ids[(l->head + i) % l->cap];
		free(l->ids);
		l->ids = ids;
		l->cap = cap;
		l->head = 0;
	}
	l->ids[(l->head + l->n++) % l->cap] = id;
	return 0;
}

static uint32_t id_list__pop(struct id_list *l)
{
	uint32_t id = l->ids[l->head];

	l->head = (l->head + 1) % l->cap;
	l->n--;
	return id;
}

/* Put back the id just popped (its slot is free). */
static void id_list__unpop(struct id_list *l, uint32_t id)
{
	l->head = (l->head + l->cap - 1) % l->cap;
	l->ids[l->head] = id;
	l->n++;
}

static uint64_t table__bytes(const struct table *t)
{
	return (uint64_t)t->nchunks * sizeof(struct prof_unwind_chunk);
}

/* Off the unused LRU (used again, or evicted), its bytes and kept state with it. */
static void table__leave_unused(struct unwinder *u, struct table *t)
{
	lru__unlink(&t->lru);
	u->nunused--;
	u->unused_bytes -= table__bytes(t);
	if (t->kept) {
		u->nkept--;
		u->kept_bytes -= table__bytes(t);
	}
	t->kept = false;
}

/* On the unused LRU exactly when no process record maps it (the vDSO's never). */
static void table__settle(struct unwinder *u, struct table *t)
{
	bool unused = t->users == 0 && !t->pinned;

	if (unused == lru__linked(&t->lru))
		return;
	if (unused) {
		lru__push(&u->unused_tables, &t->lru);
		u->nunused++;
		u->unused_bytes += table__bytes(t);
		u->evict_due = true;
		return;
	}
	table__leave_unused(u, t);
}

/* On the idle LRU exactly when no process record maps it and no build holds it; a ready vDSO
 * record stays with its table. */
static void file__settle(struct unwinder *u, struct file *f)
{
	bool idle = f->users == 0 && f->state != FILE_BUILDING &&
		    !(f->key.kind == KEY_VDSO && f->state == FILE_READY);

	if (idle == lru__linked(&f->lru))
		return;
	if (idle) {
		lru__push(&u->idle_files, &f->lru);
		u->nidle++;
		u->evict_due = true;
	} else {
		lru__unlink(&f->lru);
		u->nidle--;
	}
}

/* A mapping of a process record points at f from now on (or no longer). */
static void file__use(struct unwinder *u, struct file *f)
{
	f->users++;
	if (f->table) {
		f->table->users++;
		table__settle(u, f->table);
	}
	file__settle(u, f);
}

static void file__unuse(struct unwinder *u, struct file *f)
{
	f->users--;
	if (f->table) {
		f->table->users--;
		table__settle(u, f->table);
	}
	file__settle(u, f);
}

/* Drop a process record: its files lose a user each. */
static void proc__free(struct unwinder *u, struct proc *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->n; i++)
		if (p->maps[i].file)
			file__unuse(u, p->maps[i].file);
	free(p);
}

/* ---- the worker's side ------------------------------------------------------------------- */

static int job__read_segs(struct job *j)
{
	Elf *elf;
	size_t n;
	int err = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* Read, not mmapped: the file's owner may truncate it under us. */
	elf = j->fd >= 0 ? elf_begin(j->fd, ELF_C_READ, NULL) : elf_memory(j->image, j->image_size);
	if (!elf)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &n) != 0) {
		err = -ENOEXEC;
		goto cleanup;
	}
	for (size_t i = 0; i < n && j->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			err = -ENOEXEC;
			goto cleanup;
		}
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || ph.p_filesz == 0)
			continue;
		j->segs[j->nsegs++] = (struct seg){ph.p_offset, ph.p_vaddr, ph.p_filesz};
	}
	if (j->nsegs == 0)
		err = -ENOEXEC;
	/* An interpreter we can read Python frames from?  (Not a failure when it is not.) */
	if (!err && j->fd >= 0 && python__inspect_elf(elf, j->hint[0] ? j->hint : NULL, &j->py))
		j->py.status = PY_ELF_NOT_PYTHON;
cleanup:
	elf_end(elf);
	return err;
}

/* The kernel layout of include/prof_unwind.h: rows in chunks, an index first when > 1 chunk. */
static int job__layout(struct job *j, const struct unwind_table *t)
{
	const struct prof_unwind_row pad = {UINT32_MAX, PROF_UNWIND_CFA_NONE, 0, 0};
	uint32_t nr, ndata, first;
	const struct prof_unwind_row *rows = unwind_table__rows(t, &nr);

	if (nr == 0)
		return -ENODATA;
	if (nr > PROF_UNWIND_TABLE_ROWS_MAX)
		return -E2BIG;
	ndata = (nr + PROF_UNWIND_CHUNK_ROWS - 1) / PROF_UNWIND_CHUNK_ROWS;
	j->nchunks = ndata == 1 ? 1 : ndata + 1;
	first = j->nchunks - ndata;
	j->chunks = calloc(j->nchunks, sizeof(*j->chunks));
	if (!j->chunks)
		return -ENOMEM;
	for (uint64_t i = 0; i < (uint64_t)ndata * PROF_UNWIND_CHUNK_ROWS; i++)
		j->chunks[first + i / PROF_UNWIND_CHUNK_ROWS].rows[i % PROF_UNWIND_CHUNK_ROWS] =
			i < nr ? rows[i] : pad;
	if (first) {
		struct prof_unwind_index idx;

		for (uint32_t k = 0; k < PROF_UNWIND_INDEX_PCS; k++)
			idx.pcs[k] = k < ndata ? rows[(uint64_t)k * PROF_UNWIND_CHUNK_ROWS].pc
					       : UINT32_MAX;
		memcpy(&j->chunks[0], &idx, sizeof(idx));
	}
	j->base = unwind_table__base(t);
	j->hash = prof_mix64(hash_bytes(rows, (size_t)nr * sizeof(*rows)) ^ prof_mix64(j->base));
	return 0;
}

static void job__run(struct job *j, const struct unwind_table_opts *opts)
{
	struct unwind_table *t = NULL;
	uint64_t t0 = (uint64_t)clock__mono_us();

	j->err = j->fd >= 0 ? unwind_table__build(&t, j->fd, opts)
			    : unwind_table__build_mem(&t, j->image, j->image_size, opts);
	if (!j->err)
		j->err = job__read_segs(j);
	if (!j->err)
		j->err = job__layout(j, t);
	unwind_table__free(t);
	j->us = (uint64_t)clock__mono_us() - t0;
	/* The inputs are done with: release them here, off the caller's thread. */
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	free(j->image);
	j->image = NULL;
}

static void *worker(void *arg)
{
	struct unwinder *u = arg;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		struct job *j;

		while (!u->stop && !u->queue)
			pthread_cond_wait(&u->work, &u->lock);
		if (u->stop)
			break;
		j = u->queue;
		u->queue = j->next;
		if (!u->queue)
			u->queue_tail = NULL;
		pthread_mutex_unlock(&u->lock);

		if (u->build_hook)
			u->build_hook(u->build_hook_arg);
		job__run(j, &u->table_opts);

		pthread_mutex_lock(&u->lock);
		j->next = u->results;
		u->results = j;
		pthread_cond_broadcast(&u->done);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

/* ---- the caller's side --------------------------------------------------------------------- */

static void job__free(struct job *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	free(j->image);
	free(j->chunks);
	free(j);
}

static void jobs__free(struct job *j)
{
	while (j) {
		struct job *next = j->next;

		job__free(j);
		j = next;
	}
}

static struct file *file__find(struct unwinder *u, const struct file_key *key)
{
	void *slot = hashmap__find(u->files, key);

	return slot ? slot__get(slot) : NULL;
}

/* A new record for key, FILE_DEFERRED until file__submit. */
static int file__new(struct unwinder *u, struct file **out, const struct file_key *key)
{
	struct file *f;
	void *slot;
	int err;

	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	err = hashmap__upsert(u->files, &slot, key, NULL);
	if (err) {
		free(f);
		return err;
	}
	slot__set(slot, f);
	f->key = *key;
	f->state = FILE_DEFERRED;
	u->deferred++;
	file__settle(u, f); /* idle until a process record maps it */
	*out = f;
	return 0;
}

/* Queue the build of deferred file f from fd or image (owned from here on, also on failure). */
static int file__submit(struct unwinder *u, struct file *f, int fd, void *image, size_t image_size)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		if (fd >= 0)
			close(fd);
		free(image);
		return -ENOMEM;
	}
	*j = (struct job){.file = f, .fd = fd, .image = image, .image_size = image_size};
	memcpy(j->hint, f->hint, sizeof(j->hint));
	f->state = FILE_BUILDING;
	file__settle(u, f); /* the job holds it: never forgotten while building */
	u->deferred--;
	u->queued++;
	pthread_mutex_lock(&u->lock);
	if (u->queue_tail)
		u->queue_tail->next = j;
	else
		u->queue = j;
	u->queue_tail = j;
	pthread_cond_signal(&u->work);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

/* The record of key (created when new), its build queued from fd when deferred and there is
 * room; fd is closed otherwise.  NULL only when out of memory. */
static struct file *file__get(struct unwinder *u, const struct file_key *key, int fd,
			      const char *path)
{
	struct file *f = file__find(u, key);
	const char *base = path ? strrchr(path, '/') : NULL;

	if (!f && file__new(u, &f, key)) {
		close(fd);
		return NULL;
	}
	if (path && !f->hint[0])
		snprintf(f->hint, sizeof(f->hint), "%s", base ? base + 1 : path);
	if (f->state == FILE_DEFERRED && u->queued < u->max_queued)
		file__submit(u, f, fd, NULL, 0); /* a failure leaves it deferred */
	else
		close(fd);
	return f;
}

static void key__from_stat(struct file_key *key, const struct stat *st)
{
	memset(key, 0, sizeof(*key));
	key->kind = KEY_FILE;
	key->dev = st->st_dev;
	key->ino = st->st_ino;
	key->size = (uint64_t)st->st_size;
	key->mtime_sec = st->st_mtim.tv_sec;
	key->mtime_nsec = st->st_mtim.tv_nsec;
}

/* The record of the file behind maps line e of pid (queued when new), or NULL: frame pointers. */
static struct file *file__for_mapping(struct unwinder *u, uint32_t pid, const struct maps_entry *e)
{
	struct file_key key;
	struct stat st;
	int fd, err;

	err = safe_open__mapped(&fd, u->proc_root, pid, e, &st);
	if (err) {
		/* A process that is gone is no refusal; anything else (swapped, odd) is. */
		if (err != -ENOENT && err != -ESRCH)
			u->stats.files_refused++;
		return NULL;
	}
	key__from_stat(&key, &st);
	return file__get(u, &key, fd, e->path);
}

/* The vDSO's record, by content: every process of one kernel shares it. */
static struct file *file__for_vdso(struct unwinder *u, uint32_t pid, const struct maps_entry *e)
{
	uint64_t size = e->end - e->start;
	struct file_key key = {.kind = KEY_VDSO};
	struct iovec local, remote;
	struct file *f = NULL;
	void *buf;

	if (size == 0 || size > UNWINDER_VDSO_MAX) {
		u->stats.files_refused++;
		return NULL;
	}
	buf = malloc(size);
	if (!buf)
		return NULL;
	local = (struct iovec){buf, size};
	remote = (struct iovec){(void *)(uintptr_t)e->start, size};
	if (process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) != (ssize_t)size) {
		if (errno != ESRCH)
			u->stats.files_refused++;
		free(buf);
		return NULL;
	}
	key.ino = hash_bytes(buf, size);
	key.size = size;
	f = file__find(u, &key);
	if (f) {
		free(buf);
		return f;
	}
	/* Not bounded by max_queued: an image holds no descriptor, and one vDSO is the rule. */
	if (file__new(u, &f, &key)) {
		free(buf);
		return NULL;
	}
	file__submit(u, f, -1, buf, size);
	return f;
}

/* bias such that table pc = address - bias, for mapping m of a file whose table is loaded. */
static int mapping__bias(const struct mapping *m, uint64_t *out)
{
	const struct file *f = m->file;

	for (uint32_t i = 0; i < f->nsegs; i++) {
		const struct seg *s = &f->segs[i];

		if (m->offset >= (s->offset & ~PAGE_MASK) && m->offset < s->offset + s->filesz) {
			*out = m->start - m->offset + s->offset - s->vaddr + f->table->base;
			return 0;
		}
	}
	return -ENOENT;
}

/* Say once per file why the Python in it is not walked. */
static void python__warn(struct file *f, uint32_t pid, const char *why)
{
	if (f->py_warned)
		return;
	f->py_warned = true;
	if (f->py->major)
		pr_warn("pid %u runs Python %u.%u (%s): %s; its stacks stay native\n", pid,
			f->py->major, f->py->minor, f->hint[0] ? f->hint : "?", why);
	else
		pr_warn("pid %u runs a Python of unknown version (%s): %s; its stacks stay "
			"native\n",
			pid, f->hint[0] ? f->hint : "?", why);
}

/*
 * The CPython of pid's mappings, with runtime addresses, in *out; its version (NULL: none, or
 * one we do not walk, said once).
 */
static const struct py_version *proc__python(struct unwinder *u, uint32_t pid, const struct proc *p,
					     struct prof_py_proc *out)
{
	for (uint32_t i = 0; i < p->n; i++) {
		const struct mapping *m = &p->maps[i];
		struct file *f = m->file;
		const struct py_elf *e;
		uint64_t bias, load;

		if (!f || !f->py || f->state != FILE_READY || mapping__bias(m, &bias))
			continue;
		e = f->py;
		if (e->status == PY_ELF_UNSUPPORTED) {
			python__warn(f, pid, "Python frames are read from 3.8 to 3.13");
			continue;
		}
		if (e->status != PY_ELF_OK) {
			python__warn(f, pid, "its interpreter layout is not one we know");
			continue;
		}
		load = bias - f->table->base; /* runtime address = ELF address + load */
		if (python__validate((pid_t)pid, e, load + e->runtime) == -EINVAL) {
			u->stats.python_refused++;
			python__warn(f, pid, "its memory does not match the file");
			continue;
		}
		*out = (struct prof_py_proc){
			.runtime = load + e->runtime,
			.eval_lo = load + e->eval_lo,
			.eval_hi = load + e->eval_hi,
			.cold_lo = e->cold_hi ? load + e->cold_lo : 0,
			.cold_hi = e->cold_hi ? load + e->cold_hi : 0,
			.code_type = load + e->code_type,
			.version = (uint32_t)e->major << 8 | e->minor,
			.tsd = PROF_PY_GLIBC_TSD,
			.o = e->v.bpf,
		};
		out->o.co_firstlineno = e->v.co_firstlineno;
		out->o.co_filename = e->v.co_filename;
		return &e->v;
	}
	return NULL;
}

/* Write pid's kernel entry from its mappings as they stand now. */
static int proc__write(struct unwinder *u, uint32_t pid, struct proc *p)
{
	struct prof_unwind_proc *v = u->entry;
	const struct py_version *py;
	int err;

	memset(v, 0, sizeof(*v));
	py = proc__python(u, pid, p, &v->py);
	/* Another interpreter, or the same one elsewhere (an exec of it) */
	if ((py != p->py || v->py.runtime != p->py_runtime) && u->on_python)
		u->on_python(u->on_python_arg, pid, py, &v->py);
	p->py = py;
	p->py_runtime = v->py.runtime;
	for (uint32_t i = 0; i < p->n; i++) {
		const struct mapping *m = &p->maps[i];
		struct prof_unwind_mapping *k = &v->maps[v->nr++];
		uint64_t bias;

		k->start = m->start;
		k->end = m->end;
		if (m->file && m->file->state == FILE_READY && mapping__bias(m, &bias) == 0) {
			k->bias = bias;
			k->table_id = m->file->table->id;
			k->nchunks = m->file->table->nchunks;
		} else if (m->file &&
			   (m->file->state == FILE_BUILDING || m->file->state == FILE_DEFERRED)) {
			k->nchunks = PROF_UNWIND_NONE_YET; /* rewritten by unwinder__poll when in */
		}
	}
	err = bpf_map_update_elem(u->procs_fd, &pid, v, BPF_ANY);
	if (err) {
		err = -errno;
		u->stats.procs_failed++;
	}
	return err;
}

/* At most PROF_UNWIND_MAX_MAPPINGS, file-backed ones first, still in address order. */
static void proc__keep_first(struct proc *p, struct unwinder_stats *stats)
{
	uint32_t nfile = 0, n = 0, file_left, anon_left;

	if (p->n <= PROF_UNWIND_MAX_MAPPINGS)
		return;
	for (uint32_t i = 0; i < p->n; i++)
		nfile += p->maps[i].file_backed;
	file_left = PROF_UNWIND_MAX_MAPPINGS;
	anon_left = nfile >= PROF_UNWIND_MAX_MAPPINGS ? 0 : PROF_UNWIND_MAX_MAPPINGS - nfile;
	for (uint32_t i = 0; i < p->n; i++) {
		uint32_t *left = p->maps[i].file_backed ? &file_left : &anon_left;

		if (*left == 0)
			continue;
		(*left)--;
		p->maps[n++] = p->maps[i];
	}
	stats->mappings_dropped += p->n - n;
	p->n = n;
}

int unwinder__add_process(struct unwinder *u, uint32_t pid)
{
	struct proc *p = NULL, *old;
	struct maps *m = NULL;
	char path[PATH_MAX];
	void *v;
	int err;

	if (snprintf(path, sizeof(path), "%s/%u/maps", u->proc_root, pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	err = maps__read(&m, path);
	if (err)
		return err;
	p = calloc(1, sizeof(*p) + m->count * sizeof(p->maps[0]));
	if (!p) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		struct mapping *mp;

		/* The vsyscall page lies above user space: the unwinder stops there anyway. */
		if (!e->exec || strcmp(e->path, "[vsyscall]") == 0)
			continue;
		mp = &p->maps[p->n++];
		*mp = (struct mapping){.start = e->start,
				       .end = e->end,
				       .offset = e->offset,
				       .inode = e->inode,
				       .dev_major = e->dev_major,
				       .dev_minor = e->dev_minor};
		if (maps_entry__is_file(e)) {
			mp->file_backed = true;
			mp->file = file__for_mapping(u, pid, e);
		} else if (strcmp(e->path, "[vdso]") == 0) {
			mp->file_backed = true;
			mp->file = file__for_vdso(u, pid, e);
		}
	}
	proc__keep_first(p, &u->stats);
	for (uint32_t i = 0; i < p->n; i++)
		if (p->maps[i].file)
			file__use(u, p->maps[i].file);
	err = hashmap__upsert(u->procs, &v, &pid, NULL);
	if (err)
		goto cleanup;
	old = slot__get(v);
	if (old) { /* what the symbolizer was told stays true until proc__write says otherwise */
		p->py = old->py;
		p->py_runtime = old->py_runtime;
	}
	slot__set(v, p);
	/*
	 * The new entry first, then the old record's files lose their users: a table may become
	 * unused only once the kernel entry no longer names it (eviction, in unwinder__poll, comes
	 * later still).
	 */
	err = proc__write(u, pid, p);
	p = NULL;
	proc__free(u, old);
	u->evict_due = true;
cleanup:
	proc__free(u, p);
	maps__free(m);
	return err;
}

int unwinder__remove_process(struct unwinder *u, uint32_t pid)
{
	void *slot = hashmap__find(u->procs, &pid);
	struct proc *p;
	int err = 0;

	/* Also for a pid we never read: a fork's copy of an entry may have gone with it. */
	u->evict_due = true;
	if (!slot)
		return -ENOENT;
	p = slot__get(slot);
	hashmap__delete(u->procs, &pid);
	/* Already gone from the kernel map is fine: the loader may have cleaned up first. */
	if (bpf_map_delete_elem(u->procs_fd, &pid) && errno != ENOENT)
		err = -errno;
	/* After the delete: its tables become unused only once no entry of it names them (and an
	 * entry left by a failed delete is found by the eviction's walk). */
	proc__free(u, p);
	return err;
}

int unwinder__prepare(struct unwinder *u, int fd)
{
	struct file_key key;
	struct file *f;
	struct stat st;
	int dfd;

	if (fstat(fd, &st) != 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	key__from_stat(&key, &st);
	f = file__find(u, &key);
	if (f && f->state != FILE_DEFERRED)
		return 0;
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	return file__get(u, &key, dfd, NULL) ? 0 : -ENOMEM;
}

/* Whether loaded table t holds exactly the chunks of j (a hash match is not enough). */
static bool table__same(struct unwinder *u, const struct table *t, const struct job *j)
{
	uint32_t inner_id;
	bool same = false;
	int fd;

	if (t->base != j->base || t->nchunks != j->nchunks)
		return false;
	/* From userspace, an outer map's value reads back as the inner map's id. */
	if (bpf_map_lookup_elem(u->tables_fd, &t->id, &inner_id))
		return false;
	fd = bpf_map_get_fd_by_id(inner_id);
	if (fd < 0)
		return false;
	for (uint32_t i = 0; i < t->nchunks; i++) {
		same = bpf_map_lookup_elem(fd, &i, u->cmp) == 0 &&
		       memcmp(u->cmp, &j->chunks[i], sizeof(*u->cmp)) == 0;
		if (!same)
			break;
	}
	close(fd);
	return same;
}

/* An inner map holding j's chunks, inserted into prof_unwind_tables under a free id. */
static int table__load(struct unwinder *u, struct table **out, const struct job *j)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_INNER_MAP);
	struct table *t = NULL;
	void *slot = NULL;
	bool created = false, reused = false;
	uint32_t id = 0;
	int fd = -1, err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = hashmap__upsert(u->tables, &slot, &j->hash, &created);
	if (err)
		goto cleanup;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "prof_unw_table", sizeof(uint32_t),
			    sizeof(struct prof_unwind_chunk), j->nchunks, &o);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	for (uint32_t i = 0; i < j->nchunks; i++)
		if (bpf_map_update_elem(fd, &i, &j->chunks[i], BPF_ANY)) {
			err = -errno;
			goto cleanup;
		}
	/*
	 * Filled before it is published: the BPF side never sees a partial table.  An id from the
	 * free list was deleted and no entry names it any more (evict_pass); NOEXIST: never
	 * replace a table in place, which an entry may still name.
	 */
	reused = u->free_ids.n > 0;
	id = reused ? id_list__pop(&u->free_ids) : u->next_id++;
	if (bpf_map_update_elem(u->tables_fd, &id, &fd, BPF_NOEXIST)) {
		err = -errno;
		goto cleanup;
	}
	*t = (struct table){.hash = j->hash, .base = j->base, .id = id, .nchunks = j->nchunks};
	id = 0;
	t->next = created ? NULL : slot__get(slot);
	slot__set(slot, t);
	*out = t;
	t = NULL;
cleanup:
	if (err && created)
		hashmap__delete(u->tables, &j->hash);
	if (id && reused)
		id_list__unpop(&u->free_ids, id); /* unused: first again */
	else if (id)
		u->next_id--;
	if (fd >= 0)
		close(fd); /* the outer map holds the inner one */
	free(t);
	return err;
}

/*
 * Make a ready file's table findable by its inode (prof_unwind_files): the BPF walker then unwinds
 * through a mapping of it that no process entry holds yet.  Not for the vDSO, nor for a file with
 * more executable segments than the entry holds (its processes' entries still serve).
 */
static void file__publish(struct unwinder *u, const struct file *f)
{
	struct prof_unwind_file v = {0};
	struct prof_unwind_file_key inode;

	if (u->files_fd < 0 || f->key.kind != KEY_FILE || f->nsegs > PROF_UNWIND_FILE_SEGS)
		return;
	/* The kernel's dev_t encoding, as the vma's inode holds it. */
	inode.dev = (uint64_t)major(f->key.dev) << 20 | minor(f->key.dev);
	inode.ino = f->key.ino;
	v.table_id = f->table->id;
	v.nchunks = f->table->nchunks;
	v.base = f->table->base;
	v.nsegs = f->nsegs;
	for (uint32_t i = 0; i < f->nsegs; i++) {
		v.segs[i].offset = f->segs[i].offset;
		v.segs[i].vaddr = f->segs[i].vaddr;
		v.segs[i].filesz = f->segs[i].filesz;
	}
	if (bpf_map_update_elem(u->files_fd, &inode, &v, BPF_ANY))
		u->stats.files_unpublished++;
}

/* ---- eviction -------------------------------------------------------------------------------- */

/*
 * Why no BPF program ever reads an evicted table's id with another file's rows:
 *   1. A table is evicted only when no process record of ours maps any of its files (users 0),
 *      and a record's files lose their users only after its kernel entry was rewritten or
 *      deleted (unwinder__add_process, unwinder__remove_process).  So no entry we wrote names
 *      it, unless the write failed; entries we did not write (the BPF fork handler copies the
 *      parent's entry to the child) are looked for by walking the process map first: a table
 *      some entry names is kept (t->kept) and tried again at a later pass.
 *   2. Its inode entries (prof_unwind_files) are deleted next, then the table from the outer
 *      map.  The kernel makes that delete wait until every BPF program running at the time has
 *      returned (map-in-map deletes do a synchronize_rcu: kernel/bpf/syscall.c,
 *      maybe_wait_bpf_programs): a program that read an entry or an inode entry naming the id
 *      before is done, and one starting later finds no table there (frame pointers).
 *   3. The id is quarantined, and free for a new table only after a second walk, started after
 *      the delete, finds no entry naming it: a fork's copy made from an entry the first walk
 *      missed (a process forking while the walk ran and its parent's entry going away before
 *      the walk reached it) is caught there.  Only a second such coincidence in the same line
 *      of processes during the second walk (milliseconds) could escape both.
 *   4. A new table is inserted with BPF_NOEXIST, never over a loaded one: an id's rows never
 *      change under an entry naming it.
 */

/* Bit per table id: the ids the kernel's process entries name now. */
static int procs__walk(struct unwinder *u, uint64_t **out)
{
	uint64_t steps = 0, limit = 4ull * u->procs_max + 64;
	uint32_t words = u->next_id / 64 + 1, key = 0, next;
	uint64_t *seen = calloc(words, sizeof(*seen));
	const uint32_t *prev = NULL;
	int err = 0;

	*out = NULL;
	if (!seen)
		return -ENOMEM;
	for (;;) {
		if (bpf_map_get_next_key(u->procs_fd, prev, &next)) {
			err = errno == ENOENT ? 0 : -errno;
			break;
		}
		/* A key deleted under us restarts the walk from the first: bounded, tried again at
		 * a later pass when entries go away faster than we read them. */
		if (++steps > limit) {
			err = -EAGAIN;
			break;
		}
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(u->procs_fd, &key, u->entry)) {
			if (errno == ENOENT)
				continue;
			err = -errno;
			break;
		}
		for (uint32_t i = 0; i < u->entry->nr && i < PROF_UNWIND_MAX_MAPPINGS; i++) {
			uint32_t id = u->entry->maps[i].table_id;

			if (id && id < u->next_id)
				seen[id / 64] |= 1ull << (id % 64);
		}
	}
	if (err) {
		free(seen);
		return err;
	}
	*out = seen;
	return 0;
}

static bool id__seen(const uint64_t *seen, uint32_t id)
{
	return seen[id / 64] >> (id % 64) & 1;
}

/* Quarantined ids that no entry names any more become free (in the order they came). */
static void quarantine__release(struct unwinder *u, const uint64_t *seen)
{
	for (uint32_t n = u->quarantine.n; n; n--) {
		uint32_t id = id_list__pop(&u->quarantine);
		struct id_list *to = id__seen(seen, id) ? &u->quarantine : &u->free_ids;

		/* Pushing back what was just popped needs no room; a full free list loses the
		 * id, never reuses it. */
		id_list__push(to, id);
	}
}

/* Remove f's inode entry if it names f's table (another record of that inode may own it). */
static void file__unpublish(struct unwinder *u, const struct file *f)
{
	struct prof_unwind_file_key inode;
	struct prof_unwind_file v;

	if (u->files_fd < 0 || f->key.kind != KEY_FILE || !f->table)
		return;
	inode.dev = (uint64_t)major(f->key.dev) << 20 | minor(f->key.dev);
	inode.ino = f->key.ino;
	if (bpf_map_lookup_elem(u->files_fd, &inode, &v) == 0 && v.table_id == f->table->id)
		bpf_map_delete_elem(u->files_fd, &inode);
}

/* Forget a record no process record maps and no build holds: mapped again, it is rebuilt. */
static void file__forget(struct unwinder *u, struct file *f)
{
	if (lru__linked(&f->lru)) {
		lru__unlink(&f->lru);
		u->nidle--;
	}
	if (f->state == FILE_DEFERRED)
		u->deferred--;
	hashmap__delete(u->files, &f->key);
	u->stats.files_forgotten++;
	free(f->py);
	free(f);
}

/* Take t off its content hash chain. */
static void table__unchain(struct unwinder *u, struct table *t)
{
	void *slot = hashmap__find(u->tables, &t->hash);
	struct table *head = slot ? slot__get(slot) : NULL;

	if (head == t) {
		if (t->next)
			slot__set(slot, t->next);
		else
			hashmap__delete(u->tables, &t->hash);
		return;
	}
	for (struct table *p = head; p; p = p->next)
		if (p->next == t) {
			p->next = t->next;
			return;
		}
}

/* Idle file records past the cap, oldest first (a ready one leaves its table to the table LRU). */
static void files__evict(struct unwinder *u)
{
	while (u->nidle > u->max_idle_files) {
		struct file *f = CONTAINER_OF(lru__first(&u->idle_files), struct file, lru);

		if (f->table) {
			struct file **pp = &f->table->files;

			file__unpublish(u, f);
			while (*pp != f)
				pp = &(*pp)->tnext;
			*pp = f->tnext;
		}
		file__forget(u, f);
	}
}

/* Unload unused table t (steps 2 and 3 of the comment above; the walk was done). */
static void table__evict(struct unwinder *u, struct table *t)
{
	struct file *f, *next;

	for (f = t->files; f; f = next) {
		next = f->tnext;
		file__unpublish(u, f);
		file__forget(u, f);
	}
	table__unchain(u, t);
	/* Not back on the free list when the kernel kept it: that id is never used again. */
	if (bpf_map_delete_elem(u->tables_fd, &t->id) == 0 || errno == ENOENT)
		id_list__push(&u->quarantine, t->id);
	table__leave_unused(u, t);
	u->stats.tables_evicted++;
	u->stats.table_bytes -= table__bytes(t);
	free(t);
}

/* Unused tables, not counting those a kernel entry we did not write still names, over a cap. */
static bool tables__over(const struct unwinder *u)
{
	return u->nunused - u->nkept > u->max_unused_tables ||
	       u->unused_bytes - u->kept_bytes > u->max_unused_bytes;
}

/* A new table of `bytes` would take the loaded ones past the budget. */
static bool budget__over(const struct unwinder *u, uint64_t bytes)
{
	return bytes > u->max_table_bytes || u->stats.table_bytes > u->max_table_bytes - bytes;
}

/*
 * Bring the idle files and unused tables down to their caps, and unload `need` tables more (the
 * table map is full) or until a new table of need_bytes fits the budget.  Returns the number of
 * tables unloaded, or -errno when a walk of the process map failed (nothing unloaded then).
 */
static int evict_pass(struct unwinder *u, uint32_t need, uint64_t need_bytes)
{
	uint64_t *seen = NULL;
	struct lru *l, *next;
	int evicted = 0, err;

	u->evict_due = false;
	files__evict(u);
	if (!need && !tables__over(u) && !u->quarantine.n && !(need_bytes && u->nunused))
		return 0;
	err = procs__walk(u, &seen);
	if (err)
		return err;
	quarantine__release(u, seen);
	u->nkept = 0;
	u->kept_bytes = 0;
	for (l = lru__first(&u->unused_tables); l && l != &u->unused_tables; l = l->next) {
		struct table *t = CONTAINER_OF(l, struct table, lru);

		t->kept = id__seen(seen, t->id);
		u->nkept += t->kept;
		u->kept_bytes += t->kept ? table__bytes(t) : 0;
	}
	for (l = lru__first(&u->unused_tables);
	     l && l != &u->unused_tables &&
	     (need || tables__over(u) || (need_bytes && budget__over(u, need_bytes)));
	     l = next) {
		struct table *t = CONTAINER_OF(l, struct table, lru);

		next = l->next;
		if (t->kept)
			continue;
		table__evict(u, t);
		evicted++;
		need -= need > 0;
	}
	free(seen);
	if (!evicted)
		return 0;
	/* The second walk, after the deletes (step 3). */
	if (procs__walk(u, &seen) == 0)
		quarantine__release(u, seen);
	free(seen);
	return evicted;
}

/* Take one finished build back: share or load its table.  Whether the file became ready. */
static bool job__install(struct unwinder *u, struct job *j)
{
	struct file *f = j->file;
	struct table *t = NULL;
	void *head;
	int err;

	/* Summed in µs: most builds take under a millisecond. */
	u->build_us += j->us;
	u->stats.build_ms = u->build_us / 1000;
	f->state = FILE_FAILED;
	f->ready_gen = u->gen; /* its mappings are rewritten: "none yet" becomes "none" */
	if (j->err) {
		u->stats.table_build_failed++;
		file__settle(u, f);
		return false;
	}
	f->nsegs = j->nsegs;
	memcpy(f->segs, j->segs, sizeof(f->segs));
	if (j->py.status != PY_ELF_NOT_PYTHON && !f->py) {
		f->py = malloc(sizeof(*f->py));
		if (f->py)
			*f->py = j->py;
	}
	head = hashmap__find(u->tables, &j->hash);
	for (t = head ? slot__get(head) : NULL; t; t = t->next)
		if (table__same(u, t, j))
			break;
	if (t) {
		u->stats.tables_shared++;
	} else {
		uint64_t bytes = (uint64_t)j->nchunks * sizeof(struct prof_unwind_chunk);

		/* Past the kernel-memory budget: unused tables go first, oldest first; if that is
		 * not enough the file is left to frame pointers like any table that would not load.
		 */
		if (budget__over(u, bytes))
			evict_pass(u, 0, bytes);
		if (budget__over(u, bytes)) {
			u->stats.tables_over_budget++;
			file__settle(u, f);
			return false;
		}
		err = table__load(u, &t, j);
		/* The table map is full: unload the oldest unused table and try once more. */
		if (err == -E2BIG && evict_pass(u, 1, 0) > 0)
			err = table__load(u, &t, j);
		if (err) {
			u->stats.table_load_failed++;
			file__settle(u, f);
			return false;
		}
		u->stats.tables_built++;
		u->stats.table_bytes += table__bytes(t);
	}
	f->table = t;
	f->tnext = t->files;
	t->files = f;
	t->users += f->users;
	t->pinned |= f->key.kind == KEY_VDSO; /* one per kernel: kept for the run */
	f->state = FILE_READY;
	f->ready_gen = u->gen;
	table__settle(u, t);
	file__settle(u, f);
	file__publish(u, f);
	return true;
}

/* Queue deferred files again while there is room, opened through a process that maps them. */
static void requeue_deferred(struct unwinder *u)
{
	const void *key;
	void *val;
	size_t it = 0;

	while (u->deferred && u->queued < u->max_queued &&
	       hashmap__next(u->procs, &it, &key, &val)) {
		const struct proc *p = slot__get(val);
		uint32_t pid;

		memcpy(&pid, key, sizeof(pid));
		for (uint32_t i = 0; i < p->n && u->queued < u->max_queued; i++) {
			const struct mapping *m = &p->maps[i];
			struct maps_entry e = {.start = m->start,
					       .end = m->end,
					       .inode = m->inode,
					       .dev_major = m->dev_major,
					       .dev_minor = m->dev_minor};
			struct file_key k;
			struct stat st;
			int fd;

			if (!m->file || m->file->state != FILE_DEFERRED)
				continue;
			/* Gone or changed since: another process, or a later add, will do. */
			if (safe_open__mapped(&fd, u->proc_root, pid, &e, &st))
				continue;
			key__from_stat(&k, &st);
			if (memcmp(&k, &m->file->key, sizeof(k)) == 0)
				file__submit(u, m->file, fd, NULL, 0);
			else
				close(fd);
		}
	}
}

/* An eviction pass from poll: only our own failure (allocation) is returned; a walk the kernel
 * cut short is tried again at the next pass. */
static int evict(struct unwinder *u)
{
	int err = evict_pass(u, 0, 0);

	if (err == -ENOMEM)
		return err;
	if (err < 0)
		u->evict_due = true;
	return 0;
}

int unwinder__poll(struct unwinder *u)
{
	struct job *list;
	const void *key;
	void *val;
	size_t it = 0;
	int ready = 0, settled = 0, err;

	pthread_mutex_lock(&u->lock);
	list = u->results;
	u->results = NULL;
	pthread_mutex_unlock(&u->lock);
	if (!list)
		return u->evict_due ? evict(u) : 0;
	u->gen++;
	while (list) {
		struct job *next = list->next;

		ready += job__install(u, list);
		settled++;
		u->queued--;
		job__free(list);
		list = next;
	}
	requeue_deferred(u);
	if (!settled)
		return u->evict_due ? evict(u) : 0;
	/* Rewrite the entries that map a file settled just now: its table, or that none comes. */
	while (hashmap__next(u->procs, &it, &key, &val)) {
		struct proc *p = slot__get(val);

		for (uint32_t i = 0; i < p->n; i++)
			if (p->maps[i].file &&
			    (p->maps[i].file->state == FILE_READY ||
			     p->maps[i].file->state == FILE_FAILED) &&
			    p->maps[i].file->ready_gen == u->gen) {
				uint32_t pid;

				memcpy(&pid, key, sizeof(pid));
				proc__write(u, pid, p); /* a failure is counted */
				break;
			}
	}
	/* After the rewrites: a table is judged unused only by entries as they stand now. */
	err = u->evict_due ? evict(u) : 0;
	return err ? err : ready;
}

int unwinder__wait(struct unwinder *u, int timeout_ms)
{
	uint64_t deadline =
		(uint64_t)clock__mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int err;

	for (;;) {
		struct timespec ts;
		uint64_t now;

		err = unwinder__poll(u);
		if (err < 0)
			return err;
		/* What is still deferred after a poll is mapped by no process we can read. */
		if (u->queued == 0)
			return 0;
		now = (uint64_t)clock__mono_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		clock__timespec(&ts, clock__mono_ns() + (int64_t)(deadline - now) * 1000000);
		pthread_mutex_lock(&u->lock);
		if (!u->results)
			pthread_cond_timedwait(&u->done, &u->lock, &ts);
		pthread_mutex_unlock(&u->lock);
	}
}

uint32_t unwinder__pending(const struct unwinder *u)
{
	return u->queued + u->deferred;
}

const struct unwinder_stats *unwinder__stats(const struct unwinder *u)
{
	return &u->stats;
}

/* The process map's size, which bounds a walk of it. */
static int procs__max(struct unwinder *u)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(u->procs_fd, &info, &len))
		return -errno;
	u->procs_max = info.max_entries;
	return 0;
}

int unwinder__new(struct unwinder **out, const struct unwinder_opts *opts)
{
	struct unwinder *u;
	pthread_condattr_t ca;
	sigset_t all, old;
	int err;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->procs_fd = u->tables_fd = u->files_fd = -1;
	u->next_id = 1;
	u->max_queued = opts->max_queued ? opts->max_queued : MAX_QUEUED;
	u->table_opts = opts->table_opts;
	u->build_hook = opts->build_hook;
	u->build_hook_arg = opts->build_hook_arg;
	u->on_python = opts->on_python;
	u->on_python_arg = opts->on_python_arg;
	u->max_unused_tables =
		opts->max_unused_tables ? opts->max_unused_tables : MAX_UNUSED_TABLES;
	u->max_unused_bytes = opts->max_unused_bytes ? opts->max_unused_bytes : MAX_UNUSED_BYTES;
	u->max_table_bytes = opts->max_table_bytes ? opts->max_table_bytes : UNWINDER_TABLE_BYTES;
	u->max_idle_files = opts->max_idle_files ? opts->max_idle_files : MAX_IDLE_FILES;
	lru__init(&u->unused_tables);
	lru__init(&u->idle_files);
	pthread_mutex_init(&u->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* unwinder__wait's deadline */
	pthread_cond_init(&u->work, NULL);
	pthread_cond_init(&u->done, &ca);
	pthread_condattr_destroy(&ca);

	u->proc_root = strdup(opts->proc_root ? opts->proc_root : "/proc");
	u->entry = calloc(1, sizeof(*u->entry));
	u->cmp = calloc(1, sizeof(*u->cmp));
	if (!u->proc_root || !u->entry || !u->cmp) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = hashmap__new(&u->files, sizeof(struct file_key), sizeof(struct file *));
	if (!err)
		err = hashmap__new(&u->tables, sizeof(uint64_t), sizeof(struct table *));
	if (!err)
		err = hashmap__new(&u->procs, sizeof(uint32_t), sizeof(struct proc *));
	if (err)
		goto cleanup;
	u->procs_fd = fcntl(opts->procs_fd, F_DUPFD_CLOEXEC, 0);
	if (u->procs_fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = procs__max(u);
	if (err)
		goto cleanup;
	u->tables_fd = fcntl(opts->tables_fd, F_DUPFD_CLOEXEC, 0);
	if (u->tables_fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (opts->files_fd > 0) {
		u->files_fd = fcntl(opts->files_fd, F_DUPFD_CLOEXEC, 0);
		if (u->files_fd < 0) {
			err = -errno;
			goto cleanup;
		}
	}
	/* Signals (SIGINT, SIGCHLD) stay with the caller's thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&u->thread, NULL, worker, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto cleanup;
	u->started = true;
	*out = u;
	u = NULL;
cleanup:
	unwinder__free(u);
	return err;
}

void unwinder__free(struct unwinder *u)
{
	size_t it = 0;
	const void *key;
	void *val;

	if (!u)
		return;
	if (u->started) {
		pthread_mutex_lock(&u->lock);
		u->stop = true;
		pthread_cond_signal(&u->work);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->thread, NULL);
	}
	jobs__free(u->queue);
	jobs__free(u->results);
	while (u->files && hashmap__next(u->files, &it, &key, &val))
		free(slot__get(val));
	it = 0;
	while (u->tables && hashmap__next(u->tables, &it, &key, &val))
		for (struct table *t = slot__get(val), *next; t; t = next) {
			next = t->next;
			free(t);
		}
	it = 0;
	while (u->procs && hashmap__next(u->procs, &it, &key, &val))
		free(slot__get(val));
	hashmap__free(u->files);
	hashmap__free(u->tables);
	hashmap__free(u->procs);
	if (u->procs_fd >= 0)
		close(u->procs_fd);
	if (u->tables_fd >= 0)
		close(u->tables_fd);
	if (u->files_fd >= 0)
		close(u->files_fd);
	pthread_cond_destroy(&u->work);
	pthread_cond_destroy(&u->done);
	pthread_mutex_destroy(&u->lock);
	free(u->quarantine.ids);
	free(u->free_ids.ids);
	free(u->entry);
	free(u->cmp);
	free(u->proc_root);
	free(u);
}
