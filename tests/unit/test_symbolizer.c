// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The symbolizer against a fake /proc (pid/maps, pid/comm, pid/root -> "/") whose mappings point
 * at the fixtures in build/fixtures/, and against live processes: this test itself and a
 * fixture child that dlopen()s a library after it was loaded and then exits.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture_nm.h"

#include "proc/maps.h"
#include "sym/symbolizer.h"
#include "util/hashmap.h"

#define FIX  "build/fixtures/"
#define PID  4242
#define PAGE ((uint64_t)0x1000)

#define PIE_BIAS      0x555555554000ULL
#define LIB_BIAS      0x7f0000000000ULL
#define STRIPPED_BIAS 0x560000000000ULL
#define OVERLAY_BIAS  0x7f3000000000ULL
#define NOTELF_START  0x7f1000000000ULL
#define DELETED_BIAS  0x7f2000000000ULL
#define JIT_START     0x7f4000000000ULL
#define VDSO_START    0x7ff000000000ULL

static struct {
	char root[64];	  /* fake proc root */
	char perfdir[96]; /* perfmap_dir */
	char kallsyms[128];
	char pie[PATH_MAX], nopie[PATH_MAX], lib[PATH_MAX], stripped[PATH_MAX], src[PATH_MAX];
	char pie_build_id[128];
	uint64_t vdso_size, vdso_clock_gettime; /* offset of __vdso_clock_gettime in the image */
} fx;

/* The executable PT_LOAD segment, read with libelf. */
static void exec_segment(const char *path, uint64_t *offset, uint64_t *vaddr, uint64_t *filesz)
{
	int fd = open(path, O_RDONLY);
	bool found = false;
	size_t n;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		gelf_getphdr(elf, (int)i, &ph);
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			*offset = ph.p_offset;
			*vaddr = ph.p_vaddr;
			*filesz = ph.p_filesz;
			found = true;
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(found);
}

/*
 * The name of a frame no symbol covers: path's base name and a file offset (never the address);
 * the layout read from file (path's own contents, or a copy of them).
 */
static void expect_offset_name(const struct sym_result *r, const char *path, const char *file,
			       uint64_t vaddr)
{
	uint64_t off, seg_vaddr, filesz;
	const char *base = strrchr(path, '/');
	char want[PATH_MAX + 32];

	exec_segment(file, &off, &seg_vaddr, &filesz);
	snprintf(want, sizeof(want), "%.*s+0x%" PRIx64, PATH_MAX - 1, base ? base + 1 : path,
		 vaddr - seg_vaddr + off);
	assert_non_null(r->name);
	assert_string_equal(r->name, want);
	assert_string_equal(r->system_name, want);
}

/* A maps line for the executable segment of path loaded with bias; dev/inode as given. */
static void maps_line_ids(FILE *f, const char *path, uint64_t bias, unsigned maj, unsigned min,
			  uint64_t ino, const char *suffix)
{
	uint64_t off, vaddr, filesz, start, end;

	exec_segment(path, &off, &vaddr, &filesz);
	start = bias + (vaddr & ~(PAGE - 1));
	end = bias + ((vaddr + filesz + PAGE - 1) & ~(PAGE - 1));
	fprintf(f, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %" PRIu64 "    %s%s\n",
		start, end, off & ~(PAGE - 1), maj, min, ino, path, suffix);
}

static void maps_line(FILE *f, const char *path, uint64_t bias)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	maps_line_ids(f, path, bias, major(st.st_dev), minor(st.st_dev), st.st_ino, "");
}

static void write_file(const char *path, const char *mode, const char *text)
{
	FILE *f = fopen(path, mode);

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *pid_path(char *buf, uint32_t pid, const char *what)
{
	snprintf(buf, PATH_MAX, "%s/%u%s%s", fx.root, pid, what[0] ? "/" : "", what);
	return buf;
}

/* <root>/<pid>/{comm,root,maps}; the maps file is left open for the caller to fill. */
static FILE *fake_pid(uint32_t pid)
{
	char p[PATH_MAX];
	FILE *f;

	assert_int_equal(mkdir(pid_path(p, pid, ""), 0755), 0);
	write_file(pid_path(p, pid, "comm"), "w", "fixture\n");
	assert_int_equal(symlink("/", pid_path(p, pid, "root")), 0);
	f = fopen(pid_path(p, pid, "maps"), "w");
	assert_non_null(f);
	return f;
}

static void own_vdso(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	const struct maps_entry *e;
	struct maps *m = NULL;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (!base)
		return;
	assert_int_equal(maps__read(&m, "/proc/self/maps"), 0);
	e = maps__find(m, base);
	fx.vdso_size = e->end - e->start;
	maps__free(m);
	/* Where __vdso_clock_gettime sits in the image (its .dynsym value is an offset here). */
	elf = elf_memory((char *)base, fx.vdso_size);
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			gelf_getsym(d, (int)i, &s);
			if (!strcmp(elf_strptr(elf, sh.sh_link, s.st_name), "__vdso_clock_gettime"))
				fx.vdso_clock_gettime = s.st_value;
		}
	}
	elf_end(elf);
}

