/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The CPythons installed on this machine, for the unit tests that run real interpreters
 * (test_python, test_pythreads, test_pycode).  Each test file is built alone, so this is a
 * header of static functions; include it after <cmocka.h>.
 *
 * pyenv roots, in this order, the first holding a version winning: $PYENV_ROOT, $HOME/.pyenv,
 * `pyenv root`, /root/.pyenv.  Debian's /usr/bin/python3.11 comes last (static libpython: the
 * executable is the ELF file holding _PyRuntime).
 */
#ifndef PROF_TESTS_PYINTERP_H
#define PROF_TESTS_PYINTERP_H

#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define PYINTERP_DEBIAN	   "/usr/bin/python3.11"
#define PYINTERP_MIN_MINOR 8 /* the versions we walk: 3.8 to 3.13 */
#define PYINTERP_MAX_MINOR 13
#define PYINTERP_MAX_ROOTS 4

struct pyinterp {
	unsigned minor;
	bool debian;
	char prefix[PATH_MAX];
	char bin[PATH_MAX + 64]; /* bin/python3.X */
	char lib[PATH_MAX + 64]; /* the ELF holding _PyRuntime: lib/libpython3.X[m].so.1.0 */
};

/* CI installs the interpreters on purpose: there a missing one fails, elsewhere it skips. */
static inline bool pyinterp__in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

/* Nothing to run the test on (have is false): a failure in CI, a skip elsewhere. */
static inline void pyinterp__need(bool have, const char *what)
{
	if (have)
		return;
	if (pyinterp__in_ci())
		fail_msg("%s, CI=true", what);
	skip();
}

/* Every interpreter we walk: pyenv's 3.8 to 3.13 and Debian's 3.11. */
#define PYINTERP_ALL (PYINTERP_MAX_MINOR - PYINTERP_MIN_MINOR + 2)

/*
 * A test over installed interpreters ran on ran of the want it covers.  CI installs every one:
 * there any missing fails; elsewhere none is a skip and some are enough.
 */
static inline void pyinterp__need_all(unsigned ran, unsigned want, const char *what)
{
	if (ran < want && pyinterp__in_ci())
		fail_msg("%s: %u of %u interpreters ran, CI=true", what, ran, want);
	if (!ran)
		skip();
}

static inline void pyinterp__add_root(char roots[][PATH_MAX], size_t *n, const char *root)
{
	if (!root || !*root || *n >= PYINTERP_MAX_ROOTS)
		return;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(roots[i], root))
			return;
	snprintf(roots[(*n)++], PATH_MAX, "%s", root);
}

/* The pyenv roots, found once (`pyenv root` runs a shell script). */
static inline size_t pyinterp__roots(const char (**out)[PATH_MAX])
{
	static char roots[PYINTERP_MAX_ROOTS][PATH_MAX];
	static size_t n;
	static bool done;
	char buf[PATH_MAX] = "";
	const char *home;
	FILE *f;

	*out = (const char(*)[PATH_MAX])roots;
	if (done)
		return n;
	done = true;
	pyinterp__add_root(roots, &n, getenv("PYENV_ROOT"));
	home = getenv("HOME");
	if (home && *home && snprintf(buf, sizeof(buf), "%s/.pyenv", home) < (int)sizeof(buf))
		pyinterp__add_root(roots, &n, buf);
	f = popen("pyenv root 2>/dev/null", "r");
	if (f) {
		buf[0] = '\0';
		if (fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\n")] = '\0';
		pclose(f);
		pyinterp__add_root(roots, &n, buf);
	}
	pyinterp__add_root(roots, &n, "/root/.pyenv");
	return n;
}

/* The newest 3.<minor>.* of the first pyenv root that has one with both its executable and its
 * shared libpython (3.6 and 3.7 name it libpython3.Xm); false when none. */
static inline bool pyinterp__pyenv(unsigned minor, struct pyinterp *out)
{
	const char(*roots)[PATH_MAX];
	size_t nroots = pyinterp__roots(&roots);
	const char *best = NULL;
	char pat[PATH_MAX + 32];
	glob_t g;

	memset(out, 0, sizeof(*out));
	out->minor = minor;
	for (size_t r = 0; r < nroots && !best; r++) {
		snprintf(pat, sizeof(pat), "%s/versions/3.%u.*", roots[r], minor);
		if (glob(pat, 0, NULL, &g))
			continue;
		/* By version, not by glob's order: 3.11.10 is newer than 3.11.9. */
		for (size_t i = 0; i < g.gl_pathc; i++) {
			char bin[sizeof(out->bin)], lib[sizeof(out->lib)];
			const char *p = g.gl_pathv[i];

			snprintf(bin, sizeof(bin), "%s/bin/python3.%u", p, minor);
			snprintf(lib, sizeof(lib), "%s/lib/libpython3.%u%s.so.1.0", p, minor,
				 minor < 8 ? "m" : "");
			if (access(bin, X_OK) || access(lib, R_OK))
				continue;
			if (best && strverscmp(p, best) <= 0)
				continue;
			best = p;
			snprintf(out->prefix, sizeof(out->prefix), "%s", p);
			snprintf(out->bin, sizeof(out->bin), "%s", bin);
			snprintf(out->lib, sizeof(out->lib), "%s", lib);
		}
		globfree(&g);
	}
	return best != NULL;
}

/* Debian's python3.11 when installed: the executable is also the ELF holding _PyRuntime. */
static inline bool pyinterp__debian(struct pyinterp *out)
{
	memset(out, 0, sizeof(*out));
	out->minor = 11;
	out->debian = true;
	snprintf(out->prefix, sizeof(out->prefix), "/usr");
	snprintf(out->bin, sizeof(out->bin), PYINTERP_DEBIAN);
	snprintf(out->lib, sizeof(out->lib), PYINTERP_DEBIAN);
	return access(PYINTERP_DEBIAN, X_OK) == 0;
}

/* The interpreters we walk: pyenv's newest 3.8 to 3.13, then Debian's 3.11; how many (at most
 * max) were stored in out. */
static inline size_t pyinterp__all(struct pyinterp *out, size_t max)
{
	size_t n = 0;

	for (unsigned minor = PYINTERP_MIN_MINOR; minor <= PYINTERP_MAX_MINOR && n < max; minor++)
		if (pyinterp__pyenv(minor, &out[n]))
			n++;
	if (n < max && pyinterp__debian(&out[n]))
		n++;
	return n;
}

/*
 * Load bias of path in pid: the start of its offset-0 mapping (*map_start when not NULL, where
 * the ELF header is) less its first PT_LOAD's page.
 */
static inline uint64_t pyinterp__load_bias(pid_t pid, const char *path, uint64_t *map_start)
{
	char maps[64], line[PATH_MAX + 128], file[PATH_MAX], real[PATH_MAX];
	unsigned long long start, end, off;
	uint64_t base = 0, vaddr = UINT64_MAX;
	bool found = false;
	GElf_Phdr ph;
	size_t n;
	FILE *f;
	Elf *elf;
	int fd;

	assert_non_null(realpath(path, real));
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &start, &end, &off, file) !=
		    4)
			continue;
		if (!found && off == 0 && !strcmp(file, real)) {
			base = start;
			found = true;
		}
	}
	fclose(f);
	assert_true(found);

	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(real, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && ph.p_offset == 0)
			vaddr = ph.p_vaddr & ~0xfffULL;
	}
	elf_end(elf);
	close(fd);
	assert_true(vaddr != UINT64_MAX);
	if (map_start)
		*map_start = base;
	return base - vaddr;
}

#endif /* PROF_TESTS_PYINTERP_H */
