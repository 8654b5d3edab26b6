// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/symbolizer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sym/debuginfod.h"
#include "sym/demangle.h"
#include "sym/elf_file.h"
#include "util/hashmap.h"
#include "sym/kallsyms.h"
#include "util/clock.h"
#include "util/log.h"
#include "proc/maps.h"
#include "sym/perfmap.h"
#include "prof_stack.h"
#include "sym/pynames.h"
#include "sym/symbolizer_priv.h"
#include "sym/symfiles.h"
#include "proc/safe_open.h"
#include "util/strpool.h"

/*
 * Broken frame-pointer walks yield many garbage addresses: re-reading maps for each would cost
 * a /proc read per frame.  So a pid's maps are re-read at most once per REREAD_EVERY resolves
 * (the first miss after a load always may), an interval that doubles, up to REREAD_MAX, each
 * time a re-read finds nothing new, and never twice for one address.
 */
#define REREAD_EVERY 64
#define REREAD_MAX   65536
#define MAX_UNKNOWN  4096 /* addresses remembered per pid as outside every mapping */

static int fmt_path(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fmt_path(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static char *dup_or(const char *s, const char *def)
{
	return strdup(s ? s : def);
}

int symbolizer__new(struct symbolizer **out, const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->proc_root = dup_or(opts ? opts->proc_root : NULL, "/proc");
	s->kallsyms_path = dup_or(opts ? opts->kallsyms : NULL, "/proc/kallsyms");
	s->perfmap_dir = dup_or(opts ? opts->perfmap_dir : NULL, "/tmp");
	s->debug_dir = dup_or(opts ? opts->debug_dir : NULL, "/usr/lib/debug");
	if (!s->proc_root || !s->kallsyms_path || !s->perfmap_dir || !s->debug_dir) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = symfiles__init(&s->files, s->proc_root, s->debug_dir, opts ? opts->max_files : 0,
			     opts ? opts->max_file_bytes : 0, &s->stats);
	if (!err)
		err = strpool__new(&s->pool);
	if (!err)
		err = hashmap__new(&s->procs, sizeof(uint64_t), sizeof(struct sym_proc *));
	if (!err)
		err = hashmap__new(&s->mappings, sizeof(struct mapping_key),
				   sizeof(struct sym_mapping *));
	if (!err)
		err = hashmap__new(&s->display, sizeof(const char *), sizeof(const char *));
	s->no_inline = opts && opts->no_inline;
	if (!err && opts && opts->debuginfod)
		err = dbgfetch__new(&s->fetch, &(struct dbgfetch_opts){
						       .timeout_s = opts->debuginfod_timeout_s,
					       });
	if (err)
		goto cleanup;
	s->kernel_map = (struct sym_mapping){
		.start = 0,
		.limit = UINT64_MAX,
		.path = "[kernel.kallsyms]",
		.build_id = "",
	};
	*out = s;
	s = NULL;
cleanup:
	symbolizer__free(s);
	return err;
}

static void release_maps(struct symbolizer *s, struct proc_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		symfiles__put(&s->files, maps[i].file);
	free(maps);
}

static void clear_proc(struct symbolizer *s, struct sym_proc *p)
{
	release_maps(s, p->maps, p->nmaps);
	p->maps = NULL;
	p->nmaps = 0;
	hashmap__free(p->unknown);
	p->unknown = NULL;
	perfmap__free(p->perfmap);
	p->perfmap = NULL;
	p->perfmap_size = 0;
	p->perfmap_checked = false;
	p->uid_known = false;
	p->perfmap_refused = false;
	p->load_tried = p->loaded = p->gone = p->reread = false;
}

void symbolizer__free(struct symbolizer *s)
{
	size_t it = 0;
	void *v;

	if (!s)
		return;
	dbgfetch__free(s->fetch);
	while (s->procs && hashmap__next(s->procs, &it, NULL, &v)) {
		clear_proc(s, *(struct sym_proc **)v);
		pynames__free((*(struct sym_proc **)v)->py);
		free(*(struct sym_proc **)v);
	}
	it = 0;
	while (s->mappings && hashmap__next(s->mappings, &it, NULL, &v))
		free(*(struct sym_mapping **)v);
	symfiles__fini(&s->files);
	kallsyms__free(s->ksyms);
	hashmap__free(s->procs);
	hashmap__free(s->mappings);
	hashmap__free(s->display);
	strpool__free(s->pool);
	free(s->proc_root);
	free(s->kallsyms_path);
	free(s->perfmap_dir);
	free(s->debug_dir);
	free(s);
}

/* Keyed by a 64-bit pid: the hashmap stores values right after keys, and pointers need 8-byte
 * alignment. */
static struct sym_proc *find_proc(const struct symbolizer *s, uint32_t pid)
{
	uint64_t key = pid;
	struct sym_proc **p = hashmap__find(s->procs, &key);

	return p ? *p : NULL;
}

static int get_proc(struct symbolizer *s, struct sym_proc **out, uint32_t pid)
{
	struct sym_proc *p = find_proc(s, pid);
	uint64_t key = pid;
	void *v;
	int err;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		err = hashmap__upsert(s->procs, &v, &key, NULL);
		if (err) {
			free(p);
			return err;
		}
		*(struct sym_proc **)v = p;
	}
	*out = p;
	return 0;
}

/* A file we would not read: counted, and said once per file at -v. */
static void refused(struct symbolizer *s, uint64_t *counter, const char *what, const char *path,
		    int err)
{
	(*counter)++;
	pr_warn("not reading %s %s: %s\n", what, path, safe_open__strerror(err));
}

static enum map_kind kind_of(const struct maps_entry *e)
{
	if (strcmp(e->path, "[vdso]") == 0)
		return MAP_VDSO;
	if (maps_entry__is_file(e))
		return MAP_FILE;
	if (strcmp(e->path, "[vsyscall]") == 0)
		return MAP_SPECIAL;
	return MAP_ANON;
}

static int build_maps(struct symbolizer *s, struct sym_proc *p, uint32_t pid, const struct maps *m)
{
	struct proc_map *pm = calloc(m->count ? m->count : 1, sizeof(*pm));
	int err, root_fd = -1;
	size_t n = 0;

	if (!pm)
		return -ENOMEM;
	/* Its root, for paths inside its mount namespace; -1 once it is gone. */
	if (safe_open__root(&root_fd, s->proc_root, pid))
		root_fd = -1;
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		struct proc_map *x = &pm[n];

		if (!e->exec)
			continue;
		x->start = e->start;
		x->end = e->end;
		x->offset = e->offset;
		x->kind = kind_of(e);
		x->key = (struct file_key){
			.major = e->dev_major, .minor = e->dev_minor, .inode = e->inode};
		x->deleted = e->deleted;
		x->path = strpool__intern(s->pool, e->path);
		if (!x->path) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (x->kind == MAP_FILE) {
			err = symfiles__get(&s->files, &x->file, pid, e, root_fd);
			if (err)
				goto cleanup;
		} else if (x->kind == MAP_VDSO) {
			x->file = symfiles__vdso(&s->files, e->end - e->start);
		}
		n++;
	}
	/* The new maps hold their references first: files in both stay. */
	release_maps(s, p->maps, p->nmaps);
	p->maps = pm;
	p->nmaps = n;
	p->loaded = true;
	pm = NULL;
	err = 0;
cleanup:
	if (root_fd >= 0)
		close(root_fd);
	if (pm)
		release_maps(s, pm, n);
	return err;
}