static int setup(void **state)
{
	char p[PATH_MAX];
	FILE *f;

	assert_non_null(realpath(FIX "symfix-pie", fx.pie));
	assert_non_null(realpath(FIX "symfix-nopie", fx.nopie));
	assert_non_null(realpath(FIX "libsymfix.so", fx.lib));
	assert_non_null(realpath(FIX "symfix-stripped", fx.stripped));
	assert_non_null(realpath("tests/fixtures/symfix.c", fx.src));
	f = fopen(FIX "symfix-pie.buildid", "r");
	assert_non_null(f);
	assert_non_null(fgets(fx.pie_build_id, sizeof(fx.pie_build_id), f));
	fx.pie_build_id[strcspn(fx.pie_build_id, "\n")] = '\0';
	fclose(f);
	own_vdso();

	strcpy(fx.root, "/tmp/symproc.XXXXXX");
	assert_non_null(mkdtemp(fx.root));
	snprintf(fx.perfdir, sizeof(fx.perfdir), "%s/perf", fx.root);
	assert_int_equal(mkdir(fx.perfdir, 0755), 0);
	snprintf(fx.kallsyms, sizeof(fx.kallsyms), "%s/kallsyms", fx.root);
	write_file(fx.kallsyms, "w",
		   "ffffffff81000000 T _text\n"
		   "ffffffff81001000 T do_sys_open\n"
		   "ffffffffc0a01000 t ext4_readdir\t[ext4]\n");

	f = fake_pid(PID);
	maps_line(f, fx.pie, PIE_BIAS);
	maps_line(f, fx.nopie, 0);
	maps_line(f, fx.lib, LIB_BIAS);
	maps_line(f, fx.stripped, STRIPPED_BIAS);
	/* Same path, another (dev, inode): an overlay mount, not a different file. */
	maps_line_ids(f, fx.lib, OVERLAY_BIAS, 0, 0x42, 999999, "");
	/* Deleted, and what the path now names is another file. */
	maps_line_ids(f, fx.pie, DELETED_BIAS, 0, 0x42, 1, " (deleted)");
	{
		struct stat st;

		assert_int_equal(stat(fx.src, &st), 0);
		fprintf(f, "%llx-%llx r-xp 00000000 %02x:%02x %lu    %s\n", NOTELF_START,
			NOTELF_START + PAGE, major(st.st_dev), minor(st.st_dev),
			(unsigned long)st.st_ino, fx.src);
	}
	fprintf(f, "%llx-%llx rwxp 00000000 00:00 0 \n", JIT_START, JIT_START + 0x10000);
	if (fx.vdso_size)
		fprintf(f, "%llx-%llx r-xp 00000000 00:00 0    [vdso]\n", VDSO_START,
			VDSO_START + fx.vdso_size);
	fprintf(f, "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0    [vsyscall]\n");
	fclose(f);

	snprintf(p, sizeof(p), "%s/perf-%d.map", fx.perfdir, PID);
	write_file(p, "w", "7f4000000100 80 jit_one\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.root);
	return system(cmd);
}

static struct symbolizer *new_sym(void)
{
	struct symbolizer_opts opts = {
		.proc_root = fx.root,
		.kallsyms = fx.kallsyms,
		.perfmap_dir = fx.perfdir,
		.debug_dir = "",
	};
	struct symbolizer *s = NULL;

	assert_int_equal(symbolizer__new(&s, &opts), 0);
	return s;
}

static struct sym_result resolve(struct symbolizer *s, uint32_t pid, uint64_t addr)
{
	struct sym_result r;

	assert_int_equal(symbolizer__resolve_user(s, pid, addr, &r), 0);
	return r;
}

static void assert_resolves(struct symbolizer *s, uint32_t pid, uint64_t addr, const char *name,
			    uint64_t sym_addr, const char *path)
{
	struct sym_result r = resolve(s, pid, addr);

	assert_non_null(r.name);
	assert_string_equal(r.name, name);
	assert_int_equal(r.sym_addr, sym_addr);
	assert_non_null(r.map);
	assert_string_equal(r.map->path, path);
}

static void test_symbolizer__resolves_pie_nopie_and_library(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	uint64_t local = nm_addr(FIX "symfix-pie.nm", "symfix_local_helper");
	uint64_t beta = nm_addr(FIX "symfix-nopie.nm", "symfix_beta");
	uint64_t lib = nm_addr(FIX "libsymfix.so.nm", "symfix_lib_only");
	uint64_t off, vaddr, filesz;
	struct sym_result r;

	assert_int_equal(symbolizer__load_pid(s, PID, NULL), 0);
	r = resolve(s, PID, PIE_BIAS + alpha + 3);
	assert_string_equal(r.name, "symfix_alpha");
	assert_string_equal(r.system_name, "symfix_alpha");
	/* Built with -g and not stripped: its own DWARF gives the line, as addr2line reads it. */
	{
		char cmd[8192], want[1024];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "addr2line -e %s 0x%" PRIx64, fx.pie, alpha + 3);
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(want, sizeof(want), p));
		pclose(p);
		want[strcspn(want, " \n")] = '\0';
		assert_non_null(r.file);
		snprintf(cmd, sizeof(cmd), "%s:%d", r.file, r.line);
		assert_string_equal(cmd, want);
		assert_non_null(strstr(r.file, "tests/fixtures/symfix.c"));
	}
	assert_int_equal(r.sym_addr, PIE_BIAS + alpha);
	exec_segment(fx.pie, &off, &vaddr, &filesz);
	assert_string_equal(r.map->path, fx.pie);
	assert_int_equal(r.map->start, PIE_BIAS + (vaddr & ~(PAGE - 1)));
	assert_int_equal(r.map->offset, off & ~(PAGE - 1));
	assert_true(r.map->limit > r.map->start);
	assert_string_equal(r.map->build_id, fx.pie_build_id);
	assert_true(r.map->has_symbols);
	assert_resolves(s, PID, PIE_BIAS + local, "symfix_local_helper", PIE_BIAS + local, fx.pie);
	assert_resolves(s, PID, beta + 7, "symfix_beta", beta, fx.nopie);
	/* The library is based at 0x200000 in its file: the bias is not the mapping start. */
	assert_resolves(s, PID, LIB_BIAS + lib + 1, "symfix_lib_only", LIB_BIAS + lib, fx.lib);
	symbolizer__free(s);
}

