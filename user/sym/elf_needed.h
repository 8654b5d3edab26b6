/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The libraries an executable's DT_NEEDED entries name, found the way the dynamic loader
 * searches (DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, the standard directories; not
 * /etc/ld.so.cache), inside a target's root: the runtimes --calls attaches to before they are
 * mapped, the libraries whose unwind tables are built before a new program runs.
 */
#ifndef PROF_ELF_NEEDED_H
#define PROF_ELF_NEEDED_H

#include <stdbool.h>

/* DT_NEEDED entries read per file. */
#define ELF_NEEDED_MAX 64

/*
 * Calls fn with the path of every DT_NEEDED library of the ELF file open at fd for which want
 * (NULL: every one) says yes, resolved to a path inside root_fd (-1: ours) that opens as a
 * regular file, with ld_path as LD_LIBRARY_PATH (may be NULL).  origin: the directory of the
 * file ($ORIGIN).  Libraries not found are skipped.
 */
void elf_needed__each(int fd, const char *origin, int root_fd, const char *ld_path,
		      bool (*want)(const char *name), void (*fn)(const char *path, void *arg),
		      void *arg);

#endif /* PROF_ELF_NEEDED_H */
