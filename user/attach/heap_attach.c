// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/heap_attach.h"
#include "attach/heap_front.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sym/elf_file.h"
#include "attach/loader.h"
#include "proc/maps.h"
#include "util/log.h"
#include "prof_heap.h"
#include "attach/otel_notes.h"
#include "attach/owners.h"
#include "attach/prologue.h"
#include "proc/safe_open.h"

struct alloc_fn {
	const char *name;
	enum prof_alloc_fn fn;
};

static const struct alloc_fn alloc_fns[] = {
	{"malloc", PROF_FN_MALLOC},
	{"calloc", PROF_FN_CALLOC},
	{"realloc", PROF_FN_REALLOC},
	{"reallocarray", PROF_FN_REALLOCARRAY},
	{"posix_memalign", PROF_FN_POSIX_MEMALIGN},
	{"aligned_alloc", PROF_FN_ALIGNED_ALLOC},
	{"memalign", PROF_FN_MEMALIGN},
	{"valloc", PROF_FN_VALLOC},
	{"pvalloc", PROF_FN_PVALLOC},
	{"free", PROF_FN_FREE},
	/* operator new / new[] (plain, nothrow, aligned, aligned nothrow): size is argument 1 */
	{"_Znwm", PROF_FN_CXX_NEW},
	{"_Znam", PROF_FN_CXX_NEW_ARRAY},
	{"_ZnwmRKSt9nothrow_t", PROF_FN_CXX_NEW_NOTHROW},
	{"_ZnamRKSt9nothrow_t", PROF_FN_CXX_NEW_ARRAY_NOTHROW},
	{"_ZnwmSt11align_val_t", PROF_FN_CXX_NEW_ALIGNED},
	{"_ZnamSt11align_val_t", PROF_FN_CXX_NEW_ARRAY_ALIGNED},
	{"_ZnwmSt11align_val_tRKSt9nothrow_t", PROF_FN_CXX_NEW_ALIGNED_NOTHROW},
	{"_ZnamSt11align_val_tRKSt9nothrow_t", PROF_FN_CXX_NEW_ARRAY_ALIGNED_NOTHROW},
	/* entry only, on the free program: a throw while operator new is in flight is counted */
	{"__cxa_throw", PROF_FN_CXX_THROW},
};

#define MAX_FNS (sizeof(alloc_fns) / sizeof(alloc_fns[0]))

int heap_attach__plan(struct heap_plan *out, const struct elf_file *ef)
{
	uint64_t done[MAX_FNS] = {0};
	struct heap_probe entries[MAX_FNS];
	unsigned ndone = 0, nentries = 0;

	out->count = 0;
	out->nfns = 0;
	for (size_t i = 0; i < MAX_FNS; i++) {
		const struct alloc_fn *a = &alloc_fns[i];
		uint64_t off, probe;
		struct elf_func fn;
		uint8_t code[32];
		bool dup = false;
		size_t n;

		if (elf_file__find_symbol(ef, &fn, a->name) || fn.ifunc)
			continue; /* not defined here (an IFUNC resolver is not the allocator) */
		off = fn.file_offset;
		/* aligned_alloc and memalign share one body in glibc 2.36: probe it once. */
		for (unsigned j = 0; j < ndone; j++)
			dup |= done[j] == off;
		if (dup)
			continue;
		done[ndone++] = off;

		n = fn.size && fn.size < sizeof(code) ? fn.size : sizeof(code);
		probe = 0;
		if (elf_file__read_at(ef, code, n, off) == 0)
			probe = prologue__probe_offset(code, n);
		/*
		 * Entry and return probes share the (emulated) instruction at off+probe: only flag
		 * setters were skipped, so the return address is still at the top of the stack.
		 */
		if (a->fn == PROF_FN_FREE || a->fn == PROF_FN_CXX_THROW) {
			out->probes[out->count++] = (struct heap_probe){.name = a->name,
									.offset = off + probe,
									.skipped = probe,
									.fn = a->fn,
									.kind = HEAP_PROBE_FREE};
		} else if (prof_fn_entry_only(a->fn)) {
			/* no return probe: bad_alloc must unwind through it (prof_heap.h) */
			entries[nentries++] =
				(struct heap_probe){.name = a->name,
						    .offset = off + probe,
						    .skipped = probe,
						    .fn = a->fn,
						    .code_size = fn.size ? fn.size : 64,
						    .kind = HEAP_PROBE_ENTRY};
		} else {
			out->probes[out->count++] = (struct heap_probe){.name = a->name,
									.offset = off + probe,
									.skipped = probe,
									.fn = a->fn,
									.kind = HEAP_PROBE_RETURN};
			entries[nentries++] = (struct heap_probe){.name = a->name,
								  .offset = off + probe,
								  .skipped = probe,
								  .fn = a->fn,
								  .kind = HEAP_PROBE_ENTRY};
		}
		out->nfns++;
	}
	/*
	 * Entries last: an entry that fires before its return probe exists leaves a pending call
	 * that never completes (and, sampled, stops its thread from being sampled again); a free
	 * probe attached after the allocation probes would miss frees of blocks it saw allocated.
	 */
	for (unsigned i = 0; i < nentries; i++)
		out->probes[out->count++] = entries[i];
	return 0;
}