static void test_symbolizer__demangles_cxx(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t spin = nm_addr(FIX "symfix-pie.nm", "_ZN6symfix6Widget4spinEi");
	struct sym_result r;

	r = resolve(s, PID, PIE_BIAS + spin + 2); /* loads the pid on first sight */
	assert_string_equal(r.name, "symfix::Widget::spin(int)");
	assert_string_equal(r.system_name, "_ZN6symfix6Widget4spinEi");
	symbolizer__free(s);
}

static void test_symbolizer__stripped_uses_dynsym(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	uint64_t local = nm_addr(FIX "symfix-pie.nm", "symfix_local_helper");
	const uint32_t pid = 5005;
	struct sym_result r;
	FILE *f;

	f = fake_pid(pid);
	maps_line(f, fx.stripped, STRIPPED_BIAS);
	fclose(f);
	assert_resolves(s, pid, STRIPPED_BIAS + alpha, "symfix_alpha", STRIPPED_BIAS + alpha,
			fx.stripped);
	/* Not exported: named by the file offset of its function (its FDE), the same for every
	 * address in it, and kept with its mapping. */
	r = resolve(s, pid, STRIPPED_BIAS + local);
	expect_offset_name(&r, fx.stripped, fx.stripped, local);
	assert_int_equal(r.sym_addr, STRIPPED_BIAS + local);
	r = resolve(s, pid, STRIPPED_BIAS + local + 1);
	expect_offset_name(&r, fx.stripped, fx.stripped, local);
	assert_int_equal(r.sym_addr, STRIPPED_BIAS + local);
	assert_non_null(r.map);
	assert_string_equal(r.map->path, fx.stripped);
	assert_string_equal(r.map->build_id, fx.pie_build_id);
	assert_true(r.map->has_symbols);

	/* Once the unstripped file of the same build is seen, its .symtab serves both. */
	assert_int_equal(symbolizer__load_pid(s, PID, NULL), 0);
	assert_resolves(s, pid, STRIPPED_BIAS + local, "symfix_local_helper", STRIPPED_BIAS + local,
			fx.stripped);
	symbolizer__free(s);
}

static void test_symbolizer__not_elf_deleted_and_overlay(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	uint64_t lib = nm_addr(FIX "libsymfix.so.nm", "symfix_lib_only");
	struct sym_result r;

	/* Not an ELF file: named by the offset of the address in it. */
	r = resolve(s, PID, NOTELF_START + 0x10);
	assert_string_equal(r.name, "symfix.c+0x10");
	assert_string_equal(r.map->path, fx.src);
	assert_string_equal(r.map->build_id, "");
	assert_false(r.map->has_symbols);

	/* The deleted file is gone; what its path names now must not be used: the address's
	 * file offset names it. */
	r = resolve(s, PID, DELETED_BIAS + alpha);
	expect_offset_name(&r, fx.pie, fx.pie, alpha);
	assert_string_equal(r.map->path, fx.pie);
	assert_false(r.map->has_symbols);

	/* A (dev, inode) mismatch alone (overlayfs) still uses the file at that path. */
	assert_resolves(s, PID, OVERLAY_BIAS + lib, "symfix_lib_only", OVERLAY_BIAS + lib, fx.lib);
	symbolizer__free(s);
}

static void test_symbolizer__vdso_and_vsyscall(void **state)
{
	struct symbolizer *s = new_sym();
	struct sym_result r;

	if (!fx.vdso_size || !fx.vdso_clock_gettime)
		skip();
	r = resolve(s, PID, VDSO_START + fx.vdso_clock_gettime + 1);
	assert_non_null(r.name);
	assert_true(strcmp(r.name, "__vdso_clock_gettime") == 0 ||
		    strcmp(r.name, "clock_gettime") == 0);
	assert_int_equal(r.sym_addr, VDSO_START + fx.vdso_clock_gettime);
	assert_string_equal(r.map->path, "[vdso]");
	r = resolve(s, PID, 0xffffffffff600400);
	assert_null(r.name);
	assert_string_equal(r.map->path, "[vsyscall]");
	symbolizer__free(s);
}

