// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Against the fixtures the Makefile builds in build/fixtures/ from tests/fixtures/symfix.c;
 * expected addresses come from nm's output (symfix-*.nm), segments and section bytes from
 * libelf directly, so the code under test is not its own oracle.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sym/elf_file.h"
#include "proc/maps.h"

#define FIX "build/fixtures/"

static const struct elf_file_opts no_debug = {.debug_dir = ""};

/* nm -S --defined-only: "addr [size] type name". */
static bool nm_lookup(const char *nm_path, const char *name, uint64_t *addr, uint64_t *size)
{
	char line[512], a[32], b[32], c[256], d[256];
	bool found = false;
	FILE *f = fopen(nm_path, "r");

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%31s %31s %255s %255s", a, b, c, d);

		if (n == 4 && strcmp(d, name) == 0) {
			*addr = strtoull(a, NULL, 16);
			*size = strtoull(b, NULL, 16);
			found = true;
		} else if (n == 3 && strcmp(c, name) == 0) {
			*addr = strtoull(a, NULL, 16);
			*size = 0;
			found = true;
		}
	}
	fclose(f);
	return found;
}

static uint64_t nm_addr(const char *nm_path, const char *name)
{
	uint64_t addr = 0, size;

	assert_true(nm_lookup(nm_path, name, &addr, &size));
	return addr;
}

struct phdr {
	uint64_t offset, vaddr, filesz;
};

/* The PT_LOAD segment holding vaddr, read with libelf. */
static struct phdr segment_of(const char *path, uint64_t vaddr)
{
	struct phdr out = {0};
	size_t n;
	int fd = open(path, O_RDONLY);
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz)
			out = (struct phdr){ph.p_offset, ph.p_vaddr, ph.p_filesz};
	}
	elf_end(elf);
	close(fd);
	assert_true(out.filesz != 0);
	return out;
}

/* Bytes at vaddr as libelf gives them through the section that holds them. */
static void section_bytes(const char *path, uint64_t vaddr, void *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	bool done = false;
	int fd = open(path, O_RDONLY);
	Elf *elf;

	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (!done && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr + len > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		memcpy(buf, (char *)d->d_buf + (vaddr - sh.sh_addr), len);
		done = true;
	}
	elf_end(elf);
	close(fd);
	assert_true(done);
}

static struct elf_file *open_ok(const char *path, const struct elf_file_opts *opts)
{
	struct elf_file *ef = NULL;

	assert_int_equal(elf_file__open(&ef, path, opts), 0);
	return ef;
}

static void assert_symbol(const struct elf_file *ef, uint64_t vaddr, const char *name,
			  uint64_t start)
{
	const struct elf_sym *s = elf_file__lookup(ef, vaddr);

	assert_non_null(s);
	assert_string_equal(s->name, name);
	assert_int_equal(s->addr, start);
}

/* A maps line for the segment holding vaddr, loaded with bias (runtime = vaddr + bias). */
static struct maps *synthetic_maps(const char *path, uint64_t bias, uint64_t vaddr)
{
	struct phdr ph = segment_of(path, vaddr);
	uint64_t page = 0x1000, start = bias + (ph.vaddr & ~(page - 1));
	uint64_t end = bias + ((ph.vaddr + ph.filesz + page - 1) & ~(page - 1));
	char line[256];
	struct maps *m = NULL;
	FILE *f;

	snprintf(line, sizeof(line), "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " fd:01 4242 %s\n",
		 start, end, ph.offset & ~(page - 1), path);
	f = fmemopen(line, strlen(line), "r");
	assert_int_equal(maps__parse(&m, f), 0);
	fclose(f);
	assert_int_equal(m->count, 1);
	return m;
}