static struct proc_map *find_map(const struct sym_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

/* pid as the process knows itself (last NSpid field): runtimes name perf maps after it. */
static uint32_t ns_pid(const struct symbolizer *s, uint32_t pid)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	uint32_t nspid = pid;
	FILE *f;

	if (fmt_path(path, sizeof(path), "%s/%u/status", s->proc_root, pid))
		return pid;
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (getline(&line, &cap, f) >= 0) {
		char *tok, *save = NULL;

		if (strncmp(line, "NSpid:", 6))
			continue;
		tok = strtok_r(line + 6, " \t\n", &save);
		for (; tok; tok = strtok_r(NULL, " \t\n", &save))
			nspid = (uint32_t)strtoul(tok, NULL, 10);
		break;
	}
	free(line);
	fclose(f);
	return nspid;
}

/* The process's owner (its /proc directory's), remembered for after it exits. */
static int proc_uid(struct symbolizer *s, struct sym_proc *p, uint32_t pid)
{
	char path[PATH_MAX];
	struct stat st;
	int err;

	if (p->uid_known)
		return 0;
	err = fmt_path(path, sizeof(path), "%s/%u", s->proc_root, pid);
	if (err)
		return err;
	if (stat(path, &st))
		return -errno;
	p->uid = st.st_uid;
	p->uid_known = true;
	return 0;
}