static void test_symbolizer__jit_frames_from_perf_map(void **state)
{
	struct symbolizer *s = new_sym();
	char p[PATH_MAX];
	struct sym_result r;

	assert_resolves(s, PID, JIT_START + 0x110, "jit_one", JIT_START + 0x100, "");
	r = resolve(s, PID, JIT_START + 0x110);
	assert_true(r.map->has_symbols);

	/* Compiled after we read the map: a miss reads it again... */
	snprintf(p, sizeof(p), "%s/perf-%d.map", fx.perfdir, PID);
	write_file(p, "a", "7f4000000200 40 jit_two\n");
	assert_resolves(s, PID, JIT_START + 0x210, "jit_two", JIT_START + 0x200, "");
	assert_resolves(s, PID, JIT_START + 0x110, "jit_one", JIT_START + 0x100, "");
	/* ...at most once per 64 resolves. */
	write_file(p, "a", "7f4000000300 40 jit_three\n");
	assert_null(resolve(s, PID, JIT_START + 0x310).name);
	for (int i = 0; i < 64; i++)
		resolve(s, PID, JIT_START + 0x110);
	assert_resolves(s, PID, JIT_START + 0x310, "jit_three", JIT_START + 0x300, "");
	/* JIT code the map does not name: kept, in its anonymous mapping. */
	r = resolve(s, PID, JIT_START + 0x8000);
	assert_null(r.name);
	assert_non_null(r.map);
	assert_string_equal(r.map->path, "");
	/* Truncate back for the other tests. */
	write_file(p, "w", "7f4000000100 80 jit_one\n");
	symbolizer__free(s);
}

static void test_symbolizer__rereads_maps_for_new_mappings(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	uint64_t lib = nm_addr(FIX "libsymfix.so.nm", "symfix_lib_only");
	const uint64_t second = 0x7e0000000000ULL, third = 0x7d0000000000ULL;
	const uint32_t pid = 5001;
	char p[PATH_MAX];
	struct sym_result r;
	FILE *f;

	f = fake_pid(pid);
	maps_line(f, fx.pie, PIE_BIAS);
	fclose(f);
	assert_int_equal(symbolizer__load_pid(s, pid, NULL), 0);
	assert_non_null(resolve(s, pid, PIE_BIAS + alpha).name);

	/* dlopen() after the load: the first miss re-reads the maps. */
	f = fopen(pid_path(p, pid, "maps"), "a");
	maps_line(f, fx.lib, second);
	fclose(f);
	assert_resolves(s, pid, second + lib, "symfix_lib_only", second + lib, fx.lib);

	/* Another one right away: re-reads are rate-limited... */
	f = fopen(pid_path(p, pid, "maps"), "a");
	maps_line(f, fx.lib, third);
	fclose(f);
	assert_null(resolve(s, pid, third + lib).map);
	/* ...to one per 64 resolves after one that found something. */
	for (int i = 0; i < 64; i++)
		assert_non_null(resolve(s, pid, PIE_BIAS + alpha).name);
	assert_resolves(s, pid, third + lib, "symfix_lib_only", third + lib, fx.lib);

	/* An address still unknown after a re-read is not re-read for again. */
	for (int i = 0; i < 64; i++)
		resolve(s, pid, PIE_BIAS + alpha);
	r = resolve(s, pid, 0x10000 + lib);
	assert_null(r.map);
	f = fopen(pid_path(p, pid, "maps"), "a");
	maps_line(f, fx.lib, 0x10000);
	fclose(f);
	for (int i = 0; i < 64; i++)
		resolve(s, pid, PIE_BIAS + alpha);
	assert_null(resolve(s, pid, 0x10000 + lib).map);
	/* A re-read that found nothing doubled the interval, to 128 resolves. */
	assert_null(resolve(s, pid, 0x10000 + lib + 1).map);
	for (int i = 0; i < 64; i++)
		resolve(s, pid, PIE_BIAS + alpha);
	assert_resolves(s, pid, 0x10000 + lib + 1, "symfix_lib_only", 0x10000 + lib, fx.lib);
	/* Now in the maps, the remembered address resolves without a re-read. */
	assert_resolves(s, pid, 0x10000 + lib, "symfix_lib_only", 0x10000 + lib, fx.lib);
	symbolizer__free(s);
}

static void test_symbolizer__survives_process_exit(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	const uint32_t pid = 5002;
	char p[PATH_MAX], q[PATH_MAX];
	FILE *f;

	f = fake_pid(pid);
	maps_line(f, fx.pie, PIE_BIAS);
	fclose(f);
	assert_int_equal(symbolizer__load_pid(s, pid, NULL), 0);
	/* The process exits: its /proc directory goes away. */
	snprintf(q, sizeof(q), "%s/gone-%u", fx.root, pid);
	assert_int_equal(rename(pid_path(p, pid, ""), q), 0);
	assert_resolves(s, pid, PIE_BIAS + alpha, "symfix_alpha", PIE_BIAS + alpha, fx.pie);
	assert_int_equal(symbolizer__load_pid(s, pid, NULL), -ESRCH);
	assert_resolves(s, pid, PIE_BIAS + alpha, "symfix_alpha", PIE_BIAS + alpha, fx.pie);
	/* Unknown addresses of a dead process: no mapping, no error. */
	assert_null(resolve(s, pid, 0x1234).map);
	symbolizer__free(s);
}

static void test_symbolizer__unknown_pid(void **state)
{
	struct symbolizer *s = new_sym();
	struct sym_result r;

	assert_int_equal(symbolizer__load_pid(s, 99999, NULL), -ESRCH);
	r = resolve(s, 99999, 0x401000);
	assert_null(r.map);
	assert_null(r.name);
	assert_null(r.system_name);
	assert_int_equal(r.sym_addr, 0);
	/* Never loaded at all: same answer. */
	assert_null(resolve(s, 99998, 0x401000).map);
	symbolizer__free(s);
}

