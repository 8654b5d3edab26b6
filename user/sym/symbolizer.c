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
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sym/demangle.h"
#include "sym/elf_file.h"
#include "util/hashmap.h"
#include "sym/kallsyms.h"
#include "util/log.h"
#include "proc/maps.h"
#include "sym/perfmap.h"
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

struct sym_file {
	struct elf_file *elf; /* NULL when not an ELF file */
	const char *build_id; /* interned; "" when none */
};

struct file_key {
	uint32_t major, minor;
	uint64_t inode;
};

enum map_kind {
	MAP_FILE,    /* a path we can open */
	MAP_VDSO,    /* "[vdso]": the kernel's image, the same as ours */
	MAP_ANON,    /* anonymous or "[anon:…]", "[heap]": JIT code, via the perf map */
	MAP_SPECIAL, /* "[vsyscall]" and the like: a name only */
};

struct proc_map {
	uint64_t start, end, offset;
	const char *path; /* interned; without " (deleted)" */
	enum map_kind kind;
	struct sym_file *file; /* MAP_FILE (NULL when it could not be opened), MAP_VDSO */
};

struct sym_proc {
	const char *comm;      /* interned */
	struct proc_map *maps; /* executable mappings, by start */
	size_t nmaps;
	bool load_tried; /* a load was attempted since the last forget */
	bool loaded;	 /* maps read since the last forget */
	bool gone;	 /* maps could not be read: the process exited */
	bool reread;	 /* maps re-read since the last load */
	uint64_t resolves, reread_at, reread_every;
	struct hashmap *unknown; /* uint64_t addr -> char: outside every mapping after a re-read */
	struct perfmap *perfmap;
	int perfmap_cand;      /* which candidate it came from (load_perfmap) */
	uint64_t perfmap_size; /* its size then: a larger file has new entries */
	bool perfmap_checked;
	uint64_t perfmap_checked_at;
	bool uid_known;
	bool perfmap_refused; /* said and counted once per process */
	uid_t uid;	      /* owner of the process: its perf map must be this user's or root's */
};

/* Mappings are shared by every result that falls in them; compared by interned pointers. */
struct mapping_key {
	uint64_t start, limit, offset;
	const char *path, *build_id;
	uint64_t has_symbols;
};

struct symbolizer {
	char *proc_root, *kallsyms_path, *perfmap_dir, *debug_dir;
	const char *empty; /* interned "" */
	struct strpool *pool;
	struct hashmap *files;	   /* file_key -> struct sym_file * */
	struct hashmap *build_ids; /* interned build id -> struct sym_file * */
	struct sym_file **all_files;
	size_t nfiles, files_cap;
	struct hashmap *procs;	  /* uint64_t pid -> struct sym_proc * */
	struct hashmap *mappings; /* mapping_key -> struct sym_mapping * */
	struct hashmap *display;  /* raw name pointer -> interned demangled name */
	struct kallsyms *ksyms;
	bool ksyms_tried;
	struct sym_mapping kernel_map;
	struct sym_file vdso;
	uint64_t vdso_size;
	bool vdso_tried;
	struct symbolizer_stats stats;
};

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
	err = strpool__new(&s->pool);
	if (err)
		goto cleanup;
	err = hashmap__new(&s->files, sizeof(struct file_key), sizeof(struct sym_file *));
	if (!err)
		err = hashmap__new(&s->build_ids, sizeof(const char *), sizeof(struct sym_file *));
	if (!err)
		err = hashmap__new(&s->procs, sizeof(uint64_t), sizeof(struct sym_proc *));
	if (!err)
		err = hashmap__new(&s->mappings, sizeof(struct mapping_key),
				   sizeof(struct sym_mapping *));
	if (!err)
		err = hashmap__new(&s->display, sizeof(const char *), sizeof(const char *));
	if (err)
		goto cleanup;
	s->empty = strpool__intern(s->pool, "");
	if (!s->empty) {
		err = -ENOMEM;
		goto cleanup;
	}
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