/* One uprobe, kept with the file's entry of the attached set (key). */
static int attach_one(struct loader *l, const struct loader_attach_key *key,
		      struct bpf_program *prog, bool retprobe, const char *path, int pid,
		      uint64_t off, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);
	if (!link)
		return -errno;
	return loader__attached_link(l, key, link);
}

/*
 * Every probe of the plan in one uprobe session link (--sample-bytes, Linux 6.13): the entries
 * and frees, each return being its entry's.  -EOPNOTSUPP: one uprobe per function instead.
 */
static int attach_session(struct loader *l, const struct loader_attach_key *key,
			  const struct heap_plan *plan, const char *name, const char *path, int pid,
			  uint64_t own)
{
	uint64_t offsets[2 * PROF_FN__COUNT], cookies[2 * PROF_FN__COUNT];
	size_t n = 0;

	for (unsigned i = 0; i < plan->count; i++) {
		const struct heap_probe *p = &plan->probes[i];

		if (p->kind == HEAP_PROBE_RETURN)
			continue;
		offsets[n] = p->offset;
		cookies[n++] = PROF_COOKIE(p->fn, p->code_size) | own;
	}
	if (!n)
		return -EOPNOTSUPP;
	return loader__heap_session(l, key, name, path, pid, offsets, cookies, n);
}

/*
 * Every probe of the plan as three uprobe_multi links (returns, frees, entries: the plan's
 * order) with the same offsets and cookies: at exit each link detaches in one grace period,
 * where a uprobe per function waits one each.  -EOPNOTSUPP: one uprobe per function instead.
 */
static int attach_multi(struct loader *l, const struct loader_attach_key *key,
			const struct heap_plan *plan, const char *name, const char *path, int pid,
			uint64_t own)
{
	uint64_t offsets[3][2 * PROF_FN__COUNT], cookies[3][2 * PROF_FN__COUNT];
	struct loader_multi_set sets[3] = {0};
	int err;

	for (unsigned i = 0; i < plan->count; i++) {
		const struct heap_probe *p = &plan->probes[i];
		enum loader_multi_kind k = p->kind == HEAP_PROBE_RETURN ? LOADER_MULTI_RETURN
					   : p->kind == HEAP_PROBE_FREE ? LOADER_MULTI_FREE
									: LOADER_MULTI_ENTRY;

		offsets[k][sets[k].cnt] = p->offset;
		cookies[k][sets[k].cnt++] = PROF_COOKIE(p->fn, p->code_size) | own;
	}
	if (!plan->count)
		return -EOPNOTSUPP;
	for (int k = 0; k < 3; k++) {
		sets[k].offsets = offsets[k];
		sets[k].cookies = cookies[k];
	}
	err = loader__heap_multi(l, key, name, path, pid, sets);
	if (err)
		return err;
	for (unsigned i = 0; i < plan->count; i++) {
		const struct heap_probe *p = &plan->probes[i];

		if (p->kind != HEAP_PROBE_RETURN)
			pr_debug("probing %s at %s+0x%llx (+%llu), uprobe_multi\n", p->name, name,
				 (unsigned long long)(p->offset - p->skipped),
				 (unsigned long long)p->skipped);
	}
	return 0;
}

static int attach_file(struct loader *l, const struct loader_attach_key *key, int fd,
		       const char *name, int pid, uint64_t own)
{
	struct loader_heap_progs fb;
	struct elf_file *ef = NULL;
	struct heap_plan plan;
	char path[64];
	int err;

	/* Only the symbol table is needed: skip the separate debug-file search. */
	err = elf_file__open_fd(&ef, fd, &(struct elf_file_opts){.debug_dir = "", .keep_fd = true});
	if (err)
		return err;
	err = heap_attach__plan(&plan, ef);
	if (err)
		goto cleanup;
	/* The kernel looks the path up again: give it our verified fd, not the target's path. */
	safe_open__fd_path(path, sizeof(path), fd);
	err = attach_session(l, key, &plan, name, path, pid, own);
	if (err == -EOPNOTSUPP)
		err = attach_multi(l, key, &plan, name, path, pid, own);
	if (err != -EOPNOTSUPP) {
		if (!err)
			err = (int)plan.nfns;
		else
			pr_err("attaching to the allocator of %s failed: %s\n", name,
			       strerror(-err));
		goto cleanup;
	}
	/* One uprobe per function: the programs that can take them (loaded on first need). */
	err = plan.count ? loader__heap_progs_fallback(l, &fb) : 0;
	if (err)
		goto cleanup;
	for (unsigned i = 0; i < plan.count; i++) {
		const struct heap_probe *p = &plan.probes[i];
		struct bpf_program *prog = p->kind == HEAP_PROBE_FREE	 ? fb.free_
					   : p->kind == HEAP_PROBE_ENTRY ? fb.enter
									 : fb.ret;

		err = attach_one(l, key, prog, p->kind == HEAP_PROBE_RETURN, path, pid, p->offset,
				 PROF_COOKIE(p->fn, p->code_size) | own);
		if (err) {
			/*
			 * Seen with Debian's bcc 0.26 memleak running: its uprobes carry a bogus
			 * ref_ctr_offset, and the kernel refuses any other probe on that spot.
			 */
			pr_err("attaching to %s in %s failed: %s%s\n", p->name, name,
			       strerror(-err),
			       err == -EINVAL
				       ? " (another tracer may hold a conflicting probe there; "
					 "dmesg shows 'ref_ctr_offset mismatch')"
				       : "");
			goto cleanup;
		}
		if (p->kind != HEAP_PROBE_RETURN)
			pr_debug("probing %s at %s+0x%llx (+%llu)\n", p->name, name,
				 (unsigned long long)(p->offset - p->skipped),
				 (unsigned long long)p->skipped);
	}
	err = (int)plan.nfns;
cleanup:
	elf_file__free(ef);
	return err;
}

