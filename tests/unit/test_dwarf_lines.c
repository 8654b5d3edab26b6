// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Source lines from a debug file's DWARF, checked against binutils' addr2line reading the same
 * file (an independent reader of .debug_line), for the symfix fixture's functions; files without
 * DWARF or not ELF refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture_nm.h"
#include "sym/dwarf_lines.h"
#include "sym/dwbuild.h"

#define FIX "build/fixtures/"

/* addr2line's "file:line" of vaddr in path. */
static void addr2line(const char *path, uint64_t vaddr, char *file, size_t size, int *line)
{
	char cmd[512], out[1024], *colon;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "addr2line -e '%s' 0x%" PRIx64, path, vaddr);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	pclose(p);
	out[strcspn(out, " \n")] = '\0';
	colon = strrchr(out, ':');
	assert_non_null(colon);
	*colon = '\0';
	*line = atoi(colon + 1);
	snprintf(file, size, "%s", out);
}

/* Every line of some functions of path (addresses from nm listing) as addr2line has it. */
static void check_as_addr2line(const char *path, const char *nm)
{
	static const char *const funcs[] = {"symfix_alpha", "symfix_beta", "symfix_gamma",
					    "__symfix_impl", "main"};
	struct dwlines *d;

	assert_int_equal(dwlines__open(&d, path, NULL), 0);
	assert_true(dwlines__bytes(d) > 0);
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		uint64_t v = nm_addr(nm, funcs[i]);

		for (uint64_t off = 0; off < 8; off += 4) {
			char want[1024];
			const char *file;
			int line, want_line;

			addr2line(path, v + off, want, sizeof(want), &want_line);
			assert_true(want_line > 0);
			assert_int_equal(dwlines__lookup(d, v + off, &file, &line), 0);
			assert_int_equal(line, want_line);
			assert_string_equal(file, want);
		}
	}
	/* Outside every unit: nothing. */
	{
		const char *file;
		int line;

		assert_int_equal(dwlines__lookup(d, 0x10, &file, &line), -ENOENT);
	}
	dwlines__free(d);
}

static void test_dwarf_lines__as_addr2line_reads_them(void **state)
{
	(void)state;
	check_as_addr2line(FIX "symfix-pie.debug", FIX "symfix-pie.nm");   /* gcc, DWARF 5 */
	check_as_addr2line(FIX "symfix-pie-z.debug", FIX "symfix-pie.nm"); /* compressed */
	/* DWARF 4: the compilation directory from .debug_info's unit */
	check_as_addr2line(FIX "symfix-dwarf4", FIX "symfix-dwarf4.nm");
}

/* One level of addr2line -i -f: a function and its file:line. */
struct level {
	char func[256], file[512];
	int line;
};

/*
 * addr2line -a -i -f of the addresses [start, start + len) of path: per address, its levels
 * (innermost first, the physical function last) into lv[addr - start][], their count into nlv[].
 */
static void addr2line_inlines(const char *tool, const char *path, uint64_t start, unsigned len,
			      struct level (*lv)[8], unsigned *nlv)
{
	char cmd[65536], out[2048];
	size_t n = 0;
	int cur = -1;
	FILE *p;

	n += (size_t)snprintf(cmd, sizeof(cmd), "%s -a -i -f -e '%s'", tool, path);
	for (unsigned i = 0; i < len; i++)
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " 0x%" PRIx64, start + i);
	assert_true(n < sizeof(cmd));
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(out, sizeof(out), p)) {
		char *colon;
		struct level *l;

		out[strcspn(out, "\n")] = '\0';
		if (!out[0])
			continue;
		if (!strncmp(out, "0x", 2)) {
			cur = (int)(strtoull(out, NULL, 16) - start);
			assert_true(cur >= 0 && (unsigned)cur < len);
			nlv[cur] = 0;
			continue;
		}
		assert_true(cur >= 0 && nlv[cur] < 8);
		l = &lv[cur][nlv[cur]++];
		snprintf(l->func, sizeof(l->func), "%.255s", out);
		assert_non_null(fgets(out, sizeof(out), p));
		out[strcspn(out, " \n")] = '\0'; /* " (discriminator N)" */
		colon = strrchr(out, ':');
		assert_non_null(colon);
		*colon = '\0';
		l->line = atoi(colon + 1);
		snprintf(l->file, sizeof(l->file), "%.511s", out);
	}
	pclose(p);
}

