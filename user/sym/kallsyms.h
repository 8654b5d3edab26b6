/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel text symbols from /proc/kallsyms (or a copy of it), loaded once, sorted, searched by
 * address.  A symbol extends to the next one; module symbols keep their module name.
 */
#ifndef PROF_KALLSYMS_H
#define PROF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct kallsyms;

struct ksym {
	uint64_t addr;
	const char *name;
	const char *module; /* "ext4", "bpf", …; NULL for the kernel image */
};

/*
 * Load text symbols (types t, T, w, W) from path ("/proc/kallsyms" when NULL).  -EACCES when
 * every address reads as 0: kernel symbols are hidden from us (kptr_restrict, not root).
 */
int kallsyms__load(struct kallsyms **out, const char *path);
/* The same over an open stream (the parser; the caller owns f). */
int kallsyms__parse(struct kallsyms **out, FILE *f);
void kallsyms__free(struct kallsyms *k);
size_t kallsyms__count(const struct kallsyms *k);

/* The symbol containing addr, or NULL below the first one. */
const struct ksym *kallsyms__resolve(const struct kallsyms *k, uint64_t addr);

#endif /* PROF_KALLSYMS_H */