/*
 * A file's allocator probes per process (wide scopes)?  split_file marks it, by its stat and by
 * its maps line's (dev, inode) (they differ on overlay and btrfs): 1 split, 0 not (too many
 * processes map it), until nothing in scope maps it (loader__detach_file).
 */
static bool is_split_key(struct loader *l, uint64_t dev, uint64_t ino)
{
	const int32_t *v = loader__attached_find(
		l, &(struct loader_attach_key){
			   .dev = dev, .ino = ino, .pid = -1, .kind = LOADER_ATTACH_HEAP_SPLIT});

	return v && *v == 1;
}

static bool is_split(struct loader *l, const struct stat *st)
{
	return is_split_key(l, st->st_dev, st->st_ino);
}

/* heap_attach__file; own: the links of one process of a wide scope (PROF_COOKIE_OWN). */
static int file_attach(struct loader *l, int fd, const char *name, int pid, uint64_t own,
		       const struct owners_key *as)
{
	struct loader_attach_key key = {.pid = pid, .kind = LOADER_ATTACH_HEAP};
	struct loader_heap_progs progs;
	struct stat st;
	int32_t *slot;
	bool created;
	int err, n;

	/* Our sampler serves every process (heap_otel_only): no trap per malloc. */
	if (loader__heap_progs(l, &progs) || loader__heap_otel_only(l))
		return 0;
	if (fstat(fd, &st))
		return -errno;
	/* Probed per process now: nothing for every process. */
	if (pid < 0 && is_split(l, &st))
		return 0;
	key.dev = as ? as->dev : st.st_dev;
	key.ino = as ? as->ino : st.st_ino;
	err = loader__attached(l, &key, &slot, &created);
	if (err)
		return err;
	if (!created)
		return *slot;
	n = attach_file(l, &key, fd, name, pid, own);
	if (n < 0) {
		loader__detach(l, &key);
		return n;
	}
	err = loader__attached(l, &key, &slot, &created);
	if (err)
		return err;
	*slot = n;
	return n;
}

int heap_attach__file(struct loader *l, int fd, const char *name, int pid)
{
	return file_attach(l, fd, name, pid, 0, NULL);
}

/* One USDT probe of the file at path (a verified fd's) into key's entry. */
static int attach_usdt(struct loader *l, const struct loader_attach_key *key,
		       struct bpf_program *prog, const char *path, int pid, const char *provider,
		       const char *probe)
{
	struct bpf_link *link;

	link = bpf_program__attach_usdt(prog, pid, path, provider, probe, NULL);
	if (!link)
		return -errno;
	return loader__attached_link(l, key, link);
}

/*
 * The otel_memory probes of the file open as fd, attached for pid (-1: every process mapping
 * it) when the file carries both alloc and free.  Once per (file, pid): the loader's attached
 * set keeps the answer, so a wide scope reads libc's notes once, not once per process.  1 if
 * the probes are attached, 0 if the file has none (or attaching them failed: reported, the
 * allocator probes serve), -ENOMEM.
 */