/*
 * Open the perf map: candidate 0 inside the process's root (its own pid there), 1 on the host.
 * Anyone can create /tmp/perf-PID.map, so perf's rule applies: a regular file (no symlink, no
 * FIFO, no device) owned by the process's user or root, of bounded size.
 */
static int open_perfmap(struct symbolizer *s, struct sym_proc *p, uint32_t pid, int cand, int *fd,
			struct stat *st)
{
	char path[PATH_MAX + 32];
	int err, root_fd = -1;

	err = proc_uid(s, p, pid);
	if (err)
		return err;
	if (cand == 0) {
		err = safe_open__root(&root_fd, s->proc_root, pid);
		if (err)
			return err;
		err = fmt_path(path, sizeof(path), "%s/perf-%u.map", s->perfmap_dir,
			       ns_pid(s, pid));
	} else {
		err = fmt_path(path, sizeof(path), "%s/perf-%u.map", s->perfmap_dir, pid);
	}
	if (!err)
		err = safe_open__at(fd, root_fd, path, SAFE_OPEN_NOFOLLOW, PERFMAP_SIZE_MAX, st);
	if (root_fd >= 0)
		close(root_fd);
	if (!err && st->st_uid != 0 && st->st_uid != p->uid) {
		close(*fd);
		err = -EPERM;
	}
	if (safe_open__refused(err) && !p->perfmap_refused) {
		p->perfmap_refused = true;
		refused(s, &s->stats.perfmaps_refused, "perf map", path, err);
	}
	return err;
}

/* (Re)load the perf map: through the process's root while it lives, else from here. */
static int load_perfmap(struct symbolizer *s, struct sym_proc *p, uint32_t pid)
{
	struct perfmap *pm = NULL;
	int err = -ENOENT, cand, fd = -1;
	struct stat st;

	for (cand = 0; cand < 2 && err; cand++) {
		err = open_perfmap(s, p, pid, cand, &fd, &st);
		if (err == -ENOMEM)
			return err;
	}
	if (err)
		return err;
	err = perfmap__load_fd(&pm, fd);
	close(fd);
	if (err)
		return err;
	if (perfmap__skipped(pm))
		pr_info("perf map of %u: %llu lines skipped (too long, or too many)\n", pid,
			(unsigned long long)perfmap__skipped(pm));
	s->stats.perfmap_lines_skipped += perfmap__skipped(pm);
	perfmap__free(p->perfmap);
	p->perfmap = pm;
	p->perfmap_cand = cand - 1;
	p->perfmap_size = perfmap__file_size(pm);
	return 0;
}

/* A miss in JIT code: the runtime may have appended to its perf map since we read it. */
static void refresh_perfmap(struct symbolizer *s, struct sym_proc *p, uint32_t pid)
{
	struct stat st;
	int fd;

	if (p->perfmap_checked && p->resolves - p->perfmap_checked_at < REREAD_EVERY)
		return;
	p->perfmap_checked = true;
	p->perfmap_checked_at = p->resolves;
	if (p->perfmap) {
		/* Same file, vetted the same way, merely grown? */
		if (open_perfmap(s, p, pid, p->perfmap_cand, &fd, &st))
			return;
		close(fd);
		if ((uint64_t)st.st_size <= p->perfmap_size)
			return;
	}
	load_perfmap(s, p, pid);
}