static void test_symbolizer__forget_pid_after_exec(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	uint64_t lib = nm_addr(FIX "libsymfix.so.nm", "symfix_lib_only");
	const uint32_t pid = 5003;
	const struct sym_mapping *old;
	char p[PATH_MAX];
	FILE *f;

	f = fake_pid(pid);
	maps_line(f, fx.pie, PIE_BIAS);
	fclose(f);
	old = resolve(s, pid, PIE_BIAS + alpha).map;
	assert_non_null(old);

	/* exec: a new image at the same address. */
	f = fopen(pid_path(p, pid, "maps"), "w");
	maps_line(f, fx.lib, PIE_BIAS);
	fclose(f);
	symbolizer__forget_pid(s, pid);
	assert_resolves(s, pid, PIE_BIAS + lib, "symfix_lib_only", PIE_BIAS + lib, fx.lib);
	/* Results handed out before stay valid (until a sweep that does not keep them). */
	assert_string_equal(old->path, fx.pie);
	symbolizer__free(s);
}

static void test_symbolizer__mappings_are_shared(void **state)
{
	struct symbolizer *s = new_sym();
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	uint64_t beta = nm_addr(FIX "symfix-pie.nm", "symfix_beta");
	const uint32_t pid = 5004;
	const struct sym_mapping *m;
	FILE *f;

	f = fake_pid(pid);
	maps_line(f, fx.pie, PIE_BIAS);
	fclose(f);
	m = resolve(s, PID, PIE_BIAS + alpha).map;
	assert_ptr_equal(m, resolve(s, PID, PIE_BIAS + beta).map);
	/* The same file at the same place in another process: one mapping. */
	assert_ptr_equal(m, resolve(s, pid, PIE_BIAS + beta).map);
	assert_ptr_not_equal(resolve(s, PID, PIE_BIAS + alpha).map,
			     resolve(s, PID, STRIPPED_BIAS + alpha).map);
	symbolizer__free(s);
}

static void test_symbolizer__kernel_addresses(void **state)
{
	struct symbolizer *s = new_sym();
	struct symbolizer_opts hidden = {.proc_root = fx.root, .kallsyms = fx.kallsyms};
	char p[PATH_MAX];
	struct sym_result r;

	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff81001010, &r), 0);
	assert_string_equal(r.name, "do_sys_open");
	assert_string_equal(r.system_name, "do_sys_open");
	assert_int_equal(r.sym_addr, 0xffffffff81001000);
	assert_string_equal(r.map->path, "[kernel.kallsyms]");
	assert_true(r.map->has_symbols);
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffffc0a01004, &r), 0);
	assert_string_equal(r.name, "ext4_readdir");
	assert_int_equal(symbolizer__resolve_kernel(s, 0x1000, &r), 0);
	assert_null(r.name);
	assert_non_null(r.map);
	symbolizer__free(s);

	/* Addresses hidden from us: frames stay, unnamed, in the kernel mapping. */
	snprintf(p, sizeof(p), "%s/kallsyms-hidden", fx.root);
	write_file(p, "w", "0000000000000000 T _text\n0000000000000000 T do_sys_open\n");
	hidden.kallsyms = p;
	assert_int_equal(symbolizer__new(&s, &hidden), 0);
	assert_int_equal(symbolizer__resolve_kernel(s, 0xffffffff81001010, &r), 0);
	assert_null(r.name);
	assert_string_equal(r.map->path, "[kernel.kallsyms]");
	assert_false(r.map->has_symbols);
	symbolizer__free(s);
}

static __attribute__((noinline)) int self_marker(int x)
{
	return x * 7 + 1;
}

/* The live test process through the real /proc, with default options. */
static void test_symbolizer__live_self(void **state)
{
	int (*volatile fn)(int) = self_marker;
	char exe[PATH_MAX];
	struct symbolizer *s = NULL;
	struct sym_result r;
	void *libc, *libc_malloc;
	ssize_t n;

	assert_int_equal(fn(1), 8);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(symbolizer__new(&s, NULL), 0);
	assert_int_equal(symbolizer__load_pid(s, (uint32_t)getpid(), NULL), 0);
	r = resolve(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)self_marker + 1);
	assert_non_null(r.name);
	assert_string_equal(r.name, "self_marker");
	assert_int_equal(r.sym_addr, (uint64_t)(uintptr_t)self_marker);
	assert_string_equal(r.map->path, exe);

	/* libc's own malloc (ours is AddressSanitizer's interposer). */
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	libc_malloc = dlsym(libc, "malloc");
	assert_non_null(libc_malloc);
	r = resolve(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)libc_malloc);
	assert_non_null(r.name);
	assert_string_equal(r.name, "malloc");
	assert_int_equal(r.sym_addr, (uint64_t)(uintptr_t)libc_malloc);
	assert_non_null(strstr(r.map->path, "libc.so.6"));
	assert_true(strlen(r.map->build_id) == 40);
	dlclose(libc);
	symbolizer__free(s);
}