static void clear_proc(struct sym_proc *p)
{
	free(p->maps);
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
	while (s->procs && hashmap__next(s->procs, &it, NULL, &v)) {
		clear_proc(*(struct sym_proc **)v);
		free(*(struct sym_proc **)v);
	}
	it = 0;
	while (s->mappings && hashmap__next(s->mappings, &it, NULL, &v))
		free(*(struct sym_mapping **)v);
	for (size_t i = 0; i < s->nfiles; i++) {
		elf_file__free(s->all_files[i]->elf);
		free(s->all_files[i]);
	}
	free(s->all_files);
	elf_file__free(s->vdso.elf);
	kallsyms__free(s->ksyms);
	hashmap__free(s->files);
	hashmap__free(s->build_ids);
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

static int add_file(struct symbolizer *s, struct sym_file **out, struct elf_file *elf)
{
	struct sym_file *f;

	if (s->nfiles == s->files_cap) {
		size_t ncap = s->files_cap ? s->files_cap * 2 : 64;
		struct sym_file **n = realloc(s->all_files, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->all_files = n;
		s->files_cap = ncap;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->build_id = strpool__intern(s->pool, elf ? elf_file__build_id(elf) : "");
	if (!f->build_id) {
		free(f);
		return -ENOMEM;
	}
	f->elf = elf;
	s->all_files[s->nfiles++] = f;
	*out = f;
	return 0;
}

static int syms_rank(const struct elf_file *elf)
{
	switch (elf_file__syms(elf)) {
	case ELF_FILE_SYMS_SYMTAB:
	case ELF_FILE_SYMS_DEBUG_FILE:
		return 0;
	case ELF_FILE_SYMS_DYNSYM:
		return 1;
	default:
		return 2;
	}
}

/*
 * Same build id as a file already loaded (one library in several containers, or a stripped
 * and an unstripped copy of one build): share one, the one with the fuller symbol table.
 * Takes elf, freeing it on error.
 */
static int dedupe_by_build_id(struct symbolizer *s, struct sym_file **out, struct elf_file *elf)
{
	const char *bid = strpool__intern(s->pool, elf_file__build_id(elf));
	struct sym_file *shared, *old;
	bool created;
	void *v;
	int err;

	if (!bid) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!bid[0]) {
		err = add_file(s, out, elf);
		goto cleanup;
	}
	err = hashmap__upsert(s->build_ids, &v, &bid, &created);
	if (err)
		goto cleanup;
	if (created) {
		err = add_file(s, &shared, elf);
		if (err) {
			hashmap__delete(s->build_ids, &bid);
			goto cleanup;
		}
		*(struct sym_file **)hashmap__find(s->build_ids, &bid) = shared;
		*out = shared;
		return 0;
	}
	shared = *(struct sym_file **)v;
	*out = shared;
	if (syms_rank(elf) >= syms_rank(shared->elf)) {
		elf_file__free(elf);
		return 0;
	}
	/* The old table stays alive, parked in all_files: results handed out point into its
	 * names (and the demangling cache is keyed by those pointers). */
	err = add_file(s, &old, shared->elf);
	if (err)
		goto cleanup;
	shared->elf = elf;
	return 0;
cleanup:
	if (err)
		elf_file__free(elf);
	return err;
}

/* A file we would not read: counted, and said once per file at -v. */
static void refused(struct symbolizer *s, uint64_t *counter, const char *what, const char *path,
		    int err)
{
	(*counter)++;
	pr_warn("not reading %s %s: %s\n", what, path, safe_open__strerror(err));
}

/*
 * The ELF file behind a file mapping, opened once per (dev, inode) (safe_open__mapping says
 * how).
 * *out is NULL when nothing could be opened.
 */
static int get_file(struct symbolizer *s, struct sym_file **out, uint32_t pid,
		    const struct maps_entry *e, int root_fd)
{
	struct file_key key = {.major = e->dev_major, .minor = e->dev_minor, .inode = e->inode};
	struct elf_file *elf = NULL;
	struct sym_file **cached, *f;
	int err, fd;
	void *v;

	*out = NULL;
	cached = hashmap__find(s->files, &key);
	if (cached) {
		*out = *cached;
		return 0;
	}
	err = safe_open__mapping(&fd, s->proc_root, pid, e, root_fd);
	if (err && !safe_open__refused(err))
		return 0; /* maybe gone for now: not cached, a later load tries again */
	if (err) {
		/* Refused once, remembered as a file without symbols: not retried, not recounted.
		 */
		refused(s, &s->stats.files_refused, "mapped file", e->path, err);
	} else {
		err = elf_file__open_fd(&elf, fd,
					&(struct elf_file_opts){.debug_dir = s->debug_dir,
								.target_path = e->path,
								.in_root = root_fd >= 0,
								.root_fd = root_fd});
		close(fd);
		if (err == -ENOMEM)
			return err;
		if (err)
			pr_debug("symbolizer: %s: %s\n", e->path, strerror(-err));
	}
	err = elf ? dedupe_by_build_id(s, &f, elf) : add_file(s, &f, NULL);
	if (err)
		return err;
	err = hashmap__upsert(s->files, &v, &key, NULL);
	if (err)
		return err; /* f stays owned by all_files */
	*(struct sym_file **)v = f;
	*out = f;
	return 0;
}

/* Our own vDSO: the kernel maps one image into every process of an ABI, so a target's
 * "[vdso]" of the same size is this one. */
static struct sym_file *get_vdso(struct symbolizer *s, uint64_t size)
{
	unsigned long base;
	struct maps *m = NULL;
	const struct maps_entry *e;
	const char *bid;

	if (!s->vdso_tried) {
		s->vdso_tried = true;
		base = getauxval(AT_SYSINFO_EHDR);
		if (base && !maps__read(&m, "/proc/self/maps") && (e = maps__find(m, base)) &&
		    e->start == base &&
		    !elf_file__open_mem(&s->vdso.elf, (const void *)base, e->end - e->start)) {
			s->vdso_size = e->end - e->start;
			bid = strpool__intern(s->pool, elf_file__build_id(s->vdso.elf));
			s->vdso.build_id = bid ? bid : s->empty;
		}
		maps__free(m);
	}
	return s->vdso.elf && size == s->vdso_size ? &s->vdso : NULL;
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
		x->path = strpool__intern(s->pool, e->path);
		if (!x->path) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (x->kind == MAP_FILE) {
			err = get_file(s, &x->file, pid, e, root_fd);
			if (err)
				goto cleanup;
		} else if (x->kind == MAP_VDSO) {
			x->file = get_vdso(s, e->end - e->start);
		}
		n++;
	}
	free(p->maps);
	p->maps = pm;
	p->nmaps = n;
	p->loaded = true;
	pm = NULL;
	err = 0;
cleanup:
	if (root_fd >= 0)
		close(root_fd);
	free(pm);
	return err;
}

static const struct proc_map *find_map(const struct sym_proc *p, uint64_t addr)
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

static int read_maps(struct symbolizer *s, struct sym_proc *p, uint32_t pid)
{
	char path[PATH_MAX];
	struct maps *m = NULL;
	bool anon = false;
	int err;

	err = fmt_path(path, sizeof(path), "%s/%u/maps", s->proc_root, pid);
	if (err)
		return err;
	err = maps__read(&m, path);
	if (err == -ENOENT || err == -ESRCH) {
		p->gone = true; /* what was read before stays usable */
		return -ESRCH;
	}
	if (err)
		return err;
	err = build_maps(s, p, pid, m);
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

int symbolizer__load_pid(struct symbolizer *s, uint32_t pid)
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
	return read_maps(s, p, pid);
}

void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc *p = find_proc(s, pid);

	if (p)
		clear_proc(p);
}

