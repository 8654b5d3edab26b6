// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwinder's tables in BPF's maps (unwinder.h): a finished build's table shared with a loaded
 * one of the same content or loaded under a free id, published by inode, and unloaded by LRU and
 * budget in the order explained above evict_pass.
 */
#include "unwind/unwinder_priv.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/escape.h"
#include "util/hashmap.h"
#include "util/log.h"

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
void unw_table_settle(struct unwinder *u, struct table *t)
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

/* Whether loaded table t holds exactly the chunks of j (a hash match is not enough). */
static bool table__same(struct unwinder *u, const struct table *t, const struct job *j)
{
	uint32_t inner_id;
	bool same = false;
	int fd;

	if (t->base != j->base || t->nchunks != j->nchunks)
		return false;
	/* From userspace, an outer map's value reads back as the inner map's id; a table of this
	 * poll is not in it yet. */
	if (t->pending_fd >= 0)
		fd = fcntl(t->pending_fd, F_DUPFD_CLOEXEC, 0);
	else if (bpf_map_lookup_elem(u->tables_fd, &t->id, &inner_id))
		return false;
	else
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

/* Room for one more table of this poll. */
static int pending__reserve(struct unwinder *u)
{
	struct table **v;
	uint32_t cap;

	if (u->npending < u->pending_cap)
		return 0;
	cap = u->pending_cap ? 2 * u->pending_cap : 16;
	v = realloc(u->pending, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	u->pending = v;
	u->pending_cap = cap;
	return 0;
}

/*
 * An inner map holding j's chunks under a free id, its insert into prof_unwind_tables left to
 * unw_commit: the kernel waits for an RCU grace period at every insert into a map of maps
 * (kernel/bpf/syscall.c, maybe_wait_bpf_programs: 10-20 ms on our 2-core VMs), and a batch
 * waits once.  `import torch` brings 300 libraries: one at a time, 5 s of the event loop.
 */
static int table__load(struct unwinder *u, struct table **out, const struct job *j)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_INNER_MAP);
	struct table *t = NULL;
	void *slot = NULL;
	bool created = false;
	int fd = -1, err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = pending__reserve(u);
	if (!err)
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
	 * free list was deleted and no entry names it any more (evict_pass); unw_commit never
	 * replaces a table in place, which an entry may still name.
	 */
	*t = (struct table){
		.hash = j->hash, .base = j->base, .nchunks = j->nchunks, .pending_fd = fd};
	t->id = u->free_ids.n > 0 ? id_list__pop(&u->free_ids) : u->next_id++;
	fd = -1;
	t->next = created ? NULL : slot__get(slot);
	slot__set(slot, t);
	u->pending[u->npending++] = t;
	*out = t;
	t = NULL;
cleanup:
	if (err && created)
		hashmap__delete(u->tables, &j->hash);
	if (fd >= 0)
		close(fd);
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

/*
 * Unload unused tables v[0..n), already off the unused LRU and out of the byte count (steps 2
 * and 3 of the comment above; the walk was done): every file's inode entry first, then the
 * tables from the outer map in one batch.  On a map of maps the kernel waits for running BPF
 * programs once per call (a grace period: 8-9 ms on the 2-core Intel VM), and one delete per
 * table made the exit of a torch process (56 tables past the LRU's cap) wait half a second for
 * us.  Without the batch (an older kernel, or an error midway) they go one by one; ENOENT there
 * means the batch took it.
 */
static void tables__evict(struct unwinder *u, struct table **v, uint32_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	uint32_t *ids = calloc(n, sizeof(*ids)), count = n;
	struct file *f, *next;
	bool batched;

	for (uint32_t i = 0; i < n; i++) {
		for (f = v[i]->files; f; f = next) {
			next = f->tnext;
			file__unpublish(u, f);
			file__forget(u, f);
		}
		table__unchain(u, v[i]);
		if (ids)
			ids[i] = v[i]->id;
	}
	batched = ids && bpf_map_delete_batch(u->tables_fd, ids, &count, &o) == 0;
	/* The kernel waits once for a batch that deleted something: all of them, or those before
	 * the table it stopped at (ENOENT; count is then how many went).  A batch refused whole
	 * (no batches on this kernel) leaves count as it was: no wait. */
	if (batched || (ids && errno == ENOENT && count))
		u->stats.evict_waits++;
	for (uint32_t i = 0; i < n; i++) {
		struct table *t = v[i];
		bool gone = batched;

		if (!gone && bpf_map_delete_elem(u->tables_fd, &t->id) == 0) {
			u->stats.evict_waits++;
			gone = true;
		}
		/* Not back on the free list when the kernel kept it: that id is never used again.
		 */
		if (gone || errno == ENOENT)
			id_list__push(&u->quarantine, t->id);
		free(t);
	}
	free(ids);
}

/* Unused table t goes (tables__evict unloads it): off the LRU and the counts now. */
static void table__evicting(struct unwinder *u, struct table *t)
{
	table__leave_unused(u, t);
	u->stats.tables_evicted++;
	u->stats.table_bytes -= table__bytes(t);
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

/* Why a table was not built (unwind_table.h's errors), in a word or two. */
static const char *build_why(int err)
{
	switch (err) {
	case -ENODATA:
		return "no CFI";
	case -E2BIG:
		return "over the row cap";
	case -EFBIG:
		return "CFI over the byte cap";
	case -ETIME:
		return "over the time cap";
	case -EBADMSG:
		return "malformed CFI";
	case -ENOEXEC:
		return "not x86-64 ELF";
	default:
		return strerror(-err);
	}
}

/* File f's table could not be built: said with -v, and the first few kept for the summary. */
static void build_failed(struct unwinder *u, const struct file *f, int err)
{
	size_t used = strlen(u->build_failed);
	char name[64];

	escape__str(name, sizeof(name), f->hint[0] ? f->hint : "?");
	pr_info("no unwind table for %s: %s (frame pointers there)\n", name, build_why(err));
	if (used + 4 >= sizeof(u->build_failed))
		return;
	if (u->stats.table_build_failed >= 3) {
		if (u->stats.table_build_failed == 3)
			snprintf(u->build_failed + used, sizeof(u->build_failed) - used, ", ...");
		return;
	}
	snprintf(u->build_failed + used, sizeof(u->build_failed) - used, "%s%s (%s)",
		 used ? ", " : "", name, build_why(err));
}

/* A table in the kernel: said with -v -v (how big, for files near the row cap). */
static void table_loaded(const struct file *f, const struct table *t)
{
	char name[64];

	escape__str(name, sizeof(name), f->hint[0] ? f->hint : "?");
	pr_debug("unwind table for %s: %u chunks, %.1f MiB of kernel memory\n", name, t->nchunks,
		 table__bytes(t) / 1048576.0);
}

/*
 * Bring the idle files and unused tables down to their caps, and unload `need` tables more (the
 * table map is full) or until a new table of need_bytes fits the budget.  Returns the number of
 * tables unloaded, or -errno when a walk of the process map failed (nothing unloaded then).
 */
static int evict_pass(struct unwinder *u, uint32_t need, uint64_t need_bytes)
{
	struct table **victims;
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
	/* The victims, unloaded together (without room for the list, each alone). */
	victims = calloc(u->nunused ? u->nunused : 1, sizeof(*victims));
	for (l = lru__first(&u->unused_tables);
	     l && l != &u->unused_tables &&
	     (need || tables__over(u) || (need_bytes && budget__over(u, need_bytes)));
	     l = next) {
		struct table *t = CONTAINER_OF(l, struct table, lru);

		next = l->next;
		if (t->kept || t->pending_fd >= 0) /* a pending one: not in the kernel yet */
			continue;
		table__evicting(u, t);
		if (victims)
			victims[evicted] = t;
		else
			tables__evict(u, &t, 1);
		evicted++;
		need -= need > 0;
	}
	if (victims && evicted)
		tables__evict(u, victims, (uint32_t)evicted);
	free(victims);
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
bool unw_install(struct unwinder *u, struct job *j)
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
		build_failed(u, f, j->err);
		u->stats.table_build_failed++;
		unw_file_settle(u, f);
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
			unw_file_settle(u, f);
			return false;
		}
		err = table__load(u, &t, j);
		/* The table map is full: unload the oldest unused table and try once more. */
		if (err == -E2BIG && evict_pass(u, 1, 0) > 0)
			err = table__load(u, &t, j);
		if (err) {
			u->stats.table_load_failed++;
			unw_file_settle(u, f);
			return false;
		}
		u->stats.tables_built++;
		u->stats.table_bytes += table__bytes(t);
		table_loaded(f, t);
	}
	f->table = t;
	f->tnext = t->files;
	t->files = f;
	t->users += f->users;
	t->pinned |= f->key.kind == KEY_VDSO; /* one per kernel: kept for the run */
	f->state = FILE_READY;
	f->ready_gen = u->gen;
	unw_table_settle(u, t);
	unw_file_settle(u, f);
	if (t->pending_fd < 0)
		file__publish(u, f); /* else once its table is in (unw_commit) */
	return true;
}