/* given: the tracker's read of this event, or NULL: read them now (an unknown address). */
static int read_maps(struct symbolizer *s, struct sym_proc *p, uint32_t pid,
		     const struct maps *given)
{
	struct maps *m = NULL;
	bool anon = false;
	int err = 0;

	if (!given)
		err = maps__read_pid(&m, s->proc_root, pid);
	if (err == -ENOENT || err == -ESRCH) {
		p->gone = true; /* what was read before stays usable */
		return -ESRCH;
	}
	if (err)
		return err;
	err = build_maps(s, p, pid, given ? given : m);
	maps__free(m);
	if (err)
		return err;
	for (size_t i = 0; i < p->nmaps; i++)
		anon |= p->maps[i].kind == MAP_ANON;
	/* Read while the process lives: its /proc/PID/root goes with it. */
	if (anon && !p->perfmap)
		load_perfmap(s, p, pid);
	return 0;
}

static int read_comm(struct symbolizer *s, struct sym_proc *p, uint32_t pid)
{
	char path[PATH_MAX], comm[64];
	const char *c;
	size_t n;
	FILE *f;
	int err;

	err = fmt_path(path, sizeof(path), "%s/%u/comm", s->proc_root, pid);
	if (err)
		return err;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(comm, 1, sizeof(comm) - 1, f);
	fclose(f);
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	c = strpool__intern(s->pool, comm);
	if (!c)
		return -ENOMEM;
	p->comm = c;
	return 0;
}

int symbolizer__load_pid(struct symbolizer *s, uint32_t pid, const struct maps *m)
{
	struct sym_proc *p;
	int err;

	err = get_proc(s, &p, pid);
	if (err)
		return err;
	err = read_comm(s, p, pid);
	if (err == -ENOMEM)
		return err;
	p->load_tried = true;
	p->reread = false;
	p->reread_every = REREAD_EVERY;
	p->gone = false;
	hashmap__free(p->unknown);
	p->unknown = NULL;
	return read_maps(s, p, pid, m);
}

void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc *p = find_proc(s, pid);

	if (p)
		clear_proc(s, p);
}

void symbolizer__drop_pid(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc *p = find_proc(s, pid);
	uint64_t key = pid;

	if (!p)
		return;
	clear_proc(s, p);
	pynames__free(p->py);
	free(p);
	hashmap__delete(s->procs, &key);
}

static int mark(struct hashmap *keep, const void *ptr)
{
	void *v;

	return ptr ? hashmap__upsert(keep, &v, &ptr, NULL) : 0;
}

static int mark_cb(void *keep, const void *ptr)
{
	return mark(keep, ptr);
}

/* A growing array of fixed-size items (what a sweep frees once it can no longer fail). */
static int push_item(void **arr, size_t *n, size_t *cap, const void *item, size_t size)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		void *a = realloc(*arr, c * size);

		if (!a)
			return -ENOMEM;
		*arr = a;
		*cap = c;
	}
	memcpy((char *)*arr + *n * size, item, size);
	(*n)++;
	return 0;
}

/* Every pool string the symbolizer itself still needs: live processes' names and paths. */
static int mark_internal(struct symbolizer *s, struct hashmap *keep)
{
	size_t it = 0;
	void *v;
	int err = 0;

	while (!err && hashmap__next(s->procs, &it, NULL, &v)) {
		const struct sym_proc *p = *(struct sym_proc **)v;

		err = mark(keep, p->comm);
		for (size_t i = 0; i < p->nmaps && !err; i++)
			err = mark(keep, p->maps[i].path);
		if (!err)
			err = pynames__mark(p->py, mark_cb, keep);
	}
	return err;
}

/*
 * Decide everything first (this part may fail, and then frees nothing), then free: mapping
 * records not in used, demangled names whose raw name and display name are both unused, and
 * every pool string nothing marked.
 */
