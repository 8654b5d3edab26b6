// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/elf_needed.h"

#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/safe_open.h"

/* Directories the dynamic loader searches for path's DT_NEEDED libraries, in its order
 * (without /etc/ld.so.cache: the standard directories stand for it). */
static void needed_dirs(const char *rpath, const char *runpath, const char *origin,
			const char *ld_path, void (*fn)(const char *dir, void *arg), void *arg)
{
	static const char *const std_dirs[] = {
		"/lib/x86_64-linux-gnu",
		"/usr/lib/x86_64-linux-gnu",
		"/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu",
		"/lib64",
		"/usr/lib64",
		"/lib",
		"/usr/lib",
		"/usr/local/lib",
	};
	const char *lists[3] = {runpath ? NULL : rpath, ld_path, runpath};

	for (int l = 0; l < 3; l++) {
		char *copy, *dir, *save = NULL;

		if (!lists[l] || !(copy = strdup(lists[l])))
			continue;
		for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
			char buf[PATH_MAX];

			if (!strncmp(dir, "$ORIGIN", 7))
				snprintf(buf, sizeof(buf), "%s%s", origin, dir + 7);
			else
				snprintf(buf, sizeof(buf), "%s", dir);
			fn(buf, arg);
		}
		free(copy);
	}
	for (size_t i = 0; i < sizeof(std_dirs) / sizeof(std_dirs[0]); i++)
		fn(std_dirs[i], arg);
}

struct lib_search {
	const char *name;
	int root_fd; /* the target's root (-1: ours) */
	char found[PATH_MAX * 2];
};

static void try_dir(const char *dir, void *arg)
{
	struct lib_search *s = arg;
	char path[PATH_MAX * 2];
	int fd;

	if (s->found[0])
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, s->name);
	if (safe_open__at(&fd, s->root_fd, path, 0, SAFE_OPEN_ELF_MAX, NULL))
		return;
	close(fd);
	snprintf(s->found, sizeof(s->found), "%s", path);
}

void elf_needed__each(int fd, const char *origin, int root_fd, const char *ld_path,
		      bool (*want)(const char *name), void (*fn)(const char *path, void *arg),
		      void *arg)
{
	const char *needed[ELF_NEEDED_MAX], *rpath = NULL, *runpath = NULL;
	size_t nneeded = 0;
	Elf_Scn *scn = NULL;
	Elf *e = NULL;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn d;
			const char *s;

			if (!gelf_getdyn(data, (int)i, &d))
				break;
			if (d.d_tag != DT_NEEDED && d.d_tag != DT_RPATH && d.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(e, sh.sh_link, d.d_un.d_val);
			if (!s)
				continue;
			if (d.d_tag == DT_RPATH)
				rpath = s;
			else if (d.d_tag == DT_RUNPATH)
				runpath = s;
			else if (nneeded < ELF_NEEDED_MAX && (!want || want(s)))
				needed[nneeded++] = s;
		}
	}
	for (size_t i = 0; i < nneeded; i++) {
		struct lib_search s = {.name = needed[i], .root_fd = root_fd};

		needed_dirs(rpath, runpath, origin, ld_path, try_dir, &s);
		if (s.found[0])
			fn(s.found, arg);
	}
	if (e)
		elf_end(e);
}