static void test_elf_file__symtab_matches_nm(void **state)
{
	static const char *const names[] = {"symfix_alpha",
					    "symfix_beta",
					    "symfix_gamma",
					    "symfix_local_helper",
					    "_ZN6symfix6Widget4spinEi",
					    "symfix_cxx_entry",
					    "main"};
	struct elf_file *ef = open_ok(FIX "symfix-pie", &no_debug);

	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_SYMTAB);
	assert_true(elf_file__has_symbols(ef));
	assert_int_equal(elf_file__type(ef), ET_DYN);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct elf_sym *s;
		uint64_t addr, size;

		assert_true(nm_lookup(FIX "symfix-pie.nm", names[i], &addr, &size));
		assert_true(size > 0);
		assert_symbol(ef, addr, names[i], addr);
		s = elf_file__lookup(ef, addr + size - 1);
		assert_string_equal(s->name, names[i]);
		assert_int_equal(s->size, size);
	}
	elf_file__free(ef);
}

/* Aliases at one address: the exported name with the fewest underscores, weak or not. */
static void test_elf_file__alias_choice(void **state)
{
	static const char *const files[] = {FIX "symfix-pie", FIX "symfix-stripped"};
	uint64_t impl = nm_addr(FIX "symfix-pie.nm", "__symfix_impl");

	assert_int_equal(nm_addr(FIX "symfix-pie.nm", "symfix_public"), impl);
	for (size_t i = 0; i < 2; i++) {
		struct elf_file *ef = open_ok(files[i], &no_debug);
		struct elf_func fn;

		assert_symbol(ef, impl + 1, "symfix_public", impl);
		/* Each name is still found for attaching. */
		assert_int_equal(elf_file__find_symbol(ef, &fn, "__symfix_impl"), 0);
		assert_int_equal(fn.vaddr, impl);
		elf_file__free(ef);
	}
}

static void test_elf_file__lookup_outside_functions(void **state)
{
	struct elf_file *ef = open_ok(FIX "symfix-pie", &no_debug);

	assert_null(elf_file__lookup(ef, 0));
	assert_null(elf_file__lookup(ef, nm_addr(FIX "symfix-pie.nm", "symfix_sink")));
	assert_null(elf_file__lookup(ef, UINT64_MAX));
	elf_file__free(ef);
}

/* Size-0 symbols (hand-written assembly) extend to the next symbol; untyped ones count. */
static void test_elf_file__size_zero_symbols(void **state)
{
	struct elf_file *ef = open_ok(FIX "symfix-pie", &no_debug);
	uint64_t nosize = nm_addr(FIX "symfix-pie.nm", "symfix_asm_nosize");
	uint64_t notype = nm_addr(FIX "symfix-pie.nm", "symfix_asm_notype");
	const struct elf_sym *s;
	struct elf_func fn;

	s = elf_file__lookup(ef, notype - 1);
	assert_string_equal(s->name, "symfix_asm_nosize");
	assert_int_equal(s->size, notype - nosize);
	assert_symbol(ef, notype, "symfix_asm_notype", notype);
	/* find_symbol is for functions: an untyped label is not offered to attach to. */
	assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_asm_nosize"), 0);
	assert_int_equal(fn.size, 0);
	assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_asm_notype"), -ENOENT);
	elf_file__free(ef);
}

static void read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, (int)size, f));
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void test_elf_file__build_id_matches_readelf(void **state)
{
	static const char *const same[] = {FIX "symfix-pie", FIX "symfix-stripped",
					   FIX "symfix-pie.debug", FIX "symfix-debuglink"};
	char want[128];

	read_text(FIX "symfix-pie.buildid", want, sizeof(want));
	assert_int_equal(strlen(want), 40);
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		struct elf_file *ef = open_ok(same[i], &no_debug);

		assert_string_equal(elf_file__build_id(ef), want);
		elf_file__free(ef);
	}
}

static void test_elf_file__pie_vaddr(void **state)
{
	const char *path = FIX "symfix-pie";
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha"), bias = 0x55a4c3e00000, v;
	struct elf_file *ef = open_ok(path, &no_debug);
	struct maps *m = synthetic_maps(path, bias, alpha);
	const struct maps_entry *e = maps__find(m, bias + alpha + 5);

	assert_non_null(e);
	assert_int_equal(elf_file__vaddr(ef, &v, bias + alpha + 5, e->start, e->offset), 0);
	assert_int_equal(v, alpha + 5);
	assert_symbol(ef, v, "symfix_alpha", alpha);
	maps__free(m);
	elf_file__free(ef);
}

