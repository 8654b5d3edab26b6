// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/safe_open.h"

#define MAX_RANGES (1u << 20)

/* An address range of one compile unit. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off cu;
};

struct dwlines {
	int fd;
	Elf *elf;
	Dwarf *dw;
	uint64_t bytes;
	struct cu_range *ranges; /* by lo: without .debug_aranges (clang emits none) */
	size_t nranges;
	bool ranges_built;
	char path[PATH_MAX]; /* the last lookup's file, made absolute */
};

/* The DWARF sections a line lookup may read (libdw loads them whole). */
static uint64_t dwarf_bytes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	uint64_t n = 0;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strncmp(name, ".debug_", 7))
			n += sh.sh_size;
	}
	return n;
}

int dwlines__open(struct dwlines **out, const char *path)
{
	struct dwlines *d = calloc(1, sizeof(*d));
	struct stat st;
	int err;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	err = safe_open__at(&d->fd, -1, path, 0, DWLINES_MAX_BYTES, &st);
	if (err) {
		d->fd = -1;
		goto cleanup;
	}
	/* A file only root could have written (see the header: libdw trusts its input). */
	if (st.st_uid != 0 || (st.st_mode & 022)) {
		err = -EPERM;
		goto cleanup;
	}
	/* Read, not mapped: a file truncated while we hold it must not SIGBUS us. */
	elf_version(EV_CURRENT);
	d->elf = elf_begin(d->fd, ELF_C_READ, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto cleanup;
	}
	d->bytes = dwarf_bytes(d->elf);
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		err = -ENOENT;
		goto cleanup;
	}
	*out = d;
	return 0;
cleanup:
	dwlines__free(d);
	return err;
}

void dwlines__free(struct dwlines *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	free(d->ranges);
	free(d);
}

uint64_t dwlines__bytes(const struct dwlines *d)
{
	return d->bytes;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every compile unit's ranges (DW_AT_low_pc/high_pc or DW_AT_ranges), once, sorted. */
static void build_ranges(struct dwlines *d)
{
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;

	d->ranges_built = true;
	while (!dwarf_nextcu(d->dw, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Addr base, lo, hi;
		Dwarf_Die die;
		ptrdiff_t it = 0;

		if (dwarf_offdie(d->dw, off + hsize, &die))
			while ((it = dwarf_ranges(&die, it, &base, &lo, &hi)) > 0 &&
			       d->nranges < MAX_RANGES) {
				if (d->nranges == cap) {
					struct cu_range *r;

					cap = cap ? 2 * cap : 64;
					r = realloc(d->ranges, cap * sizeof(*r));
					if (!r)
						return;
					d->ranges = r;
				}
				d->ranges[d->nranges++] = (struct cu_range){lo, hi, off + hsize};
			}
		off = next;
	}
	if (d->nranges)
		qsort(d->ranges, d->nranges, sizeof(*d->ranges), cmp_range);
}

/* The compile unit holding vaddr: by .debug_aranges, else by the units' own ranges. */
static bool find_cu(struct dwlines *d, uint64_t vaddr, Dwarf_Die *cu)
{
	size_t lo = 0, hi;

	if (dwarf_addrdie(d->dw, vaddr, cu))
		return true;
	if (!d->ranges_built)
		build_ranges(d);
	hi = d->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->ranges[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges may nest or overlap: look back a little from the last that starts below. */
	for (size_t i = lo; i-- > 0 && lo - i <= 16;)
		if (vaddr < d->ranges[i].hi)
			return dwarf_offdie(d->dw, d->ranges[i].cu, cu) != NULL;
	return false;
}

int dwlines__lookup(struct dwlines *d, uint64_t vaddr, const char **file, int *line)
{
	Dwarf_Line *l;
	Dwarf_Die cu;

	if (!find_cu(d, vaddr, &cu))
		return -ENOENT;
	l = dwarf_getsrc_die(&cu, vaddr);
	if (!l || dwarf_lineno(l, line) || *line <= 0)
		return -ENOENT;
	*file = dwarf_linesrc(l, NULL, NULL);
	if (!*file)
		return -ENOENT;
	/* DWARF 4 names files relative to the unit's directory, as addr2line shows them joined. */
	if ((*file)[0] != '/') {
		Dwarf_Attribute a;
		const char *dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &a));
		int n = dir ? snprintf(d->path, sizeof(d->path), "%s/%s", dir, *file) : -1;

		if (n > 0 && (size_t)n < sizeof(d->path))
			*file = d->path;
	}
	return 0;
}
