// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/symfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "proc/safe_open.h"
#include "sym/dwarf_lines.h"
#include "sym/dwbuild.h"
#include "util/log.h"

static void lru_unlink(struct symfiles *fc, struct sym_file *f)
{
	if (f->newer)
		f->newer->older = f->older;
	else
		fc->newest = f->older;
	if (f->older)
		f->older->newer = f->newer;
	else
		fc->oldest = f->newer;
	f->newer = f->older = NULL;
}

static void lru_push(struct symfiles *fc, struct sym_file *f)
{
	f->older = fc->newest;
	f->newer = NULL;
	if (fc->newest)
		fc->newest->newer = f;
	else
		fc->oldest = f;
	fc->newest = f;
}

/* Used now (a load or a resolve): the last to be evicted. */
void symfiles__touch(struct symfiles *fc, struct sym_file *f)
{
	if (f->fixed || f->state != FILE_LOADED || fc->newest == f)
		return;
	lru_unlink(fc, f);
	lru_push(fc, f);
}

/* Its source lines go with the symbols they go with. */
static void drop_lines(struct sym_file *f)
{
	dwlines__free(f->lines);
	f->lines = NULL;
	f->lines_tried = false;
	f->lines_wanted = false;
}

/* The record and its names in the indexes go; nothing refers to it any more. */
static void free_file(struct symfiles *fc, struct sym_file *f)
{
	struct sym_file **v;

	for (size_t i = 0; i < f->nkeys; i++)
		hashmap__delete(fc->files, &f->keys[i]);
	if (f->in_build_ids) {
		v = hashmap__find(fc->build_ids, &f->bid_hash);
		if (v && *v == f)
			hashmap__delete(fc->build_ids, &f->bid_hash);
	}
	if (f->state == FILE_LOADED) {
		lru_unlink(fc, f);
		fc->nloaded--;
		fc->loaded_bytes -= f->bytes;
		elf_file__free(f->elf);
		drop_lines(f);
	}
	free(f->build_id);
	free(f->keys);
	free(f);
	fc->nrecords--;
}

/* A record neither loaded nor named by any process's maps is of no use. */
static void maybe_free_file(struct symfiles *fc, struct sym_file *f)
{
	if (f && !f->fixed && f->state != FILE_LOADED && !f->refs)
		free_file(fc, f);
}

/* Unload f's symbols (results already handed out hold interned copies of its names). */
static void evict(struct symfiles *fc, struct sym_file *f)
{
	lru_unlink(fc, f);
	fc->nloaded--;
	fc->loaded_bytes -= f->bytes;
	elf_file__free(f->elf);
	f->elf = NULL;
	drop_lines(f);
	f->bytes = 0;
	f->state = FILE_EVICTED;
	fc->stats->files_evicted++;
	maybe_free_file(fc, f);
}

/* Evict the least recently used files until both caps hold; never keep, the file in use now. */
static void enforce_caps(struct symfiles *fc, const struct sym_file *keep)
{
	struct sym_file *f = fc->oldest;

	while (f && (fc->nloaded > fc->max_files || fc->loaded_bytes > fc->max_file_bytes)) {
		struct sym_file *newer = f->newer;

		if (f != keep)
			evict(fc, f);
		f = newer;
	}
}

/* f takes elf (replacing the one it had), as the most recently used. */
static void set_loaded(struct symfiles *fc, struct sym_file *f, struct elf_file *elf)
{
	if (f->state == FILE_LOADED) {
		lru_unlink(fc, f);
		fc->nloaded--;
		fc->loaded_bytes -= f->bytes;
		elf_file__free(f->elf);
		drop_lines(f);
	}
	f->elf = elf;
	f->state = FILE_LOADED;
	f->has_symbols = elf_file__has_symbols(elf);
	f->bytes = elf_file__bytes(elf);
	fc->nloaded++;
	fc->loaded_bytes += f->bytes;
	lru_push(fc, f);
}

static int new_file(struct symfiles *fc, struct sym_file **out, const char *build_id)
{
	struct sym_file *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->build_id = strdup(build_id);
	if (!f->build_id) {
		free(f);
		return -ENOMEM;
	}
	fc->nrecords++;
	*out = f;
	return 0;
}

/* (dev, inode) names f from now on. */
static int add_key(struct symfiles *fc, struct sym_file *f, const struct file_key *key)
{
	struct file_key *k = realloc(f->keys, (f->nkeys + 1) * sizeof(*k));
	void *v;

	if (!k)
		return -ENOMEM;
	f->keys = k;
	if (hashmap__upsert(fc->files, &v, key, NULL))
		return -ENOMEM;
	*(struct sym_file **)v = f;
	f->keys[f->nkeys++] = *key;
	return 0;
}