static void test_elf_file__nopie_vaddr(void **state)
{
	const char *path = FIX "symfix-nopie";
	uint64_t beta = nm_addr(FIX "symfix-nopie.nm", "symfix_beta"), v;
	struct elf_file *ef = open_ok(path, &no_debug);
	struct maps *m = synthetic_maps(path, 0, beta);
	const struct maps_entry *e = &m->entries[0];

	/* Linked at 0x400000: the text's file offset and address differ, addresses are absolute. */
	assert_int_equal(elf_file__type(ef), ET_EXEC);
	assert_true(e->start != e->offset);
	assert_int_equal(elf_file__vaddr(ef, &v, beta + 1, e->start, e->offset), 0);
	assert_int_equal(v, beta + 1);
	assert_symbol(ef, v, "symfix_beta", beta);
	maps__free(m);
	elf_file__free(ef);
}

static void test_elf_file__shared_lib_vaddr(void **state)
{
	const char *path = FIX "libsymfix.so";
	uint64_t fn = nm_addr(FIX "libsymfix.so.nm", "symfix_lib_only");
	uint64_t sink = nm_addr(FIX "libsymfix.so.nm", "symfix_sink");
	uint64_t bias = 0x7f1234400000, v;
	struct elf_file *ef = open_ok(path, &no_debug);
	struct maps *m = synthetic_maps(path, bias, fn);
	struct maps *data = synthetic_maps(path, bias, sink);
	struct phdr rw = segment_of(path, sink);

	/* Based at 0x200000: p_vaddr - p_offset is 0x200000, not 0. */
	assert_int_equal(
		elf_file__vaddr(ef, &v, bias + fn + 2, m->entries[0].start, m->entries[0].offset),
		0);
	assert_int_equal(v, fn + 2);
	assert_symbol(ef, v, "symfix_lib_only", fn);
	/* The data segment starts mid-page (p_offset not page aligned). */
	assert_true((rw.offset & 0xfff) != 0);
	assert_int_equal(elf_file__vaddr(ef, &v, bias + sink, data->entries[0].start,
					 data->entries[0].offset),
			 0);
	assert_int_equal(v, sink);
	maps__free(m);
	maps__free(data);
	elf_file__free(ef);
}

static void test_elf_file__vaddr_outside_segments(void **state)
{
	struct elf_file *ef = open_ok(FIX "symfix-pie", &no_debug);
	uint64_t v;

	assert_int_equal(elf_file__vaddr(ef, &v, 0x1000, 0x2000, 0), -ENOENT);
	assert_int_equal(elf_file__vaddr(ef, &v, 0x7000000, 0x1000, 0x10000000), -ENOENT);
	assert_int_equal(elf_file__file_offset(ef, &v, 0x7fffffff), -ENOENT);
	elf_file__free(ef);
}

static void test_elf_file__stripped_falls_back_to_dynsym(void **state)
{
	struct elf_file *ef = open_ok(FIX "symfix-stripped", &no_debug);
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	uint64_t local = nm_addr(FIX "symfix-pie.nm", "symfix_local_helper");
	uint64_t spin = nm_addr(FIX "symfix-pie.nm", "_ZN6symfix6Widget4spinEi");
	struct elf_func fn;

	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DYNSYM);
	assert_null(elf_file__debug_path(ef));
	assert_symbol(ef, alpha + 1, "symfix_alpha", alpha);
	assert_symbol(ef, spin, "_ZN6symfix6Widget4spinEi", spin);
	/* Static functions are not exported: unknown, rather than blamed on a neighbour. */
	assert_null(elf_file__lookup(ef, local));
	assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_local_helper"), -ENOENT);
	assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_alpha"), 0);
	assert_int_equal(fn.vaddr, alpha);
	elf_file__free(ef);
}

struct tmp_dir {
	char path[64];
};

static void rm_rf(const char *path)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	assert_int_equal(system(cmd), 0);
}

/* <dir>/.build-id/xx/yyyy.debug -> target */
static void link_build_id(const char *dir, const char *build_id, const char *target)
{
	char p[PATH_MAX], abs[PATH_MAX];

	assert_non_null(realpath(target, abs));
	snprintf(p, sizeof(p), "%s/.build-id", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s", dir, build_id);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", dir, build_id, build_id + 2);
	assert_int_equal(symlink(abs, p), 0);
}