void symbolizer__drop_pid(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc *p = find_proc(s, pid);
	uint64_t key = pid;

	if (!p)
		return;
	clear_proc(p);
	free(p);
	hashmap__delete(s->procs, &key);
}

void symbolizer__sweep_mappings(struct symbolizer *s, const struct hashmap *used)
{
	struct mapping_key *gone = NULL;
	const struct mapping_key *k;
	size_t it = 0, n = 0, cap = 0;
	void *v;

	while (hashmap__next(s->mappings, &it, (const void **)&k, &v)) {
		const struct sym_mapping *sm = *(struct sym_mapping **)v;

		if (hashmap__find(used, &sm))
			continue;
		if (n == cap) {
			struct mapping_key *g =
				realloc(gone, (cap = cap ? 2 * cap : 64) * sizeof(*g));

			if (!g)
				break; /* kept: swept next time */
			gone = g;
		}
		gone[n++] = *k;
	}
	for (size_t i = 0; i < n; i++) {
		struct sym_mapping **sm = hashmap__find(s->mappings, &gone[i]);

		if (sm)
			free(*sm);
		hashmap__delete(s->mappings, &gone[i]);
	}
	free(gone);
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
	err = read_maps(s, p, pid);
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

/* Display name: demangled once per raw name. */
static const char *display_name(struct symbolizer *s, const char *raw)
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

static const struct sym_mapping *get_mapping(struct symbolizer *s, const struct proc_map *m,
					     const char *build_id, bool has_symbols)
{
	struct mapping_key key;
	struct sym_mapping *sm;
	bool created;
	void *v;

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

static int fill(struct symbolizer *s, struct sym_proc *p, uint32_t pid, const struct proc_map *m,
		uint64_t addr, struct sym_result *out)
{
	const struct sym_file *f = m->file;
	const struct elf_sym *sym = NULL;
	const struct perfmap_sym *ps = NULL;
	bool has_symbols = false;
	uint64_t vaddr = 0;

	if (f && f->elf) {
		has_symbols = elf_file__has_symbols(f->elf);
		if (!elf_file__vaddr(f->elf, &vaddr, addr, m->start, m->offset))
			sym = elf_file__lookup(f->elf, vaddr);
	}
	if (sym) {
		out->system_name = sym->name;
		out->name = display_name(s, sym->name);
		out->sym_addr = addr - (vaddr - sym->addr);
	} else if (m->kind == MAP_ANON || (m->kind == MAP_FILE && !(f && f->elf))) {
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
		}
		has_symbols = m->kind == MAP_ANON ? p->perfmap && perfmap__count(p->perfmap) : !!ps;
	}
	out->map = get_mapping(s, m, f ? f->build_id : s->empty, has_symbols);
	if (!out->map || (out->system_name && !out->name))
		return -ENOMEM;
	return 0;
}

int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr,
			     struct sym_result *out)
{
	const struct proc_map *m;
	struct sym_proc *p;
	int err;

	memset(out, 0, sizeof(*out));
	p = find_proc(s, pid);
	if (!p || !p->load_tried) {
		err = symbolizer__load_pid(s, pid);
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

const struct symbolizer_stats *symbolizer__stats(const struct symbolizer *s)
{
	return &s->stats;
}