static int otel_file(struct loader *l, int fd, const char *name, int pid)
{
	struct loader_attach_key key = {.pid = pid, .kind = LOADER_ATTACH_OTEL};
	struct loader_heap_progs progs;
	unsigned found = 0, both;
	char path[64];
	struct stat st;
	int32_t *slot;
	bool created;
	int err;

	if (loader__heap_progs(l, &progs))
		return 0;
	if (fstat(fd, &st))
		return 0;
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	err = loader__attached(l, &key, &slot, &created);
	if (err)
		return err;
	if (!created)
		return *slot;
	err = otel_notes__fd(&found, fd);
	if (err && err != -ENOEXEC)
		pr_debug("not reading the USDT notes of %s: %s\n", name, strerror(-err));
	if (!err && (found & OTEL_NOTES_NOP5)) {
		/* Kept as "none": said and counted once per file. */
		loader__otel_nop5_refused(l);
		pr_warn("%s: its otel_memory probes sit on 5-byte nops, which Linux 6.18 turns "
			"into "
			"calls that corrupt a leaf function's red zone and crash children forked "
			"after it: not attached (the allocator probes serve)\n",
			name);
		return 0;
	}
	both = found & OTEL_NOTES_BOTH;
	if (err || both != OTEL_NOTES_BOTH) {
		if (!err && both)
			pr_warn("%s has otel_memory:%s without otel_memory:%s: its allocator "
				"probes "
				"serve instead\n",
				name, both == OTEL_NOTES_ALLOC ? "alloc" : "free",
				both == OTEL_NOTES_ALLOC ? "free" : "alloc");
		return err == -ENOMEM ? err : 0; /* kept as "none" */
	}
	safe_open__fd_path(path, sizeof(path), fd);
	/* free first: a block reported by alloc must not leave the heap unseen.  Our sampler's
	 * losses (its set full) are counted from the start too: sampler_lost. */
	err = loader__heap_progs_otel(l, &progs);
	if (!err)
		err = attach_usdt(l, &key, progs.otel_free, path, pid, "otel_memory", "free");
	if (!err && (found & OTEL_NOTES_LOST))
		err = attach_usdt(l, &key, progs.otel_lost, path, pid, "bpftrace_prof",
				  "sampler_lost");
	if (!err)
		err = attach_usdt(l, &key, progs.otel_alloc, path, pid, "otel_memory", "alloc");
	if (err) {
		loader__detach(l, &key);
		pr_warn("attaching the otel_memory probes of %s failed: %s (its allocator probes "
			"serve instead)\n",
			name, strerror(-err));
		return err == -ENOMEM ? err : 0;
	}
	pr_debug("attached the otel_memory probes of %s\n", name);
	err = loader__attached(l, &key, &slot, &created);
	if (err)
		return err;
	*slot = 1;
	return 1;
}

/*
 * A mapping whose file may carry probes: executable, a file, and not our own executable.  Ours
 * is what a -- CMD child runs between its fork and its exec (its allocations are ours, not
 * CMD's), and links are per file: probing our allocator would trap every allocation of ours.
 */
static bool probed_file(const struct maps_entry *e)
{
	static struct stat self;
	static bool known;

	if (!e->exec || !maps_entry__is_file(e))
		return false;
	if (!known)
		known = !stat("/proc/self/exe", &self);
	return !known || self.st_ino != e->inode || major(self.st_dev) != e->dev_major ||
	       minor(self.st_dev) != e->dev_minor;
}

/*
 * Does any executable file pid maps (m) carry the otel_memory probes?  Attached when so (once
 * per file and probe_pid).  A library's are left alone when the executable has an allocator
 * of its own, or one is preloaded ahead of the library: a sampler there never sees the
 * program's malloc.  1 or 0, or -errno when no file can be opened any more.
 */
static int otel_process(struct loader *l, uint32_t pid, const struct maps *m, int root_fd,
			int probe_pid)
{
	int found = 0, own = -1; /* own: heap_front__exe_allocator's, asked when it matters */
	struct stat exe = {0}, st;

	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		int fd, err;

		if (!probed_file(e))
			continue;
		err = safe_open__mapping(&fd, "/proc", pid, e, root_fd);
		if (err == -EMFILE || err == -ENFILE || err == -ENOMEM)
			return err;
		if (err)
			continue; /* the allocator loop below reports it */
		err = otel_file(l, fd, e->path, probe_pid);
		if (err > 0) {
			if (own < 0)
				own = heap_front__exe_allocator(pid, &exe);
			/* Attached (once per file): they stay, silent in this process. */
			if ((fstat(fd, &st) || st.st_dev != exe.st_dev ||
			     st.st_ino != exe.st_ino) &&
			    (own || heap_front__preload_ahead(pid, m, root_fd, e)))
				err = 0;
		}
		close(fd);
		if (err < 0)
			return err;
		found |= err;
	}
	return found;
}

/*
 * Wide scopes: the most processes a file is probed per process for.  Each has links of its own
 * on the file, and every call there runs all of them (the kernel's consumers of a uprobe, each
 * but its own returning at its pid check); and from two on, a session link of another process
 * keeps every call's return probe (the kernel runs its pid check there too), where one link
 * alone skips it for the calls it does not sample.  make bench (heapcost, wide;
 * docs/benchmarks.md): a plain sqlite3 with 1, 2 and 4 processes on links of their own (itself
 * included) ran 1.10x, 1.46x and 1.57x its time with the libc probed for every process, where
 * a process sampling itself ran 2-8x faster.  Beyond this, what the others pay outweighs it.
 */
#define HEAP_SPLIT_MAX 4

/* The key of pid's own allocator links on file (wide scopes). */
static struct loader_attach_key own_key(const struct owners_key *file, uint32_t pid)
{
	return (struct loader_attach_key){
		.dev = file->dev, .ino = file->ino, .pid = pid, .kind = LOADER_ATTACH_HEAP};
}

/* pid's own allocator links go (its files as o knows them): it left, or its image did. */
static void own_drop(struct loader *l, struct owners *o, uint32_t pid)
{
	const struct owners_key *files;
	size_t n = owners__files_of(o, pid, &files);

	for (size_t i = 0; i < n; i++) {
		struct loader_attach_key key = own_key(&files[i], pid);

		loader__detach(l, &key);
	}
}