static void test_elf_file__debug_file_by_build_id(void **state)
{
	char dir[] = "/tmp/elf-debug.XXXXXX", want[PATH_MAX], bid[128];
	uint64_t local = nm_addr(FIX "symfix-pie.nm", "symfix_local_helper");
	struct elf_file *ef;
	struct elf_func fn;

	assert_non_null(mkdtemp(dir));
	read_text(FIX "symfix-pie.buildid", bid, sizeof(bid));
	link_build_id(dir, bid, FIX "symfix-pie.debug");
	ef = open_ok(FIX "symfix-stripped", &(struct elf_file_opts){.debug_dir = dir});
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DEBUG_FILE);
	snprintf(want, sizeof(want), "%s/.build-id/%.2s/%s.debug", dir, bid, bid + 2);
	assert_string_equal(elf_file__debug_path(ef), want);
	/* The debug file's .symtab has the static function .dynsym lacks. */
	assert_symbol(ef, local + 1, "symfix_local_helper", local);
	/* File offsets still come from the stripped file's own segments. */
	assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_local_helper"), 0);
	assert_int_equal(fn.file_offset, local - segment_of(FIX "symfix-stripped", local).vaddr +
						 segment_of(FIX "symfix-stripped", local).offset);
	elf_file__free(ef);
	rm_rf(dir);
}

static void test_elf_file__debug_file_of_another_build_is_ignored(void **state)
{
	char dir[] = "/tmp/elf-debug.XXXXXX", bid[128];
	struct elf_file *ef;

	assert_non_null(mkdtemp(dir));
	read_text(FIX "symfix-pie.buildid", bid, sizeof(bid));
	/* Right name, wrong contents: the library's build id is not ours. */
	link_build_id(dir, bid, FIX "libsymfix.so");
	ef = open_ok(FIX "symfix-stripped", &(struct elf_file_opts){.debug_dir = dir});
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DYNSYM);
	elf_file__free(ef);
	rm_rf(dir);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[PATH_MAX * 2 + 16];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

static void test_elf_file__debuglink_next_to_the_file(void **state)
{
	char dir[] = "/tmp/elf-debug.XXXXXX", p[PATH_MAX];
	uint64_t local = nm_addr(FIX "symfix-pie.nm", "symfix_local_helper");
	struct elf_file *ef;

	assert_non_null(mkdtemp(dir));
	/* An empty debug root: only .gnu_debuglink can find it, in the file's directory. */
	ef = open_ok(FIX "symfix-debuglink", &(struct elf_file_opts){.debug_dir = dir});
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DEBUG_FILE);
	assert_string_equal(elf_file__debug_path(ef), FIX "symfix-pie.debug");
	assert_symbol(ef, local, "symfix_local_helper", local);
	elf_file__free(ef);

	/* Same name, other contents: the CRC does not match. */
	snprintf(p, sizeof(p), "%s/symfix-debuglink", dir);
	copy_file(FIX "symfix-debuglink", p);
	snprintf(p, sizeof(p), "%s/symfix-pie.debug", dir);
	copy_file(FIX "libsymfix.so", p);
	snprintf(p, sizeof(p), "%s/symfix-debuglink", dir);
	ef = open_ok(p, &(struct elf_file_opts){.debug_dir = dir});
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DYNSYM);
	elf_file__free(ef);
	rm_rf(dir);
}

/*
 * A .gnu_debuglink candidate that is a FIFO or a link to /dev/zero: opening the one blocked
 * forever, CRC'ing the other never ended.  Both are skipped at once; .dynsym is used.
 */
static void test_elf_file__debuglink_fifo_and_dev_zero_skipped(void **state)
{
	char dir[] = "/tmp/elf-debug.XXXXXX", p[PATH_MAX], d[PATH_MAX];
	struct elf_file *ef;

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/symfix-debuglink", dir);
	copy_file(FIX "symfix-debuglink", p);
	snprintf(d, sizeof(d), "%s/symfix-pie.debug", dir);
	alarm(10); /* blocking is the failure */
	assert_int_equal(mkfifo(d, 0644), 0);
	ef = open_ok(p, &(struct elf_file_opts){.debug_dir = dir});
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DYNSYM);
	elf_file__free(ef);
	unlink(d);
	assert_int_equal(symlink("/dev/zero", d), 0);
	ef = open_ok(p, &(struct elf_file_opts){.debug_dir = dir});
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DYNSYM);
	elf_file__free(ef);
	alarm(0);
	rm_rf(dir);
}

