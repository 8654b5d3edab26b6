// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/dwarf_alt.h"

#include <errno.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/safe_open.h"
#include "sym/dwarf_lines.h"
#include "sym/elf_file.h"
#include "util/dwcursor.h"

int dwalt__parse(struct dwalt_link *out, const uint8_t *p, size_t n, enum dwalt_section k)
{
	struct cur r = {p, p + n, false};
	bool sup = k != DWALT_GNU;
	uint64_t len;

	memset(out, 0, sizeof(*out));
	out->path = "";
	if (!p || !n)
		return -ENOENT;
	/* .debug_sup: version 5, is_supplementary, a file name, a checksum (dwz: the build id) */
	if (sup && (rd_u(&r, 2) != 5 || rd_u(&r, 1) != (k == DWALT_SUP_SELF)))
		return -ENOENT;
	out->path = rd_str(&r);
	len = sup ? rd_uleb(&r) : (uint64_t)(r.end - r.p);
	if (r.err || !out->path || len < 2 || len > DWALT_MAX_ID || len > (uint64_t)(r.end - r.p)) {
		out->path = "";
		return -ENOENT;
	}
	memcpy(out->id, r.p, len);
	out->id_len = len;
	return 0;
}

/* path lies below dir, lexically: no "." or ".." component can lead it out. */
static bool inside(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (!n || strncmp(path, dir, n) || path[n] != '/')
		return false;
	for (const char *c = path + n; *c;) {
		size_t len;

		while (*c == '/')
			c++;
		len = strcspn(c, "/");
		if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += len;
	}
	return true;
}

/* Lowercase hex of id[0..n), malloc'd. */
static char *hex(const uint8_t *id, size_t n)
{
	char *s = malloc(2 * n + 1);

	for (size_t i = 0; s && i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", id[i]);
	if (s)
		s[2 * n] = '\0';
	return s;
}

/* The candidate cand, when it carries build id want (hex): 0 and *out, else -errno. */
static int try_alt(int *out, const char *cand, const char *want)
{
	struct dwalt_link self;
	char *got = NULL;
	size_t shstrndx;
	struct cur sup;
	Elf *elf;
	int err, fd;

	err = safe_open__at(&fd, -1, cand, 0, DWLINES_MAX_BYTES, NULL);
	if (err)
		return err;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	err = !elf || elf_kind(elf) != ELF_K_ELF ? -ENOEXEC : elf_file__build_id_of(&got, elf);
	if (!err && !got && !elf_getshdrstrndx(elf, &shstrndx)) {
		sup = dwlines__section(elf, shstrndx, ".debug_sup", &err);
		err = 0;
		if (sup.p &&
		    !dwalt__parse(&self, sup.p, (size_t)(sup.end - sup.p), DWALT_SUP_SELF) &&
		    !(got = hex(self.id, self.id_len)))
			err = -ENOMEM;
	}
	if (!err && (!got || strcmp(got, want)))
		err = -ESTALE;
	if (elf)
		elf_end(elf);
	free(got);
	if (err)
		close(fd);
	else
		*out = fd;
	return err;
}

int dwalt__open(int *out, const struct dwalt_link *link, const char *path, const char *debug_dir)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	bool stale = false;
	int err = -ENOENT;
	char *want;

	*out = -1;
	if (!debug_dir || !debug_dir[0] || link->id_len < 2 || link->id_len > DWALT_MAX_ID)
		return -ENOENT;
	want = hex(link->id, link->id_len);
	if (!want)
		return -ENOMEM;
	/* gdb's order: by build id, then the link's path (relative: to the debug file's directory)
	 */
	for (int i = 0; i < 2; i++) {
		char *cand = NULL;
		int n = 0;

		if (i == 0)
			n = asprintf(&cand, "%s/.build-id/%.2s/%s.debug", debug_dir, want,
				     want + 2);
		else if (link->path[0] == '/')
			n = asprintf(&cand, "%s", link->path);
		else if (link->path[0] && slash)
			n = asprintf(&cand, "%.*s/%s", (int)(slash - path), path, link->path);
		if (n < 0) {
			err = -ENOMEM;
			break;
		}
		if (!cand)
			continue;
		err = inside(cand, debug_dir) ? try_alt(out, cand, want) : -ENOENT;
		free(cand);
		if (!err || err == -ENOMEM)
			break;
		stale |= err == -ESTALE;
	}
	free(want);
	return !err || err == -ENOMEM ? err : stale ? -ESTALE : -ENOENT;
}