int symbolizer__sweep(struct symbolizer *s, const struct hashmap *used)
{
	struct mapping_key *gone_maps = NULL;
	const char **gone_names = NULL;
	size_t nmaps = 0, maps_cap = 0, nnames = 0, names_cap = 0, it = 0;
	struct hashmap *keep = NULL;
	const void *k;
	void *v;
	int err;

	err = hashmap__new(&keep, sizeof(const void *), 0);
	while (!err && hashmap__next(used, &it, &k, NULL))
		err = mark(keep, *(const void *const *)k);
	if (!err)
		err = mark_internal(s, keep);
	it = 0;
	while (!err && hashmap__next(s->mappings, &it, &k, &v)) {
		const struct sym_mapping *sm = *(struct sym_mapping **)v;

		if (!hashmap__find(used, &sm))
			err = push_item((void **)&gone_maps, &nmaps, &maps_cap, k,
					sizeof(*gone_maps));
		else if (!(err = mark(keep, sm->path)))
			err = mark(keep, sm->build_id);
	}
	it = 0;
	while (!err && hashmap__next(s->display, &it, &k, &v)) {
		const char *raw = *(const char *const *)k, *disp = *(const char **)v;

		if (!hashmap__find(keep, &raw) && !hashmap__find(keep, &disp))
			err = push_item((void **)&gone_names, &nnames, &names_cap, &raw,
					sizeof(raw));
		else if (!(err = mark(keep, raw)))
			err = mark(keep, disp);
	}
	if (err)
		goto cleanup;
	for (size_t i = 0; i < nmaps; i++) {
		struct sym_mapping **sm = hashmap__find(s->mappings, &gone_maps[i]);

		if (sm)
			free(*sm);
		hashmap__delete(s->mappings, &gone_maps[i]);
	}
	for (size_t i = 0; i < nnames; i++)
		hashmap__delete(s->display, &gone_names[i]);
	strpool__sweep(s->pool, keep);
cleanup:
	hashmap__free(keep);
	free(gone_maps);
	free(gone_names);
	return err;
}

void symbolizer__usage(const struct symbolizer *s, struct symbolizer_usage *out)
{
	*out = (struct symbolizer_usage){
		.files_loaded = s->files.nloaded,
		.file_bytes = s->files.loaded_bytes,
		.file_records = s->files.nrecords,
		.strings = strpool__count(s->pool),
		.string_bytes = strpool__bytes(s->pool),
		.mappings = hashmap__count(s->mappings),
		.demangled = hashmap__count(s->display),
		.procs = hashmap__count(s->procs),
	};
}

static bool should_reread(const struct sym_proc *p, uint64_t addr)
{
	if (p->gone || (p->unknown && hashmap__find(p->unknown, &addr)))
		return false;
	return !p->reread || p->resolves - p->reread_at >= p->reread_every;
}

/* An address outside every known mapping: a library dlopen()ed since we read the maps? */
static int reread(struct symbolizer *s, struct sym_proc *p, uint32_t pid, uint64_t addr)
{
	void *v;
	int err;

	p->reread = true;
	p->reread_at = p->resolves;
	err = read_maps(s, p, pid, NULL);
	if (err == -ENOMEM)
		return err; /* otherwise the maps read before still serve */
	if (find_map(p, addr)) {
		p->reread_every = REREAD_EVERY;
		return 0;
	}
	if (p->reread_every < REREAD_MAX)
		p->reread_every *= 2;
	if (!p->unknown) {
		err = hashmap__new(&p->unknown, sizeof(uint64_t), 1);
		if (err)
			return err;
	}
	if (hashmap__count(p->unknown) < MAX_UNKNOWN)
		return hashmap__upsert(p->unknown, &v, &addr, NULL);
	return 0;
}

/* Display name of an interned raw name: demangled once per name (the cache is keyed by the
 * interned pointer, that is by content, and swept with the pool). */
const char *symbolizer_display_name(struct symbolizer *s, const char *raw)
{
	const char **cached, *d;
	char *tmp;
	void *v;

	if (raw[0] != '_' || raw[1] != 'Z')
		return raw;
	cached = hashmap__find(s->display, &raw);
	if (cached)
		return *cached;
	if (demangle__name(&tmp, raw))
		return NULL;
	d = strpool__intern(s->pool, tmp);
	free(tmp);
	if (!d || hashmap__upsert(s->display, &v, &raw, NULL))
		return NULL;
	*(const char **)v = d;
	return d;
}