/*
 * A target's file in its root: the debuglink next to it is looked up inside that root, so a
 * link to an absolute host path cannot reach the host's file; a link that stays inside works.
 */
static void test_elf_file__debuglink_confined_to_the_target_root(void **state)
{
	char dir[] = "/tmp/elf-root.XXXXXX", p[PATH_MAX], host[PATH_MAX + 64], cwd[PATH_MAX];
	/* A debug root with nothing in it: only the debuglink next to the file can match. */
	struct elf_file_opts opts = {.debug_dir = "/nonexistent",
				     .target_path = "/lib/symfix-debuglink"};
	struct elf_file *ef = NULL;
	int fd, root;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/lib", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/symfix-debuglink", dir);
	copy_file(FIX "symfix-debuglink", p);
	/* The right debug file exists on the host: an absolute link would find it there. */
	snprintf(host, sizeof(host), "%s/" FIX "symfix-pie.debug", cwd);
	snprintf(p, sizeof(p), "%s/lib/symfix-pie.debug", dir);
	assert_int_equal(symlink(host, p), 0);
	root = open(dir, O_PATH | O_DIRECTORY);
	assert_true(root >= 0);
	opts.in_root = true;
	opts.root_fd = root;
	snprintf(p, sizeof(p), "%s/lib/symfix-debuglink", dir);
	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(elf_file__open_fd(&ef, fd, &opts), 0);
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DYNSYM);
	elf_file__free(ef);
	/* Opened by path, unconfined (as through /proc/PID/root before), the link reaches out. */
	ef = open_ok(p, &(struct elf_file_opts){.debug_dir = "/nonexistent"});
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DEBUG_FILE);
	elf_file__free(ef);

	/* A copy inside the root, linked relatively: found and used. */
	snprintf(p, sizeof(p), "%s/lib/symfix-pie.debug", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lib/.debug", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/lib/.debug/symfix-pie.debug", dir);
	copy_file(FIX "symfix-pie.debug", p);
	assert_int_equal(elf_file__open_fd(&ef, fd, &opts), 0);
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DEBUG_FILE);
	assert_string_equal(elf_file__debug_path(ef), "/lib/.debug/symfix-pie.debug");
	elf_file__free(ef);
	close(fd);
	close(root);
	rm_rf(dir);
}

static void test_elf_file__find_symbol_gives_file_offset_and_bytes(void **state)
{
	static const char *const files[] = {FIX "symfix-pie", FIX "symfix-nopie",
					    FIX "libsymfix.so"};
	static const char *const nms[] = {FIX "symfix-pie.nm", FIX "symfix-nopie.nm",
					  FIX "libsymfix.so.nm"};

	for (size_t i = 0; i < 3; i++) {
		struct elf_file *ef = open_ok(files[i], &no_debug);
		uint8_t got[16], want[16];
		uint64_t addr, size;
		struct phdr ph;
		struct elf_func fn;

		assert_true(nm_lookup(nms[i], "symfix_beta", &addr, &size));
		ph = segment_of(files[i], addr);
		assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_beta"), 0);
		assert_int_equal(fn.vaddr, addr);
		assert_int_equal(fn.size, size);
		assert_false(fn.ifunc);
		assert_int_equal(fn.file_offset, addr - ph.vaddr + ph.offset);
		assert_int_equal(elf_file__read_at(ef, got, sizeof(got), fn.file_offset), 0);
		section_bytes(files[i], addr, want, sizeof(want));
		assert_memory_equal(got, want, sizeof(want));
		assert_int_equal(elf_file__find_symbol(ef, &fn, "no_such_function"), -ENOENT);
		elf_file__free(ef);
	}
}