/* A live child that dlopen()s a library after we loaded it, and exits before we are done. */
static void test_symbolizer__live_child_dlopen_and_exit(void **state)
{
	unsigned long alpha, beta, local, gamma, lib;
	int to_child[2], from_child[2], status;
	struct symbolizer *s = NULL;
	char line[256];
	FILE *in;
	pid_t pid;

	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(from_child), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(to_child[0], 0);
		dup2(from_child[1], 1);
		close(to_child[1]);
		close(from_child[0]);
		execl(fx.pie, fx.pie, "--serve", fx.lib, (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	in = fdopen(from_child[0], "r");
	assert_non_null(in);
	assert_non_null(fgets(line, sizeof(line), in));
	assert_int_equal(sscanf(line, "%lx %lx %lx %lx", &alpha, &beta, &local, &gamma), 4);

	assert_int_equal(symbolizer__new(&s, &(struct symbolizer_opts){.debug_dir = ""}), 0);
	assert_int_equal(symbolizer__load_pid(s, (uint32_t)pid, NULL), 0);
	assert_resolves(s, (uint32_t)pid, alpha + 1, "symfix_alpha", alpha, fx.pie);
	assert_resolves(s, (uint32_t)pid, local, "symfix_local_helper", local, fx.pie);

	assert_int_equal(write(to_child[1], "\n", 1), 1);
	assert_non_null(fgets(line, sizeof(line), in));
	assert_int_equal(sscanf(line, "%lx", &lib), 1);
	assert_true(lib != 0);
	assert_resolves(s, (uint32_t)pid, lib + 1, "symfix_lib_only", lib, fx.lib);

	assert_int_equal(write(to_child[1], "\n", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fclose(in);
	close(to_child[1]);

	assert_int_equal(symbolizer__load_pid(s, (uint32_t)pid, NULL), -ESRCH);
	assert_resolves(s, (uint32_t)pid, gamma, "symfix_gamma", gamma, fx.pie);
	assert_resolves(s, (uint32_t)pid, lib, "symfix_lib_only", lib, fx.lib);
	symbolizer__free(s);
}

/* Four libraries this test process maps, as a fake process maps them (one per bias, in order). */
#define NLIBS 4
static const char *const lib_fns[NLIBS] = {"zlibVersion", "elf_version", "libbpf_major_version",
					   "curl_version"};
static struct {
	char path[PATH_MAX];
	uint64_t bias, vaddr;
} libs[NLIBS];

static uint64_t lib_addr(int i)
{
	return libs[i].bias + libs[i].vaddr;
}

/* pid maps the four libraries at increasing addresses, so load_pid loads them in that order. */
static void fake_libs_pid(uint32_t pid)
{
	FILE *f;

	for (int i = 0; i < NLIBS; i++) {
		void *fn = dlsym(RTLD_DEFAULT, lib_fns[i]);
		Dl_info info;

		assert_non_null(fn);
		assert_int_not_equal(dladdr(fn, &info), 0);
		assert_non_null(realpath(info.dli_fname, libs[i].path));
		libs[i].vaddr = (uint64_t)(uintptr_t)fn - (uint64_t)(uintptr_t)info.dli_fbase;
		libs[i].bias = 0x7e1000000000ULL + (uint64_t)i * 0x1000000000ULL;
	}
	f = fake_pid(pid);
	for (int i = 0; i < NLIBS; i++)
		maps_line(f, libs[i].path, libs[i].bias);
	fclose(f);
}

static struct symbolizer *new_capped(size_t max_files, uint64_t max_file_bytes)
{
	struct symbolizer_opts opts = {
		.proc_root = fx.root,
		.kallsyms = fx.kallsyms,
		.perfmap_dir = fx.perfdir,
		.debug_dir = "",
		.max_files = max_files,
		.max_file_bytes = max_file_bytes,
	};
	struct symbolizer *s = NULL;

	assert_int_equal(symbolizer__new(&s, &opts), 0);
	return s;
}

static void assert_files(struct symbolizer *s, size_t loaded, uint64_t evicted)
{
	struct symbolizer_usage u;

	symbolizer__usage(s, &u);
	assert_int_equal(u.files_loaded, loaded);
	assert_int_equal(symbolizer__stats(s)->files_evicted, evicted);
}

static void test_symbolizer__lru_keeps_at_most_max_files(void **state)
{
	const uint32_t pid = 5010;
	struct symbolizer *s;
	struct symbolizer_usage u;
	struct sym_result r, first;

	fake_libs_pid(pid);
	s = new_capped(2, 0);
	/* Loading opens all four in turn: the first two go as the last two come. */
	assert_int_equal(symbolizer__load_pid(s, pid, NULL), 0);
	assert_files(s, 2, 2);
	symbolizer__usage(s, &u);
	assert_int_equal(u.file_records, NLIBS); /* the process's maps still name all four */
	assert_true(u.file_bytes > 0);

	/* Evicted (0, 1) are opened again, each evicting the least recently used. */
	first = resolve(s, pid, lib_addr(0));
	assert_non_null(first.name);
	assert_string_equal(first.name, lib_fns[0]);
	assert_string_equal(first.map->path, libs[0].path);
	assert_files(s, 2, 3);
	for (int i = 1; i < NLIBS; i++) {
		r = resolve(s, pid, lib_addr(i));
		assert_non_null(r.name);
		assert_string_equal(r.name, lib_fns[i]);
		assert_string_equal(r.map->path, libs[i].path);
		assert_int_equal(r.sym_addr, lib_addr(i));
		assert_files(s, 2, 3 + (uint64_t)i);
	}
	/* Library 0 is unloaded now; what it resolved to is still readable. */
	assert_string_equal(first.name, lib_fns[0]);
	assert_string_equal(first.system_name, lib_fns[0]);
	assert_string_equal(first.map->path, libs[0].path);
	assert_int_equal(strlen(first.map->build_id), 40);

	/* Opened again: the same name, the same strings, the same mapping record. */
	r = resolve(s, pid, lib_addr(0));
	assert_ptr_equal(r.name, first.name);
	assert_ptr_equal(r.map, first.map);
	assert_int_equal(r.sym_addr, lib_addr(0));
	assert_files(s, 2, 7); /* loaded: 0 and 3 */

	/* Least recently *used*: resolving 3 makes 0 the one to go when 1 comes back. */
	assert_string_equal(resolve(s, pid, lib_addr(3)).name, lib_fns[3]);
	assert_files(s, 2, 7);
	assert_string_equal(resolve(s, pid, lib_addr(1)).name, lib_fns[1]);
	assert_files(s, 2, 8);
	assert_string_equal(resolve(s, pid, lib_addr(3)).name, lib_fns[3]);
	assert_files(s, 2, 8);
	assert_int_equal(symbolizer__stats(s)->files_refused, 0);
	symbolizer__free(s);
}

static void test_symbolizer__lru_caps_symbol_bytes(void **state)
{
	const uint32_t pid = 5012;
	struct symbolizer_usage u;
	struct symbolizer *s;

	fake_libs_pid(pid);
	/* One byte: every file is over it, so only the one in use stays. */
	s = new_capped(0, 1);
	assert_int_equal(symbolizer__load_pid(s, pid, NULL), 0);
	assert_files(s, 1, NLIBS - 1);
	for (int i = 0; i < NLIBS; i++) {
		assert_string_equal(resolve(s, pid, lib_addr(i)).name, lib_fns[i]);
		symbolizer__usage(s, &u);
		assert_int_equal(u.files_loaded, 1);
		assert_true(u.file_bytes > 1);
	}
	/* Library 3 was the one loaded; each of the four came back, evicting the one before. */
	assert_files(s, 1, NLIBS - 1 + NLIBS);
	symbolizer__free(s);
}

/* An evicted file that can no longer be opened: the frame keeps its mapping, named by offset. */
static void test_symbolizer__evicted_file_gone_keeps_its_mapping(void **state)
{
	uint64_t lib = nm_addr(FIX "libsymfix.so.nm", "symfix_lib_only");
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	const uint32_t pid = 5011;
	char copy[PATH_MAX], cmd[2 * PATH_MAX + 16];
	struct sym_result before, after;
	struct symbolizer *s;
	FILE *f;

	snprintf(copy, sizeof(copy), "%s/libcopy.so", fx.root);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fx.lib, copy);
	assert_int_equal(system(cmd), 0);
	f = fake_pid(pid);
	maps_line(f, fx.pie, PIE_BIAS);
	maps_line(f, copy, LIB_BIAS);
	fclose(f);
	s = new_capped(1, 0);
	before = resolve(s, pid, LIB_BIAS + lib);
	assert_string_equal(before.name, "symfix_lib_only");
	assert_true(before.map->has_symbols);
	assert_string_equal(resolve(s, pid, PIE_BIAS + alpha).name, "symfix_alpha");
	assert_files(s, 1, 2); /* the pie at load, then the copy for the pie */
	assert_int_equal(unlink(copy), 0);

	/* Gone: named by the address's file offset (its layout is the library's it copies). */
	after = resolve(s, pid, LIB_BIAS + lib);
	expect_offset_name(&after, copy, fx.lib, lib);
	assert_ptr_equal(after.map, before.map); /* same record: has_symbols as it was */
	assert_string_equal(before.name, "symfix_lib_only");
	/* Tried once per load of the maps, not at every frame. */
	after = resolve(s, pid, LIB_BIAS + lib + 1);
	expect_offset_name(&after, copy, fx.lib, lib + 1);
	assert_files(s, 1, 2);
	symbolizer__free(s);
}

/* The test process itself, through the real /proc: evicted files come back via map_files. */
static void test_symbolizer__live_self_reloads_after_eviction(void **state)
{
	int (*volatile fn)(int) = self_marker;
	struct symbolizer *s = NULL;
	struct sym_result mine, theirs, again;
	uint64_t evicted;
	void *libc, *libc_malloc;

	assert_int_equal(fn(2), 15);
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	libc_malloc = dlsym(libc, "malloc");
	assert_non_null(libc_malloc);
	assert_int_equal(
		symbolizer__new(&s, &(struct symbolizer_opts){.debug_dir = "", .max_files = 1}), 0);
	assert_int_equal(symbolizer__load_pid(s, (uint32_t)getpid(), NULL), 0);
	/* The executable (lowest address) was loaded first and evicted since. */
	evicted = symbolizer__stats(s)->files_evicted;
	assert_true(evicted > 0);
	assert_files(s, 1, evicted);
	mine = resolve(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)self_marker + 1);
	assert_non_null(mine.name);
	assert_string_equal(mine.name, "self_marker");
	assert_files(s, 1, evicted + 1);
	theirs = resolve(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)libc_malloc);
	assert_non_null(theirs.name);
	assert_string_equal(theirs.name, "malloc");
	assert_files(s, 1, evicted + 2);
	assert_string_equal(mine.name, "self_marker");
	again = resolve(s, (uint32_t)getpid(), (uint64_t)(uintptr_t)self_marker + 1);
	assert_ptr_equal(again.name, mine.name);
	assert_ptr_equal(again.map, mine.map);
	assert_files(s, 1, evicted + 3);
	dlclose(libc);
	symbolizer__free(s);
}

static struct hashmap *new_used(void)
{
	struct hashmap *h = NULL;

	assert_int_equal(hashmap__new(&h, sizeof(const void *), 0), 0);
	return h;
}

static void use(struct hashmap *used, const void *ptr)
{
	void *v;

	assert_int_equal(hashmap__upsert(used, &v, &ptr, NULL), 0);
}

static void test_symbolizer__sweep_frees_what_no_result_uses(void **state)
{
	uint64_t spin = nm_addr(FIX "symfix-pie.nm", "_ZN6symfix6Widget4spinEi");
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	struct hashmap *used = new_used(), *none = new_used();
	struct symbolizer *s = new_sym();
	struct sym_result cxx, c, jit, again;
	struct symbolizer_usage u;

	symbolizer__usage(s, &u);
	assert_int_equal(u.strings, 0);
	cxx = resolve(s, PID, PIE_BIAS + spin + 2);
	assert_string_equal(cxx.name, "symfix::Widget::spin(int)");
	c = resolve(s, PID, PIE_BIAS + alpha);
	assert_ptr_equal(c.map, cxx.map);
	jit = resolve(s, PID, JIT_START + 0x110);
	assert_string_equal(jit.name, "jit_one");
	assert_ptr_not_equal(jit.map, cxx.map);
	symbolizer__usage(s, &u);
	assert_int_equal(u.demangled, 1);
	assert_int_equal(u.procs, 1);

	/* The process lives: only what results hold that nobody uses goes. */
	use(used, cxx.name);
	use(used, cxx.map);
	assert_int_equal(symbolizer__sweep(s, used), 0);
	symbolizer__usage(s, &u);
	assert_int_equal(u.mappings, 1); /* the JIT mapping went */
	assert_int_equal(u.demangled, 1);
	assert_string_equal(cxx.name, "symfix::Widget::spin(int)");
	assert_string_equal(cxx.map->path, fx.pie);
	assert_string_equal(cxx.map->build_id, fx.pie_build_id);

	/* Gone: its paths and comm go too.  Left: the display name, the raw name its cache entry
	 * needs, the mapping's path and build id. */
	symbolizer__drop_pid(s, PID);
	assert_int_equal(symbolizer__sweep(s, used), 0);
	symbolizer__usage(s, &u);
	assert_int_equal(u.procs, 0);
	assert_int_equal(u.strings, 4);
	assert_int_equal(u.string_bytes, sizeof("symfix::Widget::spin(int)") +
						 sizeof("_ZN6symfix6Widget4spinEi") +
						 strlen(fx.pie) + 1 + strlen(fx.pie_build_id) + 1);
	assert_int_equal(u.mappings, 1);
	/* Every record left is a loaded file kept for the next process (the rest went). */
	assert_int_equal(u.file_records, u.files_loaded);

	/* Seen again: the same pointers (the pool and the mapping kept them). */
	again = resolve(s, PID, PIE_BIAS + spin + 2);
	assert_ptr_equal(again.name, cxx.name);
	assert_ptr_equal(again.map, cxx.map);

	/* Nothing used, no process: the pool, the mappings and the cache are empty. */
	symbolizer__drop_pid(s, PID);
	assert_int_equal(symbolizer__sweep(s, none), 0);
	symbolizer__usage(s, &u);
	assert_int_equal(u.strings, 0);
	assert_int_equal(u.string_bytes, 0);
	assert_int_equal(u.mappings, 0);
	assert_int_equal(u.demangled, 0);
	assert_int_equal(u.procs, 0);
	assert_int_equal(u.file_records, u.files_loaded);
	/* And it starts again from scratch. */
	assert_resolves(s, PID, PIE_BIAS + alpha, "symfix_alpha", PIE_BIAS + alpha, fx.pie);
	hashmap__free(used);
	hashmap__free(none);
	symbolizer__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbolizer__resolves_pie_nopie_and_library),
		cmocka_unit_test(test_symbolizer__demangles_cxx),
		cmocka_unit_test(test_symbolizer__stripped_uses_dynsym),
		cmocka_unit_test(test_symbolizer__not_elf_deleted_and_overlay),
		cmocka_unit_test(test_symbolizer__vdso_and_vsyscall),
		cmocka_unit_test(test_symbolizer__jit_frames_from_perf_map),
		cmocka_unit_test(test_symbolizer__rereads_maps_for_new_mappings),
		cmocka_unit_test(test_symbolizer__survives_process_exit),
		cmocka_unit_test(test_symbolizer__unknown_pid),
		cmocka_unit_test(test_symbolizer__forget_pid_after_exec),
		cmocka_unit_test(test_symbolizer__mappings_are_shared),
		cmocka_unit_test(test_symbolizer__kernel_addresses),
		cmocka_unit_test(test_symbolizer__live_self),
		cmocka_unit_test(test_symbolizer__live_child_dlopen_and_exit),
		cmocka_unit_test(test_symbolizer__lru_keeps_at_most_max_files),
		cmocka_unit_test(test_symbolizer__lru_caps_symbol_bytes),
		cmocka_unit_test(test_symbolizer__evicted_file_gone_keeps_its_mapping),
		cmocka_unit_test(test_symbolizer__live_self_reloads_after_eviction),
		cmocka_unit_test(test_symbolizer__sweep_frees_what_no_result_uses),
	};

	return cmocka_run_group_tests_name("symbolizer", tests, setup, teardown);
}
