/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The unwinder's own records, shared by its two files and by nothing else: unwinder.c keeps
 * processes, their mappings and file records and runs the builds; bpf_tables.c keeps the
 * loaded tables in BPF's maps (load, share by content, publish by inode, evict, quarantine ids).
 */
#ifndef PROF_UNWINDER_PRIV_H
#define PROF_UNWINDER_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prof_unwind.h"
#include "sym/python.h"
#include "unwind/unwinder.h"
#include "util/bgprio.h"

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
	int pending_fd; /* filled, not yet in prof_unwind_tables (unw_commit): its inner map; else
			   -1 */
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
	bool py_watch;		     /* … and what it answered (code_dealloc probed) */
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
	struct bgprio prio; /* the worker's: nice 19 unless someone waits on it */
	bool urgent;	    /* unwinder__set_urgent: prio raised for held processes */
	bool catching_up;   /* unwinder__catch_up: prio raised until nothing is pending */
	int procs_fd, tables_fd, files_fd;
	char *proc_root;
	struct unwind_table_opts table_opts;
	void (*build_hook)(void *arg);
	void *build_hook_arg;
	bool (*on_python)(void *arg, uint32_t pid, const struct py_version *v,
			  const struct prof_py_proc *py, const struct unwinder_py_code *code);
	void *on_python_arg;

	struct hashmap *files;	/* struct file_key -> struct file * */
	struct hashmap *tables; /* content hash -> struct table * (chain head) */
	struct hashmap *procs;	/* u32 pid -> struct proc * */
	uint32_t next_id;	/* next table id never used (ids start at 1; 0 means none) */
	uint32_t entry_gen;	/* the last process entry's generation (prof_unwind_proc.gen) */
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
	/* Tables filled during this poll, inserted into prof_unwind_tables together (unw_commit).
	 */
	struct table **pending;
	uint32_t npending, pending_cap;
	struct unwinder_stats stats;
	/* The first files whose table could not be built, escaped, with why (the summary line of
	 * unwind_table_build_failed); "" when none. */
	char build_failed[192];
	uint64_t build_us;

	pthread_t thread;
	bool started, stop;
	pthread_mutex_t lock;
	pthread_cond_t work, done; /* the queue has work; a result is back */
	struct job *queue, *queue_tail, *results;
};

/* Hashmap values are stored unaligned: pointers in them are copied, never dereferenced. */
static inline void *slot__get(const void *slot)
{
	void *p;

	memcpy(&p, slot, sizeof(p));
	return p;
}

static inline void slot__set(void *slot, const void *p)
{
	memcpy(slot, &p, sizeof(p));
}

#define CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void lru__init(struct lru *head)
{
	head->prev = head->next = head;
}

static inline bool lru__linked(const struct lru *l)
{
	return l->next != NULL;
}

/* Append l as the newest. */
static inline void lru__push(struct lru *head, struct lru *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static inline void lru__unlink(struct lru *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = NULL;
}

/* The oldest, or NULL. */
static inline struct lru *lru__first(const struct lru *head)
{
	return head->next == head ? NULL : head->next;
}

static inline int id_list__push(struct id_list *l, uint32_t id)
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

static inline uint32_t id_list__pop(struct id_list *l)
{
	uint32_t id = l->ids[l->head];

	l->head = (l->head + 1) % l->cap;
	l->n--;
	return id;
}

/* Put back the id just popped (its slot is free). */
static inline void id_list__unpop(struct id_list *l, uint32_t id)
{
	l->head = (l->head + l->cap - 1) % l->cap;
	l->ids[l->head] = id;
	l->n++;
}

/* bpf_tables.c: on the unused LRU exactly when no process record maps it (the vDSO's never). */
void unw_table_settle(struct unwinder *u, struct table *t);
/* bpf_tables.c: take one finished build back, share or load its table; whether the file
 * became ready. */
bool unw_install(struct unwinder *u, struct job *j);
/* bpf_tables.c: insert the tables unw_install filled into prof_unwind_tables at once (one
 * kernel wait for them all), then make their files findable by inode.  Before any entry names
 * them. */
void unw_commit(struct unwinder *u);
/* bpf_tables.c: an eviction pass from poll; only our own failure (allocation) is returned. */
int unw_evict(struct unwinder *u);
/* unwinder.c: on the idle LRU exactly when no process record maps it and no build holds it. */
void unw_file_settle(struct unwinder *u, struct file *f);

#endif