/*
 * Every address of function func of path (its alternate file looked for under debug_dir): the
 * inlined calls there as addr2line -i reads them in ref (binutils' own DWARF reader; path itself,
 * or the same DWARF before dwz): names, files and lines of each level; returns how many
 * addresses were in an inlined call.
 */
static unsigned check_inlines(const char *tool, const char *ref, const char *path,
			      const char *debug_dir, const char *nm, const char *func,
			      uint64_t size)
{
	static struct level lv[2048][8]; /* 12 MiB: static */
	static unsigned nlv[2048];
	uint64_t start = nm_addr(nm, func);
	unsigned inlined = 0;
	struct dwlines *d;

	assert_true(size <= 2048);
	addr2line_inlines(tool, ref, start, (unsigned)size, lv, nlv);
	assert_int_equal(dwlines__open(&d, path, debug_dir), 0);
	for (unsigned i = 0; i < size; i++) {
		struct dwlines_frame fr[16];
		unsigned n;
		int err = dwlines__inlined(d, start + i, fr, 16, &n);

		assert_true(nlv[i] >= 1);
		if (nlv[i] == 1) { /* in no inlined call */
			assert_int_equal(err, -ENOENT);
			assert_int_equal(n, 0);
			continue;
		}
		inlined++;
		assert_int_equal(err, 0);
		assert_int_equal(n, nlv[i]);
		for (unsigned k = 0; k < n; k++) {
			if (k + 1 < n)
				assert_string_equal(fr[k].name, lv[i][k].func);
			else
				assert_null(fr[k].name); /* the symbol's */
			assert_non_null(fr[k].file);
			assert_string_equal(fr[k].file, lv[i][k].file);
			/* clang's line-0 rows ("no line"): the line reader keeps the row before. */
			if (k || lv[i][k].line)
				assert_int_equal(fr[k].line, lv[i][k].line);
		}
		assert_string_equal(lv[i][n - 1].func, func);
	}
	assert_int_equal(dwlines__unnamed(d), 0);
	dwlines__free(d);
	return inlined;
}