const struct sym_mapping *symbolizer_mapping(struct symbolizer *s, const struct proc_map *m,
					     const struct sym_file *f, bool has_symbols)
{
	const char *build_id = "";
	struct mapping_key key;
	struct sym_mapping *sm;
	bool created;
	void *v;

	/* The record's own copy is freed with it: results get the pool's. */
	if (f && f->build_id[0]) {
		build_id = strpool__intern(s->pool, f->build_id);
		if (!build_id)
			return NULL;
	}
	memset(&key, 0, sizeof(key));
	key.start = m->start;
	key.limit = m->end;
	key.offset = m->offset;
	key.path = m->path;
	key.build_id = build_id;
	key.has_symbols = has_symbols;
	if (hashmap__upsert(s->mappings, &v, &key, &created))
		return NULL;
	if (!created)
		return *(struct sym_mapping **)v;
	sm = malloc(sizeof(*sm));
	if (!sm) {
		hashmap__delete(s->mappings, &key);
		return NULL;
	}
	*sm = (struct sym_mapping){
		.start = m->start,
		.limit = m->end,
		.offset = m->offset,
		.path = m->path,
		.build_id = build_id,
		.has_symbols = has_symbols,
	};
	*(struct sym_mapping **)v = sm;
	return sm;
}

/* m's file was evicted: open it again through pid's maps line, once per load of the maps. */
static int reload_map(struct symbolizer *s, uint32_t pid, struct proc_map *m)
{
	struct maps_entry e = {
		.start = m->start,
		.end = m->end,
		.offset = m->offset,
		.inode = m->key.inode,
		.dev_major = m->key.major,
		.dev_minor = m->key.minor,
		.exec = true,
		.deleted = m->deleted,
		.path = (char *)m->path,
	};
	int err, root_fd;

	if (safe_open__root(&root_fd, s->proc_root, pid))
		root_fd = -1;
	err = symfiles__reload(&s->files, m->file, pid, &e, root_fd);
	if (root_fd >= 0)
		close(root_fd);
	if (err && err != -ENOMEM)
		m->reload_failed = true;
	return err == -ENOMEM ? err : 0;
}

/*
 * A frame of file mapping m that no symbol names: "file+0xOFFSET", the file offset of the start
 * of its function (the FDE of .eh_frame_hdr covering it: every call site of one function is one
 * name), else of the address itself.  Stable across runs and hosts; the address and mapping stay
 * as they are in pprof (a backend symbolizes them by build id).  vaddr: addr's ELF virtual
 * address when f's file is loaded.
 */
int symbolizer_offset_name(struct symbolizer *s, const struct proc_map *m, const struct sym_file *f,
			   uint64_t addr, uint64_t vaddr, struct sym_result *out)
{
	const char *base = strrchr(m->path, '/');
	uint64_t start, off = addr - m->start + m->offset;
	char buf[320];

	if (f && f->elf && vaddr && elf_file__fde(f->elf, vaddr, &start) &&
	    !elf_file__file_offset(f->elf, &off, start))
		out->sym_addr = addr - (vaddr - start);
	snprintf(buf, sizeof(buf), "%.256s+0x%" PRIx64, base ? base + 1 : m->path, off);
	out->system_name = strpool__intern(s->pool, buf);
	out->name = out->system_name;
	return out->name ? 0 : -ENOMEM;
}

int symbolizer_file_symbol(struct symbolizer *s, const struct proc_map *m, struct sym_file *f,
			   uint64_t addr, uint64_t *vaddr, struct sym_result *out)
{
	const struct elf_sym *sym = NULL;

	*vaddr = 0;
	if (f->elf && !elf_file__vaddr(f->elf, vaddr, addr, m->start, m->offset))
		sym = elf_file__lookup(f->elf, *vaddr);
	if (!sym)
		return 0;
	/* Interned: the file's own names go with an eviction. */
	out->system_name = strpool__intern(s->pool, sym->name);
	out->name = out->system_name ? symbolizer_display_name(s, out->system_name) : NULL;
	out->sym_addr = addr - (*vaddr - sym->addr);
	return out->name ? symbolizer_line(s, f, *vaddr, out) : -ENOMEM;
}

