// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "heap_attach.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "elf_file.h"
#include "loader.h"
#include "maps.h"
#include "log.h"
#include "prof_heap.h"
#include "prologue.h"
#include "safe_open.h"

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

static int attach_one(struct loader *l, struct bpf_program *prog, bool retprobe, const char *path,
		      int pid, uint64_t off, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);
	if (!link)
		return -errno;
	return loader__keep_link(l, link);
}

int heap_attach__file(struct loader *l, struct bpf_program *enter, struct bpf_program *ret,
		      struct bpf_program *free_, int fd, const char *name, int pid)
{
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
	for (unsigned i = 0; i < plan.count; i++) {
		const struct heap_probe *p = &plan.probes[i];
		struct bpf_program *prog = p->kind == HEAP_PROBE_FREE	 ? free_
					   : p->kind == HEAP_PROBE_ENTRY ? enter
									 : ret;

		err = attach_one(l, prog, p->kind == HEAP_PROBE_RETURN, path, pid, p->offset,
				 PROF_COOKIE(p->fn, p->code_size));
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

int heap_attach__fill_intervals(int map_fd, uint64_t mean)
{
	/*
	 * The exponential's quantiles at the cell midpoints, not random draws: BPF picks a random
	 * cell, so intervals are still random and exponential, but the table itself carries no
	 * sampling error that every allocation of the run would share.
	 */
	for (uint32_t i = 0; i < PROF_SAMPLE_TABLE; i++) {
		double u = ((double)i + 0.5) / PROF_SAMPLE_TABLE;
		uint64_t v = (uint64_t)(-log1p(-u) * (double)mean) + 1;

		if (bpf_map_update_elem(map_fd, &i, &v, BPF_ANY))
			return -errno;
	}
	return 0;
}

int heap_attach__process(struct loader *l, uint32_t pid, int probe_pid, int *nfns)
{
	char path[64];
	struct maps *m = NULL;
	int err, root_fd = -1;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	err = maps__read(&m, path);
	if (err)
		return err;
	/* Paths are the target's: resolved inside its root, never on the host. */
	err = safe_open__root(&root_fd, "/proc", pid);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		int fd;

		if (!e->exec || !maps_entry__is_file(e))
			continue;
		err = safe_open__mapping(&fd, "/proc", pid, e, root_fd);
		if (err) {
			if (safe_open__refused(err))
				pr_warn("not probing %s of %u: %s\n", e->path, pid,
					safe_open__strerror(err));
			else
				pr_debug("not probing %s: %s\n", e->path, strerror(-err));
			continue;
		}
		err = loader__attach_heap(l, fd, e->path, probe_pid);
		close(fd);
		if (err > 0)
			*nfns += err;
		else if (err < 0)
			pr_debug("not probing %s: %s\n", e->path, strerror(-err));
	}
	err = 0;
cleanup:
	if (root_fd >= 0)
		close(root_fd);
	maps__free(m);
	return err;
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