static int syms_rank(const struct elf_file *elf)
{
	switch (elf_file__syms(elf)) {
	case ELF_FILE_SYMS_SYMTAB:
	case ELF_FILE_SYMS_DEBUG_FILE:
		return 0;
	case ELF_FILE_SYMS_MINIDEBUG:
	case ELF_FILE_SYMS_DYNSYM:
		return 1;
	default:
		return 2;
	}
}

/*
 * The record for a newly opened elf, loaded with it.  Same build id as a known file (one library
 * in several containers, or a stripped and an unstripped copy of one build): share its record,
 * with the fuller symbol table.  Takes elf, freeing it when not kept.
 */
static int adopt_elf(struct symfiles *fc, struct sym_file **out, struct elf_file *elf)
{
	const char *bid = elf_file__build_id(elf);
	struct sym_file *f, **v;
	uint64_t hash = 0;
	int err;

	if (bid[0]) {
		hash = hash_bytes(bid, strlen(bid));
		v = hashmap__find(fc->build_ids, &hash);
		if (v && strcmp((*v)->build_id, bid) == 0) {
			f = *v;
			if (f->state != FILE_LOADED || syms_rank(elf) < syms_rank(f->elf))
				set_loaded(fc, f, elf);
			else
				elf_file__free(elf);
			*out = f;
			return 0;
		}
	}
	err = new_file(fc, &f, bid);
	if (err) {
		elf_file__free(elf);
		return err;
	}
	/* Another build id of the same 64-bit hash is not shared: the first keeps the slot. */
	if (bid[0] && !hashmap__find(fc->build_ids, &hash)) {
		err = hashmap__upsert(fc->build_ids, (void **)&v, &hash, NULL);
		if (err) {
			free_file(fc, f);
			elf_file__free(elf);
			return err;
		}
		*v = f;
		f->bid_hash = hash;
		f->in_build_ids = true;
	}
	set_loaded(fc, f, elf);
	*out = f;
	return 0;
}

static struct symfiles_fetched *find_fetched(struct symfiles *fc, const char *bid)
{
	uint64_t hash = hash_bytes(bid, strlen(bid));
	struct symfiles_fetched *v = fc->fetched ? hashmap__find(fc->fetched, &hash) : NULL;

	return v && !strcmp(v->build_id, bid) ? v : NULL;
}

/* A debug file fetched for elf's build id fills in what its own tables lack. */
static int use_fetched(struct symfiles *fc, struct elf_file *elf)
{
	const char *bid = elf_file__build_id(elf);
	const struct symfiles_fetched *v;
	int err;

	if (!bid[0] || !syms_rank(elf) || !(v = find_fetched(fc, bid)))
		return 0;
	err = elf_file__use_debug_file(elf, v->path);
	return err == -ENOMEM ? err : 0;
}

struct dwlines *symfiles__lines(struct symfiles *fc, struct sym_file *f)
{
	const char *path;
	int err, fd;

	/* lines_wanted: being built (dwbuild), taken by symfiles__read_wanted */
	if (f->lines || f->lines_tried || f->lines_wanted || f->state != FILE_LOADED)
		return f->lines;
	/* A separate debug file first, else the file's own DWARF (kept open for this). */
	path = elf_file__debug_path(f->elf);
	fd = elf_file__dwarf_fd(f->elf);
	/* Deferred: indexing a big file's DWARF takes a while that the worker's queue (the first
	 * stacks of a short-lived process, the names of new Python threads) must not wait for. */
	if (fc->defer_lines && fc->build && f->build_id[0] && (path || fd >= 0)) {
		int dfd = path ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 0);

		if (path || dfd >= 0) {
			if (dwbuild__submit(fc->build, f->build_id, path, dfd))
				return NULL; /* out of memory: asked again at the next frame */
			f->lines_wanted = true;
			elf_file__drop_dwarf_fd(f->elf);
			return NULL;
		}
	}
	f->lines_tried = true;
	err = path	? dwlines__open(&f->lines, path, fc->debug_dir)
	      : fd >= 0 ? dwlines__open_fd(&f->lines, fd, fc->debug_dir)
			: -ENOENT;
	elf_file__drop_dwarf_fd(f->elf);
	if (err)
		return NULL;
	f->bytes += dwlines__bytes(f->lines);
	fc->loaded_bytes += dwlines__bytes(f->lines);
	enforce_caps(fc, f);
	return f->lines;
}