/* A pending table the kernel refused: its files get none (frame pointers), its id is free. */
static void table__unload_pending(struct unwinder *u, struct table *t)
{
	struct file *f, *next;

	for (f = t->files; f; f = next) {
		next = f->tnext;
		f->tnext = NULL;
		f->table = NULL;
		f->state = FILE_FAILED;
		f->ready_gen = u->gen;
		unw_file_settle(u, f);
	}
	if (lru__linked(&t->lru))
		table__leave_unused(u, t);
	table__unchain(u, t);
	/* Never inserted: no entry can name it, so it is free at once (a full list loses it). */
	id_list__push(&u->free_ids, t->id);
	u->stats.tables_built--;
	u->stats.table_load_failed++;
	u->stats.table_bytes -= table__bytes(t);
	close(t->pending_fd);
	free(t);
}

/* Insert the one pending table t on its own (NOEXIST), making room once when the map is full. */
static int table__insert_one(struct unwinder *u, struct table *t)
{
	int err = 0;

	u->stats.load_waits++;
	if (bpf_map_update_elem(u->tables_fd, &t->id, &t->pending_fd, BPF_NOEXIST))
		err = -errno;
	if (err == -E2BIG && evict_pass(u, 1, 0) > 0) {
		/* Never inserted, ours is free; the oldest free one (the id just evicted) goes. */
		if (!id_list__push(&u->free_ids, t->id))
			t->id = id_list__pop(&u->free_ids);
		u->stats.load_waits++;
		err = bpf_map_update_elem(u->tables_fd, &t->id, &t->pending_fd, BPF_NOEXIST)
			      ? -errno
			      : 0;
	}
	return err;
}

