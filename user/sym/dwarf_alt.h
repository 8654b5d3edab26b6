/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * dwz's alternate file of a debug file: Debian's and Fedora's debug packages move the DIEs and
 * strings their files share into one file, named by the debug file's .gnu_debugaltlink (a path,
 * NUL, the alternate file's build id) or DWARF 5's .debug_sup, and referenced with GNU_ref_alt /
 * GNU_strp_alt or ref_sup / strp_sup.  Looked for as gdb does, first by build id under the debug
 * directory (<debug_dir>/.build-id/xx/rest.debug), then at the link's path (absolute, or relative
 * to the debug file's directory); both only inside the debug directory, since the link's bytes are
 * foreign (a debuginfod server's, or a target's own file's), and the file found must carry the
 * build id the link names (dwz --dwarf-5's file has no build-id note: its own .debug_sup's
 * checksum then).
 */
#ifndef PROF_SYM_DWARF_ALT_H
#define PROF_SYM_DWARF_ALT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DWALT_MAX_ID 64 /* build id bytes of a link, at most */

/* What a link names. */
struct dwalt_link {
	const char *path; /* inside the section's bytes, NUL-terminated; "" when none */
	uint8_t id[DWALT_MAX_ID];
	size_t id_len;
};

enum dwalt_section {
	DWALT_GNU,	/* .gnu_debugaltlink */
	DWALT_SUP,	/* .debug_sup of a file naming its supplementary file */
	DWALT_SUP_SELF, /* .debug_sup of the supplementary file: its own checksum */
};

/* Parse a section of kind k: 0, or -ENOENT (none, another kind, malformed). */
int dwalt__parse(struct dwalt_link *out, const uint8_t *p, size_t n, enum dwalt_section k);
/*
 * The alternate file link names for the debug file at path (NULL: an ELF file's own DWARF, no
 * directory of its own) under debug_dir: 0 and *out an fd open on it, its build id checked; else
 * -ENOENT (not found, or outside debug_dir), -ESTALE (found, another build), -ENOMEM.
 */
int dwalt__open(int *out, const struct dwalt_link *link, const char *path, const char *debug_dir);

#endif /* PROF_SYM_DWARF_ALT_H */