static int fill(struct symbolizer *s, struct sym_proc *p, uint32_t pid, struct proc_map *m,
		uint64_t addr, struct sym_result *out)
{
	struct sym_file *f = m->file;
	const struct perfmap_sym *ps = NULL;
	bool has_symbols = false;
	uint64_t vaddr = 0;
	int err;

	if (f && f->state == FILE_EVICTED && !m->reload_failed) {
		err = reload_map(s, pid, m);
		if (err)
			return err;
	}
	if (f && f->state != FILE_NONE) {
		/* Loaded now, or evicted for good: the mapping record stays the one it was. */
		has_symbols = f->has_symbols;
		symfiles__touch(&s->files, f);
		err = symbolizer_file_symbol(s, m, f, addr, &vaddr, out);
		if (!err && f->elf)
			err = symbolizer_want_debug(s, f);
		if (err)
			return err;
	}
	if (!out->name &&
	    (m->kind == MAP_ANON || (m->kind == MAP_FILE && !(f && f->state != FILE_NONE)))) {
		/* JIT code: anonymous memory, or a memfd the runtime mapped. */
		ps = p->perfmap ? perfmap__resolve(p->perfmap, addr) : NULL;
		if (!ps && !p->gone) {
			refresh_perfmap(s, p, pid);
			ps = p->perfmap ? perfmap__resolve(p->perfmap, addr) : NULL;
		}
		if (ps) {
			/* Interned: a reload frees the perf map's own strings. */
			out->system_name = strpool__intern(s->pool, ps->name);
			out->name = out->system_name;
			out->sym_addr = ps->start;
			if (!out->name)
				return -ENOMEM;
		}
		has_symbols = m->kind == MAP_ANON ? p->perfmap && perfmap__count(p->perfmap) : !!ps;
	}
	if (!out->name && m->kind == MAP_FILE) {
		err = symbolizer_offset_name(s, m, f, addr, vaddr, out);
		if (err)
			return err;
	}
	out->map = symbolizer_mapping(s, m, f, has_symbols);
	return out->map ? 0 : -ENOMEM;
}

int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr,
			     struct sym_result *out)
{
	struct proc_map *m;
	struct sym_proc *p;
	int err;

	memset(out, 0, sizeof(*out));
	s->ninl = 0;
	p = find_proc(s, pid);
	if (!p || !p->load_tried) {
		err = symbolizer__load_pid(s, pid, NULL);
		if (err == -ENOMEM)
			return err;
		p = find_proc(s, pid);
	}
	if (!p)
		return 0;
	p->resolves++;
	m = find_map(p, addr);
	if (!m && should_reread(p, addr)) {
		err = reread(s, p, pid, addr);
		if (err)
			return err;
		m = find_map(p, addr);
	}
	return m ? fill(s, p, pid, m, addr, out) : 0;
}

int symbolizer__resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_result *out)
{
	const struct ksym *k;
	int err;

	memset(out, 0, sizeof(*out));
	if (!s->ksyms_tried) {
		s->ksyms_tried = true;
		err = kallsyms__load(&s->ksyms, s->kallsyms_path);
		if (err == -EACCES)
			pr_warn("kernel symbols unavailable: %s shows no addresses "
				"(run as root, with kernel.kptr_restrict < 2)\n",
				s->kallsyms_path);
		else if (err == -ENOMEM)
			return err;
		else if (err)
			pr_warn("kernel symbols unavailable: %s: %s\n", s->kallsyms_path,
				strerror(-err));
		s->kernel_map.has_symbols = !err;
	}
	out->map = &s->kernel_map;
	k = s->ksyms ? kallsyms__resolve(s->ksyms, addr) : NULL;
	if (k) {
		out->name = out->system_name = k->name;
		out->sym_addr = k->addr;
	}
	return 0;
}

int symbolizer__set_python(struct symbolizer *s, uint32_t pid, const struct py_version *v,
			   const struct prof_py_proc *py)
{
	struct sym_proc *p;
	int err = get_proc(s, &p, pid);

	if (!err && !p->py)
		err = pynames__new(&p->py, s->pool);
	if (err)
		return err;
	pynames__set_python(p->py, v, v && py ? py->runtime : 0, v && py ? py->code_type : 0);
	memset(&p->py_proc, 0, sizeof(p->py_proc));
	if (v && py)
		p->py_proc = *py;
	return 0;
}