static int attach_pid(struct loader *l, struct owners *o, uint32_t pid, const struct maps *m,
		      int probe_pid, enum heap_attach_why why, bool late, int *nfns);

/* Set the HEAP_SPLIT marks of a file, by its stat (st) and by its maps line (file). */
static int split_mark(struct loader *l, const struct stat *st, const struct owners_key *file,
		      int32_t value)
{
	struct loader_attach_key mark = {
		.dev = st->st_dev, .ino = st->st_ino, .pid = -1, .kind = LOADER_ATTACH_HEAP_SPLIT};
	int32_t *slot;
	int err = loader__attached(l, &mark, &slot, NULL);

	if (err)
		return err;
	*slot = value;
	mark.dev = file->dev;
	mark.ino = file->ino;
	err = loader__attached(l, &mark, &slot, NULL);
	if (!err)
		*slot = value;
	return err;
}

/*
 * Wide scopes: pid, on its otel_memory probes, maps the file of stat st (o's file), whose
 * allocators are probed for every process: from now on they are probed per process (the
 * HEAP_SPLIT mark), so that pid and every later process on its own probes never trap there.
 * The processes in scope that map it move onto allocator links of their own first (their calls
 * served by the file-wide links until each moves); the file-wide links go once every one has.
 * 0 or -ENOMEM.
 */
static int split_file(struct loader *l, struct owners *o, const struct stat *st,
		      const struct owners_key *file, const char *name, uint32_t self)
{
	struct loader_attach_key mark = {.dev = st->st_dev,
					 .ino = st->st_ino,
					 .pid = -1,
					 .kind = LOADER_ATTACH_HEAP_SPLIT},
				 wide = {.dev = st->st_dev,
					 .ino = st->st_ino,
					 .pid = -1,
					 .kind = LOADER_ATTACH_HEAP};
	size_t n = 0, stay = 0;
	uint32_t *pids = NULL;
	int32_t *slot;
	bool created;
	int err;

	err = loader__attached(l, &mark, &slot, &created);
	if (err || !created)
		return err;
	err = owners__pids_of(o, file, &pids, &n);
	if (err) {
		loader__detach(l, &mark);
		return err;
	}
	/* Every trap in the file runs each link's filter: a few processes of their own only. */
	for (size_t i = 0; i < n; i++)
		stay += loader__heap_path_of(l, pids[i]) != PROF_PATH_OTEL;
	if (stay > HEAP_SPLIT_MAX) {
		pr_info("%s: %zu processes in scope map it beside one sampling itself: its "
			"allocators stay probed for every process (at most %d probed per "
			"process)\n",
			name, stay, HEAP_SPLIT_MAX);
		free(pids);
		return 0; /* marked 0: not tried again while the file is kept */
	}
	stay = 0;
	/* Before the moves (they attach per process); by its maps line too, which wide_path reads
	 * (the same key on most file systems). */
	err = split_mark(l, st, file, 1);
	for (size_t i = 0; !err && i < n; i++) {
		int fns = 0, path = loader__heap_path_of(l, pids[i]);

		if (pids[i] == self || path == PROF_PATH_OTEL || path == PROF_PATH_OWN)
			continue;
		err = attach_pid(l, o, pids[i], NULL, -1, HEAP_ATTACH_MORE, false, &fns);
		if (err == -ENOENT || err == -ESRCH)
			err = 0; /* gone: nothing to serve */
		else if (loader__heap_path_of(l, pids[i]) != PROF_PATH_OWN)
			stay++;
		if (err != -ENOMEM)
			err = 0;
	}
	free(pids);
	if (err)
		return err;
	if (stay) {
		pr_warn("%s: %zu processes could not move onto allocator probes of their own: the "
			"file stays probed for every process\n",
			name, stay);
		return 0;
	}
	if (loader__detach(l, &wide) > 0)
		pr_debug("%s: allocators now probed per process (a process on its "
			 "otel_memory probes maps it)\n",
			 name);
	return 0;
}

/* Does pid map a file probed per process (other than one just merged, marked 0 now)? */
static bool maps_split(struct loader *l, struct owners *o, uint32_t pid)
{
	const struct owners_key *files;
	size_t n = owners__files_of(o, pid, &files);

	for (size_t i = 0; i < n; i++)
		if (is_split_key(l, files[i].dev, files[i].ino))
			return true;
	return false;
}

/*
 * The file of e (file: its maps line's key), probed per process, would be mapped by own + 1
 * processes on links of their own with self: it goes back to the links for every process,
 * which are attached first; then each of pids on its own links that maps no other file probed
 * per process moves back onto them and its own links go (BPF's path decides which link serves
 * a call: none is missed or seen twice).  The process sampling itself traps there again,
 * counted and ignored.  Marked 0: not split again while the file is kept.  0 or -ENOMEM.
 */