void unw_commit(struct unwinder *u)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	uint32_t *ids = NULL, n = 0, count, inner_id;
	int *fds = NULL;

	if (!u->npending)
		return;
	ids = calloc(u->npending, sizeof(*ids));
	fds = calloc(u->npending, sizeof(*fds));
	/* The batch cannot say NOEXIST: an id in the map already (never, by evict_pass's order)
	 * goes through insert_one, which refuses it. */
	for (uint32_t i = 0; ids && fds && i < u->npending; i++) {
		struct table *t = u->pending[i];

		if (bpf_map_lookup_elem(u->tables_fd, &t->id, &inner_id) == 0)
			break;
		ids[n] = t->id;
		fds[n++] = t->pending_fd;
	}
	count = n;
	if (n) {
		u->stats.load_waits++;
		/* Failed: the batch went in order and stopped at its error (a kernel without it
		 * leaves count as it was): the ones in are the first ids the map now has, none of
		 * which it had before. */
		if (bpf_map_update_batch(u->tables_fd, ids, fds, &count, &o))
			for (count = 0; count < n; count++)
				if (bpf_map_lookup_elem(u->tables_fd, &ids[count], &inner_id))
					break;
	}
	for (uint32_t i = 0; i < u->npending; i++) {
		struct table *t = u->pending[i];

		if (i >= count && table__insert_one(u, t)) {
			table__unload_pending(u, t);
			continue;
		}
		close(t->pending_fd); /* the outer map holds the inner one */
		t->pending_fd = -1;
		for (struct file *f = t->files; f; f = f->tnext)
			file__publish(u, f);
	}
	u->npending = 0;
	free(ids);
	free(fds);
}

/* An eviction pass from poll: only our own failure (allocation) is returned; a walk the kernel
 * cut short is tried again at the next pass. */
int unw_evict(struct unwinder *u)
{
	int err = evict_pass(u, 0, 0);

	if (err == -ENOMEM)
		return err;
	if (err < 0)
		u->evict_due = true;
	return 0;
}
