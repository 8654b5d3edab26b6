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
		      struct bpf_program *free_, const char *path, int pid)
{
	uint64_t done[MAX_FNS];
	struct elf_file *ef = NULL;
	unsigned ndone = 0, nfns = 0;
	int err;

	/* Only the symbol table is needed: skip the separate debug-file search. */
	err = elf_file__open(&ef, path, &(struct elf_file_opts){.debug_dir = ""});
	if (err)
		return err;
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
			err = attach_one(l, free_, false, path, pid, off + probe, a->fn);
		} else if (prof_fn_entry_only(a->fn)) {
			/* no uretprobe: a bad_alloc must unwind through it (include/prof_heap.h) */
			err = attach_one(l, enter, false, path, pid, off + probe,
					 PROF_COOKIE(a->fn, fn.size ? fn.size : 64));
		} else {
			err = attach_one(l, enter, false, path, pid, off + probe, a->fn);
			if (!err)
				err = attach_one(l, ret, true, path, pid, off + probe, a->fn);
		}
		if (err) {
			/*
			 * Seen with Debian's bcc 0.26 memleak running: its uprobes carry a bogus
			 * ref_ctr_offset, and the kernel refuses any other probe on that spot.
			 */
			pr_err("attaching to %s in %s failed: %s%s\n", a->name, path,
			       strerror(-err),
			       err == -EINVAL
				       ? " (another tracer may hold a conflicting probe there; "
					 "dmesg shows 'ref_ctr_offset mismatch')"
				       : "");
			goto cleanup;
		}
		pr_debug("probing %s at %s+0x%llx (+%llu)\n", a->name, path,
			 (unsigned long long)off, (unsigned long long)probe);
		nfns++;
	}
	err = (int)nfns;
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
	char path[PATH_MAX + 64];
	struct maps *m = NULL;
	int err;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	err = maps__read(&m, path);
	if (err)
		return err;
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];

		if (!e->exec || !maps_entry__is_file(e))
			continue;
		/* Through the target's root, so a process in another mount namespace works. */
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, e->path);
		err = loader__attach_heap(l, path, probe_pid);
		if (err > 0)
			*nfns += err;
		else if (err < 0)
			pr_debug("not probing %s: %s\n", e->path, strerror(-err));
	}
	maps__free(m);
	return 0;
}

int heap_attach__is_static(const char *path)
{
	int fd, ret = 1;
	char magic[2];
	size_t nph;
	Elf *e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
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