/* The size of func in nm listing nm ("addr size type name"). */
static uint64_t nm_size(const char *nm, const char *func)
{
	char line[512], a[32], b[32], c[8], name[256];
	uint64_t size = 0;
	FILE *f = fopen(nm, "r");

	assert_non_null(f);
	while (!size && fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %31s %7s %255s", a, b, c, name) == 4 && !strcmp(name, func))
			size = strtoull(b, NULL, 16);
	fclose(f);
	assert_true(size > 0);
	return size;
}

static void check_fixture(const char *tool, const char *path, const char *nm)
{
	/* Both functions have inlined code, and not only: each address is checked. */
	unsigned a = check_inlines(tool, path, path, NULL, nm, "inlfix_outer",
				   nm_size(nm, "inlfix_outer"));
	unsigned b = check_inlines(tool, path, path, NULL, nm, "inlfix_loops",
				   nm_size(nm, "inlfix_loops"));

	assert_true(a > 8 && a < nm_size(nm, "inlfix_outer"));
	assert_true(b > 8 && b < nm_size(nm, "inlfix_loops"));
}

static void test_dwarf_lines__inlined_as_addr2line_reads_them(void **state)
{
	(void)state;
	/* gcc -O2 -g: DWARF 5, DW_AT_ranges in .debug_rnglists by offset */
	check_fixture("addr2line", FIX "inlfix", FIX "inlfix.nm");
	/* gcc -O2 -gdwarf-4: .debug_ranges */
	check_fixture("addr2line", FIX "inlfix-dwarf4", FIX "inlfix-dwarf4.nm");
	/*
	 * clang -O2 -g: strx, addrx, rnglistx.  Against LLVM's reader: binutils 2.40's addr2line
	 * misses the inlined calls whose ranges are a rnglistx (it sees none at 0x125a, say, where
	 * llvm-symbolizer and the DWARF itself, read by hand with readelf, put inl_sq in inl_body).
	 */
	check_fixture("llvm-symbolizer --output-style=GNU", FIX "inlfix-clang",
		      FIX "inlfix-clang.nm");
}

#define DWZ FIX "dwz/"

/* Inlined calls of func of dwz's debug file path when its alternate file is not read: how many
 * levels were left out (every level returned named but the symbol's). */
static uint64_t unnamed_without_alt(const char *path, const char *debug_dir, const char *nm,
				    const char *func)
{
	uint64_t start = nm_addr(nm, func), size = nm_size(nm, func);
	uint64_t unnamed;
	struct dwlines *d;

	assert_int_equal(dwlines__open(&d, path, debug_dir), 0);
	for (uint64_t i = 0; i < size; i++) {
		struct dwlines_frame fr[16];
		unsigned n;

		if (dwlines__inlined(d, start + i, fr, 16, &n))
			continue;
		for (unsigned k = 0; k < n; k++)
			assert_true(k + 1 < n ? fr[k].name != NULL : fr[k].name == NULL);
	}
	unnamed = dwlines__unnamed(d);
	dwlines__free(d);
	return unnamed;
}

static void test_dwarf_lines__inlined_named_from_dwz_alt_file(void **state)
{
	uint64_t size = nm_size(DWZ "dwzfix-a.nm", "dwzfix_a");

	(void)state;
	/*
	 * GNU_ref_alt: the alternate file at the link's path, relative to the debug file's. Against
	 * the DWARF before dwz: binutils 2.40, following the link, names the innermost level by the
	 * symbol when its origin is in the alternate file (dwzfix_a at 0x1140, where the same DWARF
	 * before dwz, and the DIEs read by hand with readelf, give dwz_leaf); the outer levels
	 * agree.
	 */
	assert_true(check_inlines("addr2line", DWZ "dwzfix-a.ref.debug", DWZ "dwzfix-a.debug",
				  FIX "dwz", DWZ "dwzfix-a.nm", "dwzfix_a", size) > 8);
	/* GNU_strp_alt: the names only, in the alternate file's strings (addr2line follows it). */
	assert_true(check_inlines("addr2line", FIX "dwzs/dwzfix-a.debug", FIX "dwzs/dwzfix-a.debug",
				  FIX "dwzs", FIX "dwzs/dwzfix-a.nm", "dwzfix_a",
				  nm_size(FIX "dwzs/dwzfix-a.nm", "dwzfix_a")) > 8);
	/* DWARF 4: the compilation directory is in the alternate file's strings too. */
	assert_true(check_inlines("addr2line", FIX "dwz4/dwzfix-a.ref.debug",
				  FIX "dwz4/dwzfix-a.debug", FIX "dwz4", FIX "dwz4/dwzfix-a.nm",
				  "dwzfix_a", nm_size(FIX "dwz4/dwzfix-a.nm", "dwzfix_a")) > 8);
	/* By build id under the debug directory (the link's path lies outside it: not taken). */
	assert_true(check_inlines("addr2line", DWZ "dwzfix-a.ref.debug", DWZ "dwzfix-a.debug",
				  FIX "dwz-bid", DWZ "dwzfix-a.nm", "dwzfix_a", size) > 8);
	/*
	 * Not found, outside the debug directory, or another build's (dwz-bad: the right DIEs,
	 * which would name every level, under another build id): left out, counted, as with none at
	 * all.
	 */
	for (unsigned i = 0; i < 4; i++) {
		static const char *const dirs[] = {NULL, FIX "nonexistent", FIX "dwz5",
						   FIX "dwz-bad"};
		uint64_t n = unnamed_without_alt(DWZ "dwzfix-a.debug", dirs[i], DWZ "dwzfix-a.nm",
						 "dwzfix_a");

		assert_true(n > 0);
		assert_int_equal(n, unnamed_without_alt(DWZ "dwzfix-a.debug", NULL,
							DWZ "dwzfix-a.nm", "dwzfix_a"));
	}
}

/* DWARF 5's ref_sup4 / strp_sup and .debug_sup (the alternate file without a build-id note):
 * against the same DWARF before dwz, read by addr2line (binutils 2.40 does not read .debug_sup). */
static void test_dwarf_lines__inlined_named_from_debug_sup(void **state)
{
	static const char *const funcs[] = {"dwzfix_a", "dwzfix_b"};

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		const char *nm = i ? DWZ "dwzfix-b.nm" : DWZ "dwzfix-a.nm";
		char ref[128], path[128];
		uint64_t start = nm_addr(nm, funcs[i]), size = nm_size(nm, funcs[i]);
		static struct level lv[1024][8];
		static unsigned nlv[1024];
		unsigned inlined = 0;
		struct dwlines *d;

		snprintf(ref, sizeof(ref), DWZ "dwzfix-%c.ref.debug", 'a' + i);
		snprintf(path, sizeof(path), FIX "dwz5/dwzfix-%c.debug", 'a' + i);
		assert_true(size <= 1024);
		addr2line_inlines("addr2line", ref, start, (unsigned)size, lv, nlv);
		assert_int_equal(dwlines__open(&d, path, FIX "dwz5"), 0);
		for (unsigned a = 0; a < size; a++) {
			struct dwlines_frame fr[16];
			unsigned n;

			if (dwlines__inlined(d, start + a, fr, 16, &n)) {
				assert_int_equal(nlv[a], 1);
				continue;
			}
			inlined++;
			assert_int_equal(n, nlv[a]);
			for (unsigned k = 0; k + 1 < n; k++) {
				assert_string_equal(fr[k].name, lv[a][k].func);
				assert_int_equal(fr[k].line, lv[a][k].line);
			}
		}
		assert_true(inlined > 8);
		assert_int_equal(dwlines__unnamed(d), 0);
		dwlines__free(d);
		/* and without it */
		assert_true(unnamed_without_alt(path, NULL, nm, funcs[i]) > 0);
	}
}