static int merge_file(struct loader *l, struct owners *o, const struct maps_entry *e,
		      const struct owners_key *file, const uint32_t *pids, size_t n, size_t own,
		      uint32_t self, int root_fd)
{
	size_t back = 0;
	struct stat st;
	int fd, err, fns;

	err = safe_open__mapping(&fd, "/proc", self, e, root_fd);
	if (err)
		return err == -ENOMEM ? err : 0; /* stays probed per process */
	if (fstat(fd, &st)) {
		close(fd);
		return 0;
	}
	err = split_mark(l, &st, file, 0);
	fns = err ? err : heap_attach__file(l, fd, e->path, -1);
	close(fd);
	if (fns <= 0) {
		pr_warn("%s: could not be probed for every process again: it stays probed per "
			"process\n",
			e->path);
		split_mark(l, &st, file, 1);
		return fns == -ENOMEM ? fns : 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (pids[i] == self || maps_split(l, o, pids[i]))
			continue;
		err = loader__heap_unown(l, pids[i]);
		if (err == -ENOMEM)
			return err;
		if (err > 0) {
			own_drop(l, o, pids[i]);
			back++;
		}
	}
	loader__heap_split_merged(l);
	pr_info("%s: %zu processes on allocator probes of their own would map it: probed for "
		"every process again (at most %d per process), %zu moved back onto those probes\n",
		e->path, own, HEAP_SPLIT_MAX, back);
	return 0;
}

/*
 * Wide scopes: pid is going onto allocator links of its own, for it maps a file probed per
 * process.  Each such file that more than HEAP_SPLIT_MAX processes on links of their own would
 * then map is probed for every process again (merge_file).  0 or -ENOMEM.
 */
static int merge_crowded(struct loader *l, struct owners *o, uint32_t pid, const struct maps *m,
			 int root_fd)
{
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		struct owners_key file;
		uint32_t *pids = NULL;
		size_t n = 0, own = 1; /* pid */
		int err;

		if (!e->exec || !maps_entry__is_file(e))
			continue;
		file = (struct owners_key){.dev = makedev(e->dev_major, e->dev_minor),
					   .ino = e->inode};
		if (!is_split_key(l, file.dev, file.ino))
			continue;
		err = owners__pids_of(o, &file, &pids, &n);
		if (err)
			return err;
		for (size_t j = 0; j < n; j++)
			own += pids[j] != pid && loader__heap_path_of(l, pids[j]) == PROF_PATH_OWN;
		err = own > HEAP_SPLIT_MAX ? merge_file(l, o, e, &file, pids, n, own, pid, root_fd)
					   : 0;
		free(pids);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The path pid's image takes among the wide scope's allocator links: its own otel_memory
 * probes, links of its own (it is on them already, or maps a file probed per process), or the
 * links for every process.
 */
static int wide_path(struct loader *l, uint32_t pid, const struct maps *m)
{
	int path = loader__heap_path_of(l, pid);

	if (path == PROF_PATH_OTEL || path == PROF_PATH_OWN)
		return path;
	if (!loader__heap_split(l))
		return PROF_PATH_ALLOC; /* no file probed per process yet: nothing to look for */
	/* By the maps lines: no file opened for it. */
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];

		if (e->exec && maps_entry__is_file(e) &&
		    is_split_key(l, makedev(e->dev_major, e->dev_minor), e->inode))
			return PROF_PATH_OWN;
	}
	return PROF_PATH_ALLOC;
}

/*
 * One file pid maps (open as fd; mapped as e) in a wide scope, by pid's path: the links for
 * every process (as any scope), and then a process on its otel_memory probes splits the file,
 * and one on PROF_PATH_OWN gets links of its own.  The functions probed, or -errno.  The file
 * is the loader's by its stat, o's by its maps line (overlay and btrfs tell other device
 * numbers there): a process's own links are kept under the latter, which o lists for it.
 */
static int wide_file(struct loader *l, struct owners *o, uint32_t pid, int path, int fd,
		     const struct maps_entry *e)
{
	int n = heap_attach__file(l, fd, e->path, -1);
	struct owners_key mapped = {.dev = makedev(e->dev_major, e->dev_minor), .ino = e->inode};
	struct stat st;
	int err;

	if (n < 0 || path == PROF_PATH_ALLOC || fstat(fd, &st))
		return n;
	if (path == PROF_PATH_OTEL) {
		err = n > 0 && loader__heap_split(l) ? split_file(l, o, &st, &mapped, e->path, pid)
						     : 0;
		return err ? err : n;
	}
	return n > 0 || is_split(l, &st)
		       ? file_attach(l, fd, e->path, (int)pid, PROF_COOKIE_OWN, &mapped)
		       : 0;
}

/*
 * -p: a process that exec'd since the attach (heap_attach__exec, after its new image was
 * attached) has the files its dynamic loader maps probed at the loader's reports, which
 * otherwise look for the otel_memory probes only.  Told by a mark, an entry of no file (ino 0),
 * which goes with the process's other entries when it moves onto its probes.
 */
static struct loader_attach_key pid_mark(int probe_pid)
{
	return (struct loader_attach_key){.pid = probe_pid, .kind = LOADER_ATTACH_HEAP};
}