int symfiles__read_wanted(struct symfiles *fc, int (*fn)(void *ctx, const char *bid), void *ctx)
{
	struct dwbuild_done *r, *next;
	int err = 0;

	if (!dwbuild__ready(fc->build))
		return 0;
	for (r = dwbuild__take(fc->build); r; r = next) {
		/* By build id: the record asking may have been evicted (and freed) since. */
		struct sym_file *f = err ? NULL : symfiles__find_build_id(fc, r->build_id);

		next = r->next;
		if (f && f->state == FILE_LOADED && f->lines_wanted && !f->lines) {
			f->lines_wanted = false;
			f->lines_tried = true;
			f->lines = r->d;
			r->d = NULL;
			if (f->lines) {
				f->bytes += dwlines__bytes(f->lines);
				fc->loaded_bytes += dwlines__bytes(f->lines);
				enforce_caps(fc, f);
				err = fn(ctx, r->build_id);
			}
		}
		dwlines__free(r->d);
		free(r->build_id);
		free(r);
	}
	return err;
}

void symfiles__wait_lines(struct symfiles *fc)
{
	dwbuild__wait(fc->build);
}

struct sym_file *symfiles__find_build_id(struct symfiles *fc, const char *bid)
{
	uint64_t hash = hash_bytes(bid, strlen(bid));
	struct sym_file **v = bid[0] ? hashmap__find(fc->build_ids, &hash) : NULL;

	return v && !strcmp((*v)->build_id, bid) ? *v : NULL;
}

int symfiles__debug_file(struct symfiles *fc, const char *bid, const char *path, bool *used)
{
	uint64_t hash = hash_bytes(bid, strlen(bid));
	struct symfiles_fetched *v, copy = {strdup(bid), strdup(path)};
	struct sym_file *f = symfiles__find_build_id(fc, bid);
	int err = copy.build_id && copy.path ? 0 : -ENOMEM;

	*used = false;
	if (!err && !fc->fetched)
		err = hashmap__new(&fc->fetched, sizeof(uint64_t), sizeof(*v));
	if (!err)
		err = hashmap__upsert(fc->fetched, (void **)&v, &hash, NULL);
	if (err) {
		free(copy.build_id);
		free(copy.path);
		return err;
	}
	free(v->build_id);
	free(v->path);
	*v = copy;
	if (!f)
		return 0;
	if (f->state != FILE_LOADED || !syms_rank(f->elf)) {
		*used = f->state == FILE_EVICTED; /* used when opened again */
		return 0;
	}
	err = elf_file__use_debug_file(f->elf, path);
	if (err)
		return err;
	*used = true;
	/* A bigger table now: the LRU's count and the mapping records' flag follow. */
	fc->loaded_bytes -= f->bytes;
	drop_lines(f);
	f->bytes = elf_file__bytes(f->elf);
	fc->loaded_bytes += f->bytes;
	f->has_symbols = elf_file__has_symbols(f->elf);
	enforce_caps(fc, f);
	return 0;
}

/*
 * Open the ELF file behind maps line e of pid (safe_open__mapping says how).  0 with *out NULL:
 * not an ELF file, or refused (counted); -EAGAIN: not there now (maybe gone), worth another
 * try later; -ENOMEM.
 */
static int open_elf(struct symfiles *fc, struct elf_file **out, uint32_t pid,
		    const struct maps_entry *e, int root_fd)
{
	int err, fd;

	*out = NULL;
	err = safe_open__mapping(&fd, fc->proc_root, pid, e, root_fd);
	if (err && !safe_open__refused(err))
		return -EAGAIN;
	if (err) {
		fc->stats->files_refused++;
		pr_warn("not reading mapped file %s: %s\n", e->path, safe_open__strerror(err));
		return 0;
	}
	err = elf_file__open_fd(out, fd,
				&(struct elf_file_opts){.debug_dir = fc->debug_dir,
							.target_path = e->path,
							.in_root = root_fd >= 0,
							.root_fd = root_fd,
							.keep_dwarf_fd = true});
	close(fd);
	if (err == -ENOMEM)
		return err;
	if (err)
		pr_debug("symbolizer: %s: %s\n", e->path, strerror(-err));
	return *out ? use_fetched(fc, *out) : 0;
}

/* An evicted file, needed again: opened again the way it was first (through pid's maps line
 * e).  -ENOENT (or -ESTALE: another build now) when that is no longer possible. */
int symfiles__reload(struct symfiles *fc, struct sym_file *f, uint32_t pid,
		     const struct maps_entry *e, int root_fd)
{
	struct elf_file *elf;
	int err;

	err = open_elf(fc, &elf, pid, e, root_fd);
	if (err == -ENOMEM)
		return err;
	if (!elf)
		return -ENOENT;
	if (strcmp(elf_file__build_id(elf), f->build_id)) {
		pr_debug("symbolizer: %s changed since it was loaded\n", e->path);
		elf_file__free(elf);
		return -ESTALE;
	}
	set_loaded(fc, f, elf);
	enforce_caps(fc, f);
	return 0;
}