static void test_dwarf_lines__no_dwarf_no_lines(void **state)
{
	struct dwlines *d = (void *)1;

	(void)state;
	assert_int_equal(dwlines__open(&d, FIX "symfix-stripped", NULL), -ENOENT);
	assert_null(d);
	assert_int_equal(dwlines__open(&d, "tests/fixtures/symfix.c", NULL), -ENOEXEC);
	assert_int_equal(dwlines__open(&d, "/nonexistent", NULL), -ENOENT);
	assert_int_equal(dwlines__open(&d, "/dev/zero", NULL), -EINVAL); /* not a regular file */
}

/* The builder thread: a debug file by path and an ELF file by fd, gathered until the first
 * profile wants them (dwbuild__wait), built off the caller's thread and taken as addr2line
 * reads them; a file without DWARF handed back empty; what is queued at
 * free is dropped (ASan: nothing leaks, no fd is left). */
static void test_dwarf_lines__built_on_a_thread(void **state)
{
	struct dwbuild *b;
	struct dwbuild_done *r, *next;
	unsigned seen = 0;
	int fd;

	(void)state;
	assert_int_equal(dwbuild__new(&b, NULL), 0);
	assert_false(dwbuild__ready(b));
	assert_null(dwbuild__take(b));
	assert_int_equal(dwbuild__submit(b, "aa", FIX "symfix-pie.debug", -1), 0);
	fd = open(FIX "symfix-dwarf4", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(dwbuild__submit(b, "bb", NULL, fd), 0);
	assert_int_equal(dwbuild__submit(b, "cc", FIX "symfix-stripped", -1), 0);
	/* Gathered, not built, until a profile wants lines (these take ~1 ms once built). */
	for (int i = 0; i < 20; i++) {
		assert_false(dwbuild__ready(b));
		usleep(10000);
	}
	assert_false(dwbuild__is_open(b));
	dwbuild__wait(b);
	assert_true(dwbuild__is_open(b));
	assert_true(dwbuild__ready(b));
	for (r = dwbuild__take(b); r; r = next) {
		const char *file;
		int line;

		next = r->next;
		if (!strcmp(r->build_id, "cc")) {
			assert_null(r->d);
			assert_int_equal(r->err, -ENOENT);
			seen |= 4;
		} else {
			const char *nm = strcmp(r->build_id, "aa") ? FIX "symfix-dwarf4.nm"
								   : FIX "symfix-pie.nm";

			assert_non_null(r->d);
			assert_int_equal(
				dwlines__lookup(r->d, nm_addr(nm, "symfix_alpha"), &file, &line),
				0);
			assert_true(line > 0);
			seen |= strcmp(r->build_id, "aa") ? 2 : 1;
		}
		dwlines__free(r->d);
		free(r->build_id);
		free(r);
	}
	assert_int_equal(seen, 7);
	assert_false(dwbuild__ready(b));
	/* queued, never taken: freed with the builder */
	for (int i = 0; i < 8; i++)
		assert_int_equal(dwbuild__submit(b, "dd", FIX "symfix-pie.debug", -1), 0);
	dwbuild__free(b);
	/* never started: nothing to join */
	assert_int_equal(dwbuild__new(&b, NULL), 0);
	dwbuild__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf_lines__as_addr2line_reads_them),
		cmocka_unit_test(test_dwarf_lines__no_dwarf_no_lines),
		cmocka_unit_test(test_dwarf_lines__inlined_as_addr2line_reads_them),
		cmocka_unit_test(test_dwarf_lines__inlined_named_from_dwz_alt_file),
		cmocka_unit_test(test_dwarf_lines__inlined_named_from_debug_sup),
		cmocka_unit_test(test_dwarf_lines__built_on_a_thread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