int heap_attach__exec(struct loader *l, int probe_pid)
{
	struct loader_attach_key mark = pid_mark(probe_pid);
	int32_t *slot;

	return loader__attached(l, &mark, &slot, NULL);
}

/* heap_attach__process; with o, pid's executable files become its own there. */
static int attach_process(struct loader *l, struct owners *o, uint32_t pid, const struct maps *m,
			  int probe_pid, enum heap_attach_why why, bool late, int *nfns)
{
	struct owners_key *files = NULL;
	int err, root_fd = -1, otel = 0, path = PROF_PATH_ALLOC;
	size_t nfiles = 0, failed = 0;

	if (o) {
		/* A new image: the old one's own links go (BPF moved it off them at its exec). */
		if (why == HEAP_ATTACH_IMAGE)
			own_drop(l, o, pid);
		/* Every executable file mapping, opened or not: what it maps is what counts. */
		files = calloc(m->count ? m->count : 1, sizeof(*files));
		if (!files) {
			err = -ENOMEM;
			goto cleanup;
		}
		for (size_t i = 0; i < m->count; i++)
			if (m->entries[i].exec && maps_entry__is_file(&m->entries[i]))
				files[nfiles++] =
					(struct owners_key){.dev = makedev(m->entries[i].dev_major,
									   m->entries[i].dev_minor),
							    .ino = m->entries[i].inode};
		err = owners__set_files(o, pid, files, nfiles);
		if (err)
			goto cleanup;
	}
	/* Paths are the target's: resolved inside its root, never on the host. */
	err = safe_open__root(&root_fd, "/proc", pid);
	if (err)
		goto cleanup;
	if (why != HEAP_ATTACH_PREPARE) {
		if (why == HEAP_ATTACH_OTEL && probe_pid >= 0) {
			struct loader_attach_key mark = pid_mark(probe_pid);

			if (loader__attached_find(l, &mark))
				why = HEAP_ATTACH_MORE;
		}
		otel = otel_process(l, pid, m, root_fd, probe_pid);
		if (otel < 0) {
			err = otel;
			goto cleanup;
		}
		/* A dlopen without the probes changes nothing: the image's path was decided. */
		if (otel || why == HEAP_ATTACH_IMAGE) {
			otel = loader__heap_path(l, pid, otel);
			if (otel < 0) {
				err = otel;
				goto cleanup;
			}
		}
		/* Probed per process: the allocator probes are not attached at all (its two
		 * probes are what serve it: counted as the functions probed), and those attached
		 * for it before go (BPF ignores them, but each of its calls would still trap
		 * there: a -p target that execs a preloaded program, or dlopens the probes). */
		if (otel && probe_pid >= 0) {
			int n = loader__detach_pid(l, probe_pid, LOADER_ATTACH_HEAP);

			if (n > 0)
				pr_info("process %d: on its otel_memory probes, %d allocator "
					"probe links detached\n",
					probe_pid, n);
			*nfns += 2;
			err = n == -ENOMEM ? n : 0;
			goto cleanup;
		}
		if (why == HEAP_ATTACH_OTEL) {
			err = 0;
			goto cleanup;
		}
		if (o) {
			path = wide_path(l, pid, m);
			if (path == PROF_PATH_OTEL)
				own_drop(l, o, pid); /* moved onto its probes by a dlopen */
			if (path == PROF_PATH_OWN) {
				err = merge_crowded(l, o, pid, m, root_fd);
				if (err)
					goto cleanup;
				path = wide_path(l, pid, m);
			}
		}
	}
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		int fd;

		if (!probed_file(e))
			continue;
		err = safe_open__mapping(&fd, "/proc", pid, e, root_fd);
		/* Out of descriptors or memory: every file after it would fail too, and the run
		 * loses allocations: the caller's to report, not a file to skip quietly. */
		if (err == -EMFILE || err == -ENFILE || err == -ENOMEM)
			goto cleanup;
		if (err) {
			if (safe_open__refused(err))
				pr_warn("not probing %s of %u: %s\n", e->path, pid,
					safe_open__strerror(err));
			else
				pr_debug("not probing %s: %s\n", e->path, strerror(-err));
			continue;
		}
		err = o ? wide_file(l, o, pid, path, fd, e)
			: heap_attach__file(l, fd, e->path, probe_pid);
		close(fd);
		if (err == -ENOMEM)
			goto cleanup;
		if (err > 0)
			*nfns += err;
		else if (err < 0 && path == PROF_PATH_OWN)
			failed++;
		else if (err < 0)
			pr_debug("not probing %s: %s\n", e->path, strerror(-err));
	}
	err = 0;
	/* On its own links once every one is in (they serve it from this map update on). */
	if (path == PROF_PATH_OWN && !failed) {
		err = loader__heap_own(l, pid, late);
		if (err > 0)
			pr_debug("process %u: on allocator probes of its own%s\n", pid,
				 late ? " (ran without them since its fork or exec)" : "");
	}
	if (path == PROF_PATH_OWN && (failed || err < 0)) {
		pr_warn("process %u: its own allocator probes could not be attached: its "
			"allocations in files probed per process are not seen\n",
			pid);
		own_drop(l, o, pid);
	}
	err = err == -ENOMEM ? err : 0;