/*
 * The file behind a file mapping, loaded, with a reference taken: opened once per (dev, inode)
 * while its record lives, again after an eviction.  *out is NULL when nothing could be opened
 * (not cached: a later load tries again).  A refused file is remembered as one without symbols
 * (not retried, not recounted) while a process maps it.
 */
int symfiles__get(struct symfiles *fc, struct sym_file **out, uint32_t pid,
		  const struct maps_entry *e, int root_fd)
{
	struct file_key key = {.major = e->dev_major, .minor = e->dev_minor, .inode = e->inode};
	struct elf_file *elf = NULL;
	struct sym_file **cached, *f;
	int err;

	*out = NULL;
	cached = hashmap__find(fc->files, &key);
	if (cached) {
		f = *cached;
		if (f->state == FILE_EVICTED) {
			err = symfiles__reload(fc, f, pid, e, root_fd);
			if (err == -ENOMEM)
				return err;
		}
		symfiles__touch(fc, f);
		f->refs++;
		*out = f;
		return 0;
	}
	err = open_elf(fc, &elf, pid, e, root_fd);
	if (err == -EAGAIN)
		return 0;
	if (err)
		return err;
	err = elf ? adopt_elf(fc, &f, elf) : new_file(fc, &f, "");
	if (err)
		return err;
	err = add_key(fc, f, &key);
	if (err) {
		maybe_free_file(fc, f);
		return err;
	}
	enforce_caps(fc, f);
	f->refs++;
	*out = f;
	return 0;
}

/* Our own vDSO: the kernel maps one image into every process of an ABI, so a target's
 * "[vdso]" of the same size is this one. */
struct sym_file *symfiles__vdso(struct symfiles *fc, uint64_t size)
{
	unsigned long base;
	struct maps *m = NULL;
	const struct maps_entry *e;

	if (!fc->vdso_tried) {
		fc->vdso_tried = true;
		base = getauxval(AT_SYSINFO_EHDR);
		if (base && !maps__read_self(&m) && (e = maps__find(m, base)) && e->start == base &&
		    !elf_file__open_mem(&fc->vdso.elf, (const void *)base, e->end - e->start)) {
			fc->vdso.build_id = strdup(elf_file__build_id(fc->vdso.elf));
			if (!fc->vdso.build_id) {
				elf_file__free(fc->vdso.elf);
				fc->vdso.elf = NULL;
			} else {
				fc->vdso_size = e->end - e->start;
				fc->vdso.state = FILE_LOADED;
				fc->vdso.has_symbols = elf_file__has_symbols(fc->vdso.elf);
			}
		}
		maps__free(m);
	}
	return fc->vdso.elf && size == fc->vdso_size ? &fc->vdso : NULL;
}

int symfiles__init(struct symfiles *fc, const char *proc_root, const char *debug_dir,
		   size_t max_files, uint64_t max_file_bytes, struct symbolizer_stats *stats)
{
	int err;

	memset(fc, 0, sizeof(*fc));
	fc->proc_root = proc_root;
	fc->debug_dir = debug_dir;
	fc->stats = stats;
	fc->max_files = max_files ? max_files : DEFAULT_MAX_FILES;
	fc->max_file_bytes = max_file_bytes ? max_file_bytes : DEFAULT_MAX_FILE_BYTES;
	fc->vdso.fixed = true;
	err = hashmap__new(&fc->files, sizeof(struct file_key), sizeof(struct sym_file *));
	if (!err)
		err = hashmap__new(&fc->build_ids, sizeof(uint64_t), sizeof(struct sym_file *));
	if (!err)
		err = dwbuild__new(&fc->build, fc->debug_dir);
	return err;
}

void symfiles__put(struct symfiles *fc, struct sym_file *f)
{
	if (!f || f->fixed)
		return;
	f->refs--;
	maybe_free_file(fc, f);
}

void symfiles__fini(struct symfiles *fc)
{
	/* Its results name files about to go. */
	dwbuild__free(fc->build);
	fc->build = NULL;
	/* No process refers to a file now: the records left are the loaded ones. */
	while (fc->oldest)
		free_file(fc, fc->oldest);
	elf_file__free(fc->vdso.elf);
	free(fc->vdso.build_id);
	hashmap__free(fc->files);
	hashmap__free(fc->build_ids);
	if (fc->fetched) {
		const void *k;
		struct symfiles_fetched *v;
		size_t it = 0;

		while (hashmap__next(fc->fetched, &it, &k, (void **)&v)) {
			free(v->build_id);
			free(v->path);
		}
		hashmap__free(fc->fetched);
	}
}