/* "symfix_versioned@SYMFIX_1" (hidden) and "symfix_versioned@@SYMFIX_2" (default). */
static void test_elf_file__find_symbol_prefers_default_version(void **state)
{
	static const char *const files[] = {FIX "libsymfix.so", FIX "libsymfix-stripped.so"};
	uint64_t v1 = nm_addr(FIX "libsymfix.so.nm", "symfix_versioned_v1");
	uint64_t v2 = nm_addr(FIX "libsymfix.so.nm", "symfix_versioned_v2");

	assert_true(v1 != v2);
	for (size_t i = 0; i < 2; i++) {
		struct elf_file *ef = open_ok(files[i], &no_debug);
		const struct elf_sym *s;
		struct elf_func fn;

		assert_int_equal(elf_file__syms(ef),
				 i ? ELF_FILE_SYMS_DYNSYM : ELF_FILE_SYMS_SYMTAB);
		assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_versioned"), 0);
		assert_int_equal(fn.vaddr, v2);
		/* Names carry no version suffix. */
		s = elf_file__lookup(ef, v2);
		assert_null(strchr(s->name, '@'));
		s = elf_file__lookup(ef, v1);
		assert_null(strchr(s->name, '@'));
		elf_file__free(ef);
	}
}

/*
 * A .gnu_debuglink is the file's own bytes: one naming a directory (found by make fuzz) or
 * anything else that cannot be read as a debug file is a miss, and the file keeps its .dynsym
 * symbols -- it used to fail the whole file with -EISDIR.
 */
static void test_elf_file__debuglink_to_a_directory_falls_back(void **state)
{
	static const char link[] = "symfix-pie.debug";
	char dir[] = "/tmp/elf-debug.XXXXXX", p[PATH_MAX];
	uint64_t alpha = nm_addr(FIX "symfix-pie.nm", "symfix_alpha");
	struct elf_file *ef = NULL;
	char *buf, *at;
	size_t len;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	f = fopen(FIX "symfix-debuglink", "r");
	assert_non_null(f);
	buf = malloc(1 << 20);
	assert_non_null(buf);
	len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	at = memmem(buf, len, link, sizeof(link));
	assert_non_null(at);
	/* Same section size, a shorter name: "sub", NUL padding, then bytes taken as the CRC. */
	memset(at, 0, sizeof(link));
	memcpy(at, "sub", 3);
	snprintf(p, sizeof(p), "%s/sub", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/file", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
	assert_int_equal(elf_file__open(&ef, p, &(struct elf_file_opts){.debug_dir = dir}), 0);
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_DYNSYM);
	assert_symbol(ef, alpha, "symfix_alpha", alpha);
	elf_file__free(ef);
	rm_rf(dir);
}

static void test_elf_file__not_elf(void **state)
{
	struct elf_file *ef = NULL;

	assert_int_equal(elf_file__open(&ef, "tests/fixtures/symfix.c", NULL), -ENOEXEC);
	assert_int_equal(elf_file__open(&ef, "tests/fixtures", NULL), -EINVAL); /* not regular */
	assert_int_equal(elf_file__open(&ef, FIX "no-such-file", NULL), -ENOENT);
	assert_null(ef);
	elf_file__free(NULL);
}

static void test_elf_file__open_fd_keeps_its_own_copy(void **state)
{
	int fd = open(FIX "symfix-nopie", O_RDONLY);
	struct elf_file *ef = NULL;
	uint8_t got[8], want[8];
	struct elf_func fn;

	assert_true(fd >= 0);
	assert_int_equal(
		elf_file__open_fd(&ef, fd,
				  &(struct elf_file_opts){.debug_dir = "", .keep_fd = true}),
		0);
	close(fd); /* the caller's fd is the caller's */
	assert_int_equal(elf_file__syms(ef), ELF_FILE_SYMS_SYMTAB);
	assert_int_equal(elf_file__find_symbol(ef, &fn, "symfix_gamma"), 0);
	assert_int_equal(elf_file__read_at(ef, got, sizeof(got), fn.file_offset), 0);
	section_bytes(FIX "symfix-nopie", fn.vaddr, want, sizeof(want));
	assert_memory_equal(got, want, sizeof(want));
	elf_file__free(ef);
}

