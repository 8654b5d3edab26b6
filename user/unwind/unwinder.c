// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "unwind/unwinder.h"

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
#include "unwind/unwinder_priv.h"

/* On the idle LRU exactly when no process record maps it and no build holds it; a ready vDSO
 * record stays with its table. */
void unw_file_settle(struct unwinder *u, struct file *f)
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
		unw_table_settle(u, f->table);
	}
	unw_file_settle(u, f);
}

static void file__unuse(struct unwinder *u, struct file *f)
{
	f->users--;
	if (f->table) {
		f->table->users--;
		unw_table_settle(u, f->table);
	}
	unw_file_settle(u, f);
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

	bgprio__worker(&u->prio, "prof-unwind");
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
	unw_file_settle(u, f); /* idle until a process record maps it */
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
	unw_file_settle(u, f); /* the job holds it: never forgotten while building */
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
					     struct prof_py_proc *out,
					     struct unwinder_py_code *code)
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
		out->ts_thread_id = e->v.ts_thread_id;
		if (e->code_dealloc)
			*code = (struct unwinder_py_code){.map = {.start = m->start,
								  .end = m->end,
								  .offset = m->offset,
								  .inode = m->inode,
								  .dev_major = m->dev_major,
								  .dev_minor = m->dev_minor},
							  .offset = e->code_dealloc_offset};
		return &e->v;
	}
	return NULL;
}

/* Write pid's kernel entry from its mappings as they stand now. */
static int proc__write(struct unwinder *u, uint32_t pid, struct proc *p)
{
	struct prof_unwind_proc *v = u->entry;
	struct unwinder_py_code code = {0};
	const struct py_version *py;
	int err;

	memset(v, 0, sizeof(*v));
	v->gen = ++u->entry_gen ? u->entry_gen : ++u->entry_gen;
	py = proc__python(u, pid, p, &v->py, &code);
	/* Another interpreter, or the same one elsewhere (an exec of it) */
	if ((py != p->py || v->py.runtime != p->py_runtime) && u->on_python)
		p->py_watch =
			u->on_python(u->on_python_arg, pid, py, &v->py, code.offset ? &code : NULL);
	p->py = py;
	p->py_runtime = v->py.runtime;
	v->py.code_watch = py && p->py_watch ? pid : 0;
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

int unwinder__add_process(struct unwinder *u, uint32_t pid, const struct maps *given)
{
	struct proc *p = NULL, *old;
	const struct maps *m = given;
	struct maps *read = NULL;
	void *v;
	int err;

	if (!m) {
		err = maps__read_pid(&read, u->proc_root, pid);
		if (err)
			return err;
		m = read;
	}
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
		p->py_watch = old->py_watch;
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
	maps__free(read);
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

int unwinder__prepare(struct unwinder *u, int fd, const char *path)
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
	return file__get(u, &key, dfd, path) ? 0 : -ENOMEM;
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

static int poll_results(struct unwinder *u)
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
		return u->evict_due ? unw_evict(u) : 0;
	u->gen++;
	while (list) {
		struct job *next = list->next;

		ready += unw_install(u, list);
		settled++;
		u->queued--;
		job__free(list);
		list = next;
	}
	unw_commit(u); /* before any entry names the new tables */
	requeue_deferred(u);
	if (!settled)
		return u->evict_due ? unw_evict(u) : 0;
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
	err = u->evict_due ? unw_evict(u) : 0;
	return err ? err : ready;
}

int unwinder__poll(struct unwinder *u)
{
	int ret = poll_results(u);

	/* Once the first builds are in and none is queued (deferred: mapped by nobody we read). */
	if (u->catching_up && u->gen && u->queued == 0) {
		u->catching_up = false;
		bgprio__lower(&u->prio);
	}
	return ret;
}

void unwinder__set_urgent(struct unwinder *u, bool urgent)
{
	if (!u || u->urgent == urgent)
		return;
	u->urgent = urgent;
	if (urgent)
		bgprio__raise(&u->prio);
	else
		bgprio__lower(&u->prio);
}

static int unwinder_wait(struct unwinder *u, uint64_t deadline);

int unwinder__wait(struct unwinder *u, int timeout_ms)
{
	uint64_t deadline =
		(uint64_t)clock__mono_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int err;

	bgprio__raise(&u->prio); /* a process is held until the worker is done */
	err = unwinder_wait(u, deadline);
	bgprio__lower(&u->prio);
	return err;
}

static int unwinder_wait(struct unwinder *u, uint64_t deadline)
{
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

const char *unwinder__build_failed(const struct unwinder *u)
{
	return u->build_failed;
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
	bgprio__init(&u->prio);
	u->catching_up = opts->catch_up;
	if (u->catching_up)
		bgprio__raise(&u->prio); /* lowered by unwinder__poll */
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
		bgprio__raise(&u->prio); /* it finishes its build before it sees stop */
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
	bgprio__destroy(&u->prio);
	for (uint32_t i = 0; i < u->npending; i++) /* never left by a poll */
		close(u->pending[i]->pending_fd);
	free(u->pending);
	free(u->quarantine.ids);
	free(u->free_ids.ids);
	free(u->entry);
	free(u->cmp);
	free(u->proc_root);
	free(u);
}