bool symbolizer__python_eval(const struct symbolizer *s, uint32_t pid, uint64_t addr)
{
	const struct sym_proc *p = find_proc(s, pid);
	const struct prof_py_proc *py = p ? &p->py_proc : NULL;

	return py && py->eval_lo &&
	       ((addr >= py->eval_lo && addr < py->eval_hi) ||
		(addr >= py->cold_lo && addr < py->cold_hi));
}

unsigned symbolizer__python_style(const struct symbolizer *s, uint32_t pid)
{
	const struct sym_proc *p = find_proc(s, pid);

	return p && p->py_proc.eval_lo ? p->py_proc.o.style : PROF_PY_NONE;
}

bool symbolizer__python_native(const struct symbolizer *s, uint32_t pid, uint64_t addr)
{
	const struct sym_proc *p = find_proc(s, pid);
	const struct proc_map *m, *py;

	if (!p || !p->py_proc.eval_lo)
		return false;
	m = find_map(p, addr);
	py = find_map(p, p->py_proc.eval_lo);
	/* By file, not by mapping: a file may have several executable segments. */
	return m && py && m->kind == MAP_FILE && py->kind == MAP_FILE &&
	       m->key.major == py->key.major && m->key.minor == py->key.minor &&
	       m->key.inode == py->key.inode;
}

int symbolizer__resolve_python(struct symbolizer *s, uint32_t pid, uint64_t frame, uint64_t print,
			       struct sym_result *out)
{
	struct sym_proc *p = find_proc(s, pid);
	int err;

	memset(out, 0, sizeof(*out));
	err = pynames__resolve(p ? p->py : NULL, pid, frame, print, out);
	if (err || out->name)
		return err;
	s->stats.py_code_unreadable++;
	out->name = out->system_name = strpool__intern(s->pool, "[python]");
	return out->name ? 0 : -ENOMEM;
}

int symbolizer__resolve_cut(struct symbolizer *s, uint64_t word, struct sym_result *out)
{
	char name[64];

	memset(out, 0, sizeof(*out));
	if (word & PROF_STACK_CUT_CAPPED)
		snprintf(name, sizeof(name), PROF_STACK_CAPPED_NAME);
	else if (!prof_stack_cut_frames(word)) /* how many is unknown (--unwind fp) */
		snprintf(name, sizeof(name), "[" PROF_STACK_CUT_NAME_END);
	else
		snprintf(name, sizeof(name), "[%u%s " PROF_STACK_CUT_NAME_END,
			 prof_stack_cut_frames(word), prof_stack_cut_bounded(word) ? "+" : "");
	out->name = out->system_name = strpool__intern(s->pool, name);
	return out->name ? 0 : -ENOMEM;
}

int symbolizer__python_thread(struct symbolizer *s, uint32_t pid, uint32_t tid)
{
	struct sym_proc *p = find_proc(s, pid);

	return p ? pynames__thread(p->py, pid, tid) : 0;
}

int symbolizer__python_retry(struct symbolizer *s)
{
	struct sym_proc **pp;
	const uint64_t *key;
	size_t it = 0;
	int err = 0;

	while (!err && hashmap__next(s->procs, &it, (const void **)&key, (void **)&pp))
		err = pynames__retry((*pp)->py, (uint32_t)*key);
	return err;
}

int symbolizer__python_names(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc **pp;
	const uint64_t *key;
	size_t it = 0;
	int err = 0;

	if (pid) {
		struct sym_proc *p = find_proc(s, pid);

		return p ? pynames__read(p->py, pid) : 0;
	}
	while (!err && hashmap__next(s->procs, &it, (const void **)&key, (void **)&pp))
		err = pynames__read((*pp)->py, (uint32_t)*key);
	return err;
}

const char *symbolizer__python_thread_name(const struct symbolizer *s, uint32_t pid, uint32_t tid)
{
	const struct sym_proc *p = find_proc(s, pid);

	return p ? pynames__thread_name(p->py, tid) : NULL;
}