static void test_elf_file__read_at_errors(void **state)
{
	char dir[] = "/tmp/elf-read.XXXXXX", p[PATH_MAX], q[PATH_MAX];
	struct elf_file *ef;
	struct stat st;
	uint8_t buf[16];

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/lib.so", dir);
	snprintf(q, sizeof(q), "%s/lib.so.new", dir);
	copy_file(FIX "libsymfix.so", p);
	ef = open_ok(p, &no_debug);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(elf_file__read_at(ef, buf, sizeof(buf), (uint64_t)st.st_size - 8), -EIO);
	assert_int_equal(elf_file__read_at(ef, buf, sizeof(buf), 0), 0);
	assert_memory_equal(buf, "\177ELF", 4);
	/* An upgrade renames a new file over the old one: offsets no longer apply. */
	copy_file(FIX "libsymfix.so", q);
	assert_int_equal(rename(q, p), 0);
	assert_int_equal(elf_file__read_at(ef, buf, sizeof(buf), 0), -ESTALE);
	elf_file__free(ef);
	rm_rf(dir);
}

static void test_elf_file__vdso_from_memory(void **state)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	const struct maps_entry *e;
	const struct elf_sym *s;
	struct maps *m = NULL;
	struct elf_file *ef = NULL;
	struct elf_func fn;
	uint8_t buf[4];
	uint64_t v;

	if (!base)
		skip();
	assert_int_equal(maps__read(&m, "/proc/self/maps"), 0);
	e = maps__find(m, base);
	assert_non_null(e);
	assert_string_equal(e->path, "[vdso]");
	assert_int_equal(elf_file__open_mem(&ef, (const void *)base, e->end - e->start), 0);
	assert_true(elf_file__has_symbols(ef));
	assert_int_equal(elf_file__find_symbol(ef, &fn, "__vdso_clock_gettime"), 0);
	/* Runtime address -> vaddr -> symbol, as for any mapping. */
	assert_int_equal(
		elf_file__vaddr(ef, &v, e->start + fn.file_offset + 1, e->start, e->offset), 0);
	s = elf_file__lookup(ef, v);
	assert_non_null(s);
	assert_int_equal(s->addr, fn.vaddr);
	assert_int_equal(elf_file__read_at(ef, buf, sizeof(buf), 0), -EBADF);
	elf_file__free(ef);
	maps__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elf_file__symtab_matches_nm),
		cmocka_unit_test(test_elf_file__alias_choice),
		cmocka_unit_test(test_elf_file__lookup_outside_functions),
		cmocka_unit_test(test_elf_file__size_zero_symbols),
		cmocka_unit_test(test_elf_file__build_id_matches_readelf),
		cmocka_unit_test(test_elf_file__pie_vaddr),
		cmocka_unit_test(test_elf_file__nopie_vaddr),
		cmocka_unit_test(test_elf_file__shared_lib_vaddr),
		cmocka_unit_test(test_elf_file__vaddr_outside_segments),
		cmocka_unit_test(test_elf_file__stripped_falls_back_to_dynsym),
		cmocka_unit_test(test_elf_file__debug_file_by_build_id),
		cmocka_unit_test(test_elf_file__debug_file_of_another_build_is_ignored),
		cmocka_unit_test(test_elf_file__debuglink_next_to_the_file),
		cmocka_unit_test(test_elf_file__find_symbol_gives_file_offset_and_bytes),
		cmocka_unit_test(test_elf_file__find_symbol_prefers_default_version),
		cmocka_unit_test(test_elf_file__debuglink_to_a_directory_falls_back),
		cmocka_unit_test(test_elf_file__not_elf),
		cmocka_unit_test(test_elf_file__open_fd_keeps_its_own_copy),
		cmocka_unit_test(test_elf_file__debuglink_fifo_and_dev_zero_skipped),
		cmocka_unit_test(test_elf_file__debuglink_confined_to_the_target_root),
		cmocka_unit_test(test_elf_file__read_at_errors),
		cmocka_unit_test(test_elf_file__vdso_from_memory),
	};

	return cmocka_run_group_tests_name("elf_file", tests, NULL, NULL);
}