cleanup:
	if (root_fd >= 0)
		close(root_fd);
	free(files);
	return err;
}

/* pid's mappings m, or (NULL) read now. */
static int attach_pid(struct loader *l, struct owners *o, uint32_t pid, const struct maps *m,
		      int probe_pid, enum heap_attach_why why, bool late, int *nfns)
{
	struct maps *read = NULL;
	int err;

	if (m)
		return attach_process(l, o, pid, m, probe_pid, why, late, nfns);
	err = maps__read_pid(&read, "/proc", pid);
	if (!err)
		err = attach_process(l, o, pid, read, probe_pid, why, late, nfns);
	maps__free(read);
	return err;
}

int heap_attach__process(struct loader *l, uint32_t pid, const struct maps *m, int probe_pid,
			 enum heap_attach_why why, int *nfns)
{
	return attach_pid(l, NULL, pid, m, probe_pid, why, false, nfns);
}

int heap_attach__scoped(struct loader *l, struct owners *o, uint32_t pid, const struct maps *m,
			enum heap_attach_why why, bool late, int *nfns)
{
	return attach_pid(l, o, pid, m, -1, why, late, nfns);
}

void heap_attach__gone(struct loader *l, struct owners *o, uint32_t pid)
{
	own_drop(l, o, pid);
}

int heap_attach__root(struct loader *l, struct owners *o, int root_fd, bool exit_hooks, int *nfns)
{
	static const char *const dirs[] = {"/lib/x86_64-linux-gnu",
					   "/usr/lib/x86_64-linux-gnu",
					   "/lib64",
					   "/usr/lib64",
					   "/lib",
					   "/usr/lib"};
	/* glibc, libstdc++ (operator new) and musl (its libc is its loader). */
	static const char *const allocators[] = {"libc.so.6", "libstdc++.so.6",
						 "ld-musl-x86_64.so.1"};
	static const char *const loaders[] = {"ld-linux-x86-64.so.2"};
	struct owners_key root;
	char path[128];
	struct stat st;
	int err, fd;

	if (fstat(root_fd, &st))
		return -errno;
	root = (struct owners_key){.dev = st.st_dev, .ino = st.st_ino};
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		for (size_t i = 0; i < sizeof(allocators) / sizeof(allocators[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", dirs[d], allocators[i]);
			if (safe_open__at(&fd, root_fd, path, 0, SAFE_OPEN_ELF_MAX, NULL))
				continue;
			err = heap_attach__file(l, fd, path, -1);
			if (err > 0)
				*nfns += err;
			else if (err < 0)
				pr_debug("not probing %s: %s\n", path, strerror(-err));
			err = exit_hooks ? loader__attach_hook(l, LOADER_HOOK_EXIT, fd, path) : 0;
			/* Kept while a process in scope runs in this root. */
			if (err >= 0 && o)
				err = owners__group_fd(o, OWNERS_ROOT, &root, fd);
			close(fd);
			if (err < 0)
				return err;
		}
		for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]); i++) {
			snprintf(path, sizeof(path), "%s/%s", dirs[d], loaders[i]);
			if (safe_open__at(&fd, root_fd, path, 0, SAFE_OPEN_ELF_MAX, NULL))
				continue;
			err = loader__attach_hook(l, LOADER_HOOK_DL, fd, path);
			if (err >= 0 && o)
				err = owners__group_fd(o, OWNERS_ROOT, &root, fd);
			close(fd);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

int heap_attach__is_static(const char *path)
{
	int fd, ret = 1;
	char magic[2];
	size_t nph;
	Elf *e;

	ret = safe_open__at(&fd, -1, path, 0, SAFE_OPEN_ELF_MAX, NULL);
	if (ret)
		return ret == -EINVAL ? -ENOEXEC : ret;
	ret = 1;
	if (pread(fd, magic, 2, 0) == 2 && magic[0] == '#' && magic[1] == '!') {
		close(fd);
		return 0; /* a script: its interpreter is a dynamic program */
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph)) {
		ret = -ENOEXEC;
		goto cleanup;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_INTERP)
			ret = 0;
	}
cleanup:
	elf_end(e);
	close(fd);
	return ret;
}

int heap_attach__cmd(struct loader *l, const char *exe, int *nfns)
{
	int err, n, fd;

	/* A static executable brings its own allocator (or none): probe only the file itself. */
	n = heap_attach__is_static(exe);
	if (n < 0)
		return n;
	if (!n) {
		/* Dynamic programs load the system's libc and libstdc++: the ones we map ourselves.
		 */
		err = heap_attach__process(l, (uint32_t)getpid(), NULL, -1, HEAP_ATTACH_PREPARE,
					   nfns);
		if (err)
			return err;
	}
	err = safe_open__at(&fd, -1, exe, 0, SAFE_OPEN_ELF_MAX, NULL);
	if (err)
		return err;
	err = heap_attach__file(l, fd, exe, -1);
	close(fd);
	if (err > 0)
		*nfns += err;
	return 0;
}
