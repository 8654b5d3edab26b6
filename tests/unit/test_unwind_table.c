// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwind-table builder against binutils' own reading of the same CFI: every row that
 * `readelf --debug-dump=frames-interp` prints must give the same CFA rule (and RBP / RA rule) at
 * its pc through unwind_table__find.  Fixtures are compiled here into a temporary directory with
 * cc (a PLT call, a function split into a .cold part, -O2 -fomit-frame-pointer, stack
 * realignment), plus glibc's real libc.so.6 (PLT stubs, the __restore_rt signal trampoline).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
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

#include "proc/safe_open.h"
#include "unwind/unwind_table.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static char fixdir[] = "/tmp/test_unwind_table.XXXXXX";

/* A program with a PLT call, a function with a .cold part, -O2 -fomit-frame-pointer. */
static const char cold_src[] =
	"#include <stdio.h>\n"
	"__attribute__((cold, noinline)) void oops(long i) { fprintf(stderr, \"x %ld\\n\", i); }\n"
	"__attribute__((noinline)) long work(long x)\n"
	"{\n"
	"	long s = 0;\n"
	"	for (long i = 0; i < x; i++) {\n"
	"		if (i == x - 7 && x > 1000000) {\n"
	"			oops(i);\n"
	"			s -= x * 3;\n"
	"			fprintf(stderr, \"more %ld\\n\", s);\n"
	"			continue;\n"
	"		}\n"
	"		s += i * x;\n"
	"	}\n"
	"	return s;\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	printf(\"%ld\\n\", work(argc * 1000));\n"
	"	puts(\"done\");\n"
	"	return 0;\n"
	"}\n";

/* An over-aligned local and a VLA: gcc realigns with a DRAP register (lea 8(%rsp),%r10;
 * and $-32,%rsp) and says CFA = *(rbp-8). */
static const char realign_src[] =
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) void fill(char *p, int n)\n"
	"{ memset(p, 1, n); __asm__ volatile(\"\" ::\"r\"(p) : \"memory\"); }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	char buf[64] __attribute__((aligned(32)));\n"
	"	char vla[argc * 16];\n"
	"	fill(buf, argc + 8);\n"
	"	fill(vla, argc);\n"
	"	printf(\"%d %d\\n\", buf[3], vla[0]);\n"
	"	return 0;\n"
	"}\n";

/* -mstackrealign with a VLA: main realigns with `and $-16,%rsp` through a DRAP register (r10)
 * and then says CFA = *(rbp-8). */
static const char realign16_src[] =
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) void fill(char *p, int n)\n"
	"{ memset(p, 1, n); __asm__ volatile(\"\" ::\"r\"(p) : \"memory\"); }\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	char buf[64];\n"
	"	char vla[argc * 16];\n"
	"	fill(buf, argc + 8);\n"
	"	fill(vla, argc);\n"
	"	printf(\"%d %d\\n\", buf[3], vla[0]);\n"
	"	return 0;\n"
	"}\n";

static void fixture(char *out, size_t size, const char *name, const char *src, const char *flags)
{
	char cmd[1024], c_path[512];
	FILE *f;

	snprintf(c_path, sizeof(c_path), "%s/%s.c", fixdir, name);
	snprintf(out, size, "%s/%s", fixdir, name);
	f = fopen(c_path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(src, f) >= 0, 1);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc %s %s -o %s", flags, c_path, out);
	assert_int_equal(system(cmd), 0);
}

static char cold_bin[256], realign_bin[256], realign16_bin[256], debug_bin[256];

static int setup(void **state)
{
	char cmd[4096];

	if (!mkdtemp(fixdir))
		return -1;
	fixture(cold_bin, sizeof(cold_bin), "cold", cold_src,
		"-O2 -fomit-frame-pointer -freorder-blocks-and-partition");
	fixture(realign_bin, sizeof(realign_bin), "realign", realign_src, "-O2 -mstackrealign");
	fixture(realign16_bin, sizeof(realign16_bin), "realign16", realign16_src,
		"-O2 -mstackrealign");
	/* .debug_frame only: the same program without .eh_frame. */
	snprintf(debug_bin, sizeof(debug_bin), "%s/debugframe", fixdir);
	snprintf(cmd, sizeof(cmd),
		 "cc -g -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables %s/cold.c -o %s.full"
		 " && objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr %s.full %s",
		 fixdir, debug_bin, debug_bin, debug_bin);
	if (system(cmd) != 0)
		return -1;
	/* The same with .debug_frame compressed, as in Debian's debug files. */
	snprintf(cmd, sizeof(cmd), "objcopy --compress-debug-sections=zlib %s %s.z", debug_bin,
		 debug_bin);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", fixdir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct unwind_table *build(const char *path, const struct unwind_table_opts *opts, int *err)
{
	struct unwind_table *t = NULL;
	int fd = -1;

	assert_int_equal(safe_open__at(&fd, -1, path, 0, SAFE_OPEN_ELF_MAX, NULL), 0);
	*err = unwind_table__build(&t, fd, opts);
	close(fd);
	return t;
}

static struct unwind_table *build_ok(const char *path)
{
	int err;
	struct unwind_table *t = build(path, NULL, &err);

	assert_int_equal(err, 0);
	assert_non_null(t);
	return t;
}

/* What the checks against readelf found, for assertions on coverage. */
struct tally {
	unsigned rows, exp_rows, empty_fdes, gaps, signal_rows, plt_rows, deref_rows, stop_rows;
	uint64_t signal_start, signal_end;
};

struct readelf_cie {
	unsigned long off;
	bool signal;
	char cfa[32], rbp[32], ra[32]; /* its initial row */
};

/* One readelf row (cfa, rbp and ra columns as printed; "" when not a column) against ours. */
static void check_row(struct unwind_table *t, uint64_t pc, const char *cfa, const char *rbp,
		      const char *ra, bool signal, struct tally *tl)
{
	struct prof_unwind_row r;
	unsigned kind, rkind;
	long off;
	char reg[8];

	if (unwind_table__find(t, &r, pc) != 0)
		fail_msg("pc %#" PRIx64 ": no row, readelf says CFA %s", pc, cfa);
	kind = prof_unwind_row__cfa(&r);
	rkind = prof_unwind_row__rbp(&r);
	tl->rows++;
	if (signal) {
		/* glibc's trampoline: every register from the ucontext (readelf: all "exp"). */
		if (kind != PROF_UNWIND_CFA_SIGNAL)
			fail_msg("pc %#" PRIx64 ": kind %u, want signal frame", pc, kind);
		tl->signal_rows++;
		return;
	}
	if (strcmp(ra, "u") == 0) {
		if (kind != PROF_UNWIND_CFA_STOP)
			fail_msg("pc %#" PRIx64 ": kind %u, want stop (RA undefined)", pc, kind);
		tl->stop_rows++;
		return;
	}
	if (strcmp(ra, "c-8") != 0) {
		assert_int_equal(kind, PROF_UNWIND_CFA_UNSUPPORTED);
		return;
	}
	if (strcmp(cfa, "exp") == 0) {
		/* The expressions we know: PLT stubs and realignment's *(reg+off). */
		tl->exp_rows++;
		if (kind == PROF_UNWIND_CFA_PLT) {
			tl->plt_rows++;
			assert_int_equal(r.cfa_off, 1);
			assert_int_equal(r.rbp_off, 11);
		} else if (kind == PROF_UNWIND_CFA_DEREF_RBP || kind == PROF_UNWIND_CFA_DEREF_RSP) {
			tl->deref_rows++;
		} else {
			fail_msg("pc %#" PRIx64 ": CFA exp, our kind %u", pc, kind);
		}
	} else if (sscanf(cfa, "%7[a-z0-9]%ld", reg, &off) == 2 &&
		   (strcmp(reg, "rsp") == 0 || strcmp(reg, "rbp") == 0)) {
		unsigned want = strcmp(reg, "rsp") == 0 ? PROF_UNWIND_CFA_RSP : PROF_UNWIND_CFA_RBP;

		if (kind != want || r.cfa_off * 8 != off)
			fail_msg("pc %#" PRIx64 ": readelf CFA %s, ours kind %u off %d", pc, cfa,
				 kind, r.cfa_off * 8);
	} else {
		/* Another base register (r10 while a realigned frame is set up). */
		if (kind != PROF_UNWIND_CFA_UNSUPPORTED)
			fail_msg("pc %#" PRIx64 ": readelf CFA %s, ours kind %u", pc, cfa, kind);
		return;
	}
	if (kind == PROF_UNWIND_CFA_PLT)
		return;
	/* RBP: "u" is readelf's word both for never mentioned and for DW_CFA_undefined. */
	if (!*rbp || strcmp(rbp, "u") == 0 || strcmp(rbp, "s") == 0) {
		assert_true(rkind == PROF_UNWIND_RBP_UNCHANGED ||
			    rkind == PROF_UNWIND_RBP_UNDEFINED);
	} else if (rbp[0] == 'c') {
		assert_int_equal(rkind, PROF_UNWIND_RBP_CFA);
		assert_int_equal(r.rbp_off * 8, strtol(rbp + 1, NULL, 10));
	} else if (strcmp(rbp, "exp") == 0) {
		assert_int_equal(rkind, PROF_UNWIND_RBP_DEREF_RBP);
	} else {
		assert_int_equal(rkind, PROF_UNWIND_RBP_UNSUPPORTED);
	}
}

/* An FDE that printed no table: its CIE's initial row holds at its start. */
static void check_empty_fde(struct unwind_table *t, const struct readelf_cie *cie, bool has_rows,
			    uint64_t start, struct tally *tl)
{
	if (!cie || has_rows || !cie->cfa[0])
		return;
	check_row(t, start, cie->cfa, cie->rbp, cie->ra, cie->signal, tl);
	tl->empty_fdes++;
}

/*
 * Walk readelf's interpretation of section `section` (".eh_frame" / ".debug_frame") of path and
 * check every row it prints; an FDE without a table is checked at its start against its CIE's
 * initial row.  FDE ends that no other FDE covers must be "no information".
 */
static void check_readelf(struct unwind_table *t, const char *path, const char *section,
			  struct tally *tl)
{
	static struct readelf_cie cies[4096];
	static uint64_t starts[65536], ends[65536];
	unsigned ncies = 0, nfdes = 0, ncols = 0, rbp_col = 0, ra_col = 0;
	int n;
	struct readelf_cie *cur_cie = NULL, *fde_cie = NULL;
	bool in_section = false, fde_has_rows = false;
	uint64_t fde_start = 0;
	char cmd[600], line[1024];
	FILE *p;

	memset(tl, 0, sizeof(*tl));
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp %s", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char tok[24][32];
		unsigned long off, cie_off;
		uint64_t lo, hi;

		if (strncmp(line, "Contents of the ", 16) == 0) {
			in_section = strncmp(line + 16, section, strlen(section)) == 0 &&
				     line[16 + strlen(section)] == ' ';
			continue;
		}
		if (!in_section)
			continue;
		if (sscanf(line, "%lx %*x %*x FDE cie=%lx pc=%" SCNx64 "..%" SCNx64, &off, &cie_off,
			   &lo, &hi) == 4) {
			check_empty_fde(t, fde_cie, fde_has_rows, fde_start, tl);
			fde_cie = NULL;
			for (unsigned i = 0; i < ncies; i++)
				if (cies[i].off == cie_off)
					fde_cie = &cies[i];
			assert_non_null(fde_cie);
			assert_true(nfdes < 65536);
			starts[nfdes] = lo;
			ends[nfdes++] = hi;
			fde_start = lo;
			fde_has_rows = false;
			cur_cie = NULL;
			if (fde_cie->signal && !tl->signal_start) {
				tl->signal_start = lo;
				tl->signal_end = hi;
			}
			continue;
		}
		if (sscanf(line, "%lx %*x %*x CIE", &off) == 1 && strstr(line, " CIE ")) {
			check_empty_fde(t, fde_cie, fde_has_rows, fde_start, tl);
			fde_cie = NULL;
			assert_true(ncies < 4096);
			cur_cie = &cies[ncies++];
			memset(cur_cie, 0, sizeof(*cur_cie));
			cur_cie->off = off;
			/* The augmentation string is quoted: "zRS" marks a signal frame. */
			{
				const char *q = strchr(line, '"'),
					   *q2 = q ? strchr(q + 1, '"') : NULL;

				cur_cie->signal = q && q2 && memchr(q, 'S', (size_t)(q2 - q));
			}
			continue;
		}
		n = sscanf(line,
			   "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s "
			   "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s",
			   tok[0], tok[1], tok[2], tok[3], tok[4], tok[5], tok[6], tok[7], tok[8],
			   tok[9], tok[10], tok[11], tok[12], tok[13], tok[14], tok[15], tok[16],
			   tok[17], tok[18], tok[19], tok[20], tok[21], tok[22], tok[23]);
		if (n >= 3 && strcmp(tok[0], "LOC") == 0) {
			ncols = (unsigned)n;
			rbp_col = ra_col = 0;
			for (int i = 2; i < n; i++) {
				if (strcmp(tok[i], "rbp") == 0)
					rbp_col = (unsigned)i;
				if (strcmp(tok[i], "ra") == 0)
					ra_col = (unsigned)i;
			}
			continue;
		}
		if (n >= 2 && (unsigned)n == ncols && strlen(tok[0]) == 16) {
			uint64_t pc = strtoull(tok[0], NULL, 16);
			const char *rbp = rbp_col ? tok[rbp_col] : "",
				   *ra = ra_col ? tok[ra_col] : "";

			if (cur_cie) {
				/* The CIE's own table: its initial row, for FDEs without one. */
				snprintf(cur_cie->cfa, sizeof(cur_cie->cfa), "%s", tok[1]);
				snprintf(cur_cie->rbp, sizeof(cur_cie->rbp), "%s", rbp);
				snprintf(cur_cie->ra, sizeof(cur_cie->ra), "%s", ra);
				continue;
			}
			assert_non_null(fde_cie);
			fde_has_rows = true;
			check_row(t, pc, tok[1], rbp, ra, fde_cie->signal, tl);
		}
	}
	/* readelf exits 1 on a file without debug sections, after printing .eh_frame in full. */
	n = pclose(p);
	assert_true(n == 0 || n == 0x100);
	check_empty_fde(t, fde_cie, fde_has_rows, fde_start, tl);
	assert_true(nfdes > 0);
	/* An FDE's end that starts no other FDE: no information there (and not the last rule). */
	for (unsigned i = 0; i < nfdes; i++) {
		bool covered = false;
		struct prof_unwind_row r;

		for (unsigned j = 0; j < nfdes && !covered; j++)
			covered = starts[j] <= ends[i] && ends[i] < ends[j];
		if (covered)
			continue;
		if (unwind_table__find(t, &r, ends[i]) != -ENOENT)
			fail_msg("FDE end %#" PRIx64 ": a row of kind %u", ends[i],
				 prof_unwind_row__cfa(&r));
		assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_NONE);
		tl->gaps++;
	}
}

/* Address (and st_size, when size is not NULL) of symbol name in path's .symtab / .dynsym
 * (libelf, not the code under test). */
static uint64_t sym_lookup(const char *path, const char *name, uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	uint64_t addr = 0;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while ((scn = elf_nextscn(elf, scn)) && !addr) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			gelf_getsym(d, (int)i, &s);
			if (strcmp(elf_strptr(elf, sh.sh_link, s.st_name), name) == 0 &&
			    s.st_value) {
				addr = s.st_value;
				if (size)
					*size = s.st_size;
			}
		}
	}
	elf_end(elf);
	close(fd);
	assert_true(addr != 0);
	return addr;
}

static uint64_t sym_addr(const char *path, const char *name)
{
	return sym_lookup(path, name, NULL);
}

/* n bytes of path at ELF virtual address vaddr, through the section that holds them. */
static void read_vaddr(const char *path, uint64_t vaddr, uint8_t *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	bool found = false;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr + n > sh.sh_addr + sh.sh_size)
			continue;
		assert_int_equal(pread(fd, buf, n, (off_t)(sh.sh_offset + vaddr - sh.sh_addr)),
				 (ssize_t)n);
		found = true;
	}
	elf_end(elf);
	close(fd);
	assert_true(found);
}

/* sh_addr and sh_size of a section, or 0 size when absent; its sh_flags in last_flags. */
static uint64_t last_flags;

static void section(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *elf;

	*addr = *size = 0;
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		gelf_getshdr(scn, &sh);
		if (strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name) == 0) {
			*addr = sh.sh_addr;
			*size = sh.sh_size;
			last_flags = sh.sh_flags;
		}
	}
	elf_end(elf);
	close(fd);
}

static void test_unwind_table__fixture_matches_readelf(void **state)
{
	struct unwind_table *t = build_ok(cold_bin);
	struct tally tl;

	assert_int_equal(unwind_table__source(t), UNWIND_TABLE_EH_FRAME);
	check_readelf(t, cold_bin, ".eh_frame", &tl);
	assert_true(tl.rows >= 20);
	assert_int_equal(tl.plt_rows, 1); /* the .plt FDE's third row */
	assert_true(tl.stop_rows >= 1);	  /* _start */
	assert_true(tl.gaps >= 1);
	assert_int_equal(unwind_table__stats(t)->bad_fdes, 0);
	unwind_table__free(t);
}

static void test_unwind_table__plt_rows(void **state)
{
	struct unwind_table *t = build_ok(cold_bin);
	struct prof_unwind_row r;
	uint64_t plt, size;

	section(cold_bin, ".plt", &plt, &size);
	assert_true(size >= 32);
	/* PLT0 pushes twice (rsp+16, +24); each later 16-byte stub is the PLT rule. */
	assert_int_equal(unwind_table__find(t, &r, plt), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
	assert_int_equal(r.cfa_off, 2);
	for (uint64_t pc = plt + 16; pc < plt + size; pc += 5) {
		assert_int_equal(unwind_table__find(t, &r, pc), 0);
		assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_PLT);
		assert_int_equal(r.cfa_off, 1);
		assert_int_equal(r.rbp_off, 11);
	}
	unwind_table__free(t);
}

static void test_unwind_table__cold_part(void **state)
{
	struct unwind_table *t = build_ok(cold_bin);
	uint64_t cold = sym_addr(cold_bin, "work.cold"), work = sym_addr(cold_bin, "work");
	struct prof_unwind_row r;

	/* work.cold runs with work's frame: six registers pushed, CFA rsp+64 (readelf). */
	assert_int_equal(unwind_table__find(t, &r, cold), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
	assert_int_equal(r.cfa_off * 8, 64);
	assert_int_equal(prof_unwind_row__rbp(&r), PROF_UNWIND_RBP_CFA);
	assert_int_equal(r.rbp_off * 8, -48);
	/* work itself starts with the return address on top. */
	assert_int_equal(unwind_table__find(t, &r, work), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
	assert_int_equal(r.cfa_off, 1);
	unwind_table__free(t);
}

static void test_unwind_table__cold_part_every_pc(void **state)
{
	struct unwind_table *t = build_ok(cold_bin);
	uint64_t work_size = 0, cold_size = 0;
	uint64_t work = sym_lookup(cold_bin, "work", &work_size);
	uint64_t cold = sym_lookup(cold_bin, "work.cold", &cold_size);
	struct prof_unwind_row r;

	/* -freorder-blocks-and-partition put the cold part in its own FDE, away from work. */
	assert_true(work_size > 16);
	assert_true(cold_size > 4);
	assert_true(cold + cold_size <= work || cold >= work + work_size);
	/* Every byte of the hot part has an rsp-based rule (no frame pointer here). */
	for (uint64_t pc = work; pc < work + work_size; pc++) {
		assert_int_equal(unwind_table__find(t, &r, pc), 0);
		assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
		assert_true(r.cfa_off >= 1 && r.cfa_off <= 8);
	}
	/* Every byte of the cold part runs inside work's full frame: CFA rsp+64, rbp at CFA-48. */
	for (uint64_t pc = cold; pc < cold + cold_size; pc++) {
		assert_int_equal(unwind_table__find(t, &r, pc), 0);
		assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
		assert_int_equal(r.cfa_off * 8, 64);
		assert_int_equal(prof_unwind_row__rbp(&r), PROF_UNWIND_RBP_CFA);
		assert_int_equal(r.rbp_off * 8, -48);
	}
	unwind_table__free(t);
}

static void test_unwind_table__start_is_stop(void **state)
{
	struct unwind_table *t = build_ok(cold_bin);
	struct prof_unwind_row r;

	assert_int_equal(unwind_table__find(t, &r, sym_addr(cold_bin, "_start") + 4), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_STOP);
	unwind_table__free(t);
}

static void test_unwind_table__stack_realignment(void **state)
{
	struct unwind_table *t = build_ok(realign_bin);
	uint64_t main_pc = sym_addr(realign_bin, "main");
	const struct prof_unwind_row *rows;
	bool deref = false, r10 = false;
	uint32_t nr;
	struct tally tl;

	check_readelf(t, realign_bin, ".eh_frame", &tl);
	assert_true(tl.deref_rows >= 1);
	/* In main: CFA = r10 while the frame is set up (unsupported), then *(rbp-8), rbp at rbp+0.
	 */
	rows = unwind_table__rows(t, &nr);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t pc = unwind_table__base(t) + rows[i].pc;

		if (pc < main_pc || pc >= main_pc + 0x100)
			continue;
		if (prof_unwind_row__cfa(&rows[i]) == PROF_UNWIND_CFA_DEREF_RBP) {
			deref = true;
			assert_int_equal(rows[i].cfa_off, -1);
			assert_int_equal(prof_unwind_row__rbp(&rows[i]), PROF_UNWIND_RBP_DEREF_RBP);
			assert_int_equal(rows[i].rbp_off, 0);
		}
		if (prof_unwind_row__cfa(&rows[i]) == PROF_UNWIND_CFA_UNSUPPORTED)
			r10 = true;
	}
	assert_true(deref);
	assert_true(r10);
	unwind_table__free(t);
}

static void test_unwind_table__stackrealign_and16_main(void **state)
{
	/* and $0xfffffffffffffff0,%rsp */
	static const uint8_t and16[] = {0x48, 0x83, 0xe4, 0xf0};
	struct unwind_table *t = build_ok(realign16_bin);
	uint64_t main_size = 0, main_pc = sym_lookup(realign16_bin, "main", &main_size);
	uint64_t and_pc = 0, pc;
	struct prof_unwind_row r;
	uint8_t code[512];
	struct tally tl;
	bool deref = false;

	check_readelf(t, realign16_bin, ".eh_frame", &tl);
	assert_true(tl.deref_rows >= 1);
	assert_true(main_size > 16 && main_size <= sizeof(code));
	read_vaddr(realign16_bin, main_pc, code, main_size);
	for (uint64_t i = 0; i + sizeof(and16) <= main_size && !and_pc; i++)
		if (memcmp(code + i, and16, sizeof(and16)) == 0)
			and_pc = main_pc + i;
	assert_true(and_pc != 0);
	/* Before the and: the return address on top. */
	assert_int_equal(unwind_table__find(t, &r, main_pc), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
	assert_int_equal(r.cfa_off, 1);
	/* From the and on the CFA is r10 (not followed) until rbp holds the frame: then *(rbp-8),
	 * the caller's rbp at rbp+0, up to the return. */
	assert_int_equal(unwind_table__find(t, &r, and_pc), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_UNSUPPORTED);
	for (pc = and_pc; pc < main_pc + main_size; pc++) {
		assert_int_equal(unwind_table__find(t, &r, pc), 0);
		if (prof_unwind_row__cfa(&r) != PROF_UNWIND_CFA_DEREF_RBP)
			continue;
		deref = true;
		assert_int_equal(r.cfa_off, -1);
		assert_int_equal(prof_unwind_row__rbp(&r), PROF_UNWIND_RBP_DEREF_RBP);
		assert_int_equal(r.rbp_off, 0);
	}
	assert_true(deref);
	/* At the ret the return address is on top again. */
	assert_int_equal(unwind_table__find(t, &r, main_pc + main_size - 1), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
	assert_int_equal(r.cfa_off, 1);
	unwind_table__free(t);
}

static void test_unwind_table__debug_frame(void **state)
{
	struct unwind_table *t = build_ok(debug_bin);
	struct tally tl;

	char zpath[300];
	struct unwind_table *z;
	const struct prof_unwind_row *rt, *rz;
	uint32_t nt, nz;
	uint64_t addr, size;

	assert_int_equal(unwind_table__source(t), UNWIND_TABLE_DEBUG_FRAME);
	check_readelf(t, debug_bin, ".debug_frame", &tl);
	assert_true(tl.rows >= 5);
	/* Compressed: the same rows. */
	snprintf(zpath, sizeof(zpath), "%s.z", debug_bin);
	section(zpath, ".debug_frame", &addr, &size);
	assert_true(last_flags & SHF_COMPRESSED);
	z = build_ok(zpath);
	assert_int_equal(unwind_table__source(z), UNWIND_TABLE_DEBUG_FRAME);
	rt = unwind_table__rows(t, &nt);
	rz = unwind_table__rows(z, &nz);
	assert_int_equal(nt, nz);
	assert_memory_equal(rt, rz, nt * sizeof(*rt));
	unwind_table__free(z);
	unwind_table__free(t);
}

static void test_unwind_table__libc_matches_readelf(void **state)
{
	struct unwind_table *t = build_ok(LIBC);
	struct tally tl;
	uint64_t plt, size;

	check_readelf(t, LIBC, ".eh_frame", &tl);
	assert_true(tl.rows > 20000);
	assert_true(tl.signal_rows >= 1);
	assert_true(tl.plt_rows >= 1);
	assert_true(tl.gaps >= 1);
	section(LIBC, ".plt", &plt, &size);
	assert_true(size > 16);
	{
		struct prof_unwind_row r;

		assert_int_equal(unwind_table__find(t, &r, plt + 16 + 11), 0);
		assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_PLT);
	}
	unwind_table__free(t);
}

static void test_unwind_table__debian_libraries_match_readelf(void **state)
{
	/* The files of the table in docs/how-it-works.md ("Our own CFI reader, not libdw";
	 * python3.11 and sqlite3 are test dependencies, libstdc++ comes with g++). */
	static const char *const files[] = {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
					    "/usr/bin/python3.11",
					    "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct unwind_table *t;
		struct tally tl;

		t = build_ok(files[i]);
		check_readelf(t, files[i], ".eh_frame", &tl);
		assert_true(tl.rows > 10000);
		assert_true(tl.gaps >= 1);
		assert_int_equal(unwind_table__stats(t)->bad_fdes, 0);
		unwind_table__free(t);
	}
}

static void test_unwind_table__libc_restore_rt_is_signal_frame(void **state)
{
	/* __restore_rt: mov $15,%rax (rt_sigreturn); syscall — found by its bytes, its FDE the
	 * one with the "S" augmentation (libc.so.6 has no .symtab). */
	static const uint8_t restore_rt[] = {0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05};
	struct unwind_table *t = build_ok(LIBC);
	struct prof_unwind_row r;
	uint8_t code[sizeof(restore_rt)];
	uint64_t text, size, off;
	struct tally tl;
	int fd;

	check_readelf(t, LIBC, ".eh_frame", &tl);
	assert_true(tl.signal_start != 0);
	/* The FDE begins one byte early (a nop), so that pc-1 of the trampoline is inside. */
	section(LIBC, ".text", &text, &size);
	fd = open(LIBC, O_RDONLY);
	assert_true(fd >= 0);
	/* .text's file offset equals its address minus the first PT_LOAD's delta, 0 here. */
	off = tl.signal_start + 1;
	assert_int_equal(pread(fd, code, sizeof(code), (off_t)off), (ssize_t)sizeof(code));
	close(fd);
	assert_memory_equal(code, restore_rt, sizeof(code));
	assert_int_equal(unwind_table__find(t, &r, tl.signal_start + 1), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_SIGNAL);
	assert_int_equal(unwind_table__find(t, &r, tl.signal_start), 0);
	assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_SIGNAL);
	unwind_table__free(t);
}

static void *slurp(const char *path, size_t *size)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

/* File offset and size of .eh_frame, from libelf. */
static void eh_frame_at(const uint8_t *img, size_t size, uint64_t *off, uint64_t *len)
{
	Elf *elf = elf_memory((char *)img, size);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	*off = *len = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		gelf_getshdr(scn, &sh);
		if (strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".eh_frame") == 0) {
			*off = sh.sh_offset;
			*len = sh.sh_size;
		}
	}
	elf_end(elf);
	assert_true(*len > 64);
}

static void test_unwind_table__mem_equals_fd(void **state)
{
	size_t size;
	uint8_t *img = slurp(cold_bin, &size);
	struct unwind_table *a = build_ok(cold_bin), *b = NULL;
	const struct prof_unwind_row *ra, *rb;
	uint32_t na, nb;

	assert_int_equal(unwind_table__build_mem(&b, img, size, NULL), 0);
	ra = unwind_table__rows(a, &na);
	rb = unwind_table__rows(b, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(ra, rb, na * sizeof(*ra));
	assert_int_equal(unwind_table__base(a), unwind_table__base(b));
	unwind_table__free(a);
	unwind_table__free(b);
	free(img);
}

static void test_unwind_table__cfi_section_equals_fd(void **state)
{
	size_t size;
	uint8_t *img = slurp(cold_bin, &size);
	struct unwind_table *a = build_ok(cold_bin), *b = NULL;
	const struct prof_unwind_row *ra, *rb;
	uint64_t off, len, addr, sz;
	uint32_t na, nb;

	/* The section's bytes alone, with its address: the same table (the vDSO's path). */
	eh_frame_at(img, size, &off, &len);
	section(cold_bin, ".eh_frame", &addr, &sz);
	assert_int_equal(sz, len);
	assert_int_equal(unwind_table__build_cfi(&b, img + off, len, addr, false, NULL), 0);
	ra = unwind_table__rows(a, &na);
	rb = unwind_table__rows(b, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(ra, rb, na * sizeof(*ra));
	assert_int_equal(unwind_table__base(a), unwind_table__base(b));
	unwind_table__free(b);
	/* One byte short: the last record no longer fits. */
	assert_int_equal(unwind_table__build_cfi(&b, img + off, len - 1, addr, false, NULL),
			 -EBADMSG);
	assert_null(b);
	unwind_table__free(a);
	free(img);
}

static void test_unwind_table__no_section_headers(void **state)
{
	size_t size;
	uint8_t *img = slurp(LIBC, &size);
	struct unwind_table *a = build_ok(LIBC), *b = NULL;
	const struct prof_unwind_row *ra, *rb;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	uint32_t na, nb;

	/* Section headers gone (sstrip): .eh_frame is found through PT_GNU_EH_FRAME. */
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	assert_int_equal(unwind_table__build_mem(&b, img, size, NULL), 0);
	assert_int_equal(unwind_table__source(b), UNWIND_TABLE_EH_FRAME);
	ra = unwind_table__rows(a, &na);
	rb = unwind_table__rows(b, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(ra, rb, na * sizeof(*ra));
	assert_int_equal(unwind_table__base(a), unwind_table__base(b));
	unwind_table__free(a);
	unwind_table__free(b);
	free(img);
}

static void test_unwind_table__garbage_eh_frame_refused(void **state)
{
	struct unwind_table *t = NULL;
	uint64_t off, len;
	size_t size;
	uint8_t *img = slurp(cold_bin, &size);
	uint8_t *orig = malloc(size);

	assert_non_null(orig);
	memcpy(orig, img, size);
	eh_frame_at(img, size, &off, &len);
	/* The first CIE's length runs past the section. */
	img[off] = 0xf0;
	img[off + 1] = 0xff;
	img[off + 2] = 0xff;
	img[off + 3] = 0x7f;
	t = (struct unwind_table *)1;
	assert_int_equal(unwind_table__build_mem(&t, img, size, NULL), -EBADMSG);
	assert_null(t);
	/* Garbage bytes all over the section. */
	memcpy(img, orig, size);
	for (uint64_t i = 0; i < len; i++)
		img[off + i] = (uint8_t)(i * 151 + 7);
	assert_int_equal(unwind_table__build_mem(&t, img, size, NULL), -EBADMSG);
	assert_null(t);
	/* The file cut in the middle of .eh_frame: libelf refuses the section, nothing is read. */
	memcpy(img, orig, size);
	assert_int_equal(unwind_table__build_mem(&t, img, (size_t)(off + len / 2), NULL), -ENODATA);
	assert_null(t);
	/* Not an ELF file at all. */
	assert_int_equal(unwind_table__build_mem(&t, "hello", 5, NULL), -ENOEXEC);
	free(orig);
	free(img);
}

static void test_unwind_table__caps_refuse(void **state)
{
	struct unwind_table_opts rows = {.max_rows = 100}, bytes = {.max_bytes = 1024};
	struct unwind_table *t;
	int err;

	t = build(LIBC, &rows, &err);
	assert_int_equal(err, -E2BIG);
	assert_null(t);
	t = build(LIBC, &bytes, &err);
	assert_int_equal(err, -EFBIG);
	assert_null(t);
}

/* ---- FDEs out of order and overlapping: the merge of the builder against a plain sort ---- */

struct synth_row {
	uint64_t pc;
	uint32_t seq;
	int cfa8; /* CFA = rsp + cfa8 * 8; 0: an FDE's end (no information) */
};

static int cmp_synth(const void *pa, const void *pb)
{
	const struct synth_row *a = pa, *b = pb;

	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	if (!a->cfa8 != !b->cfa8)
		return !a->cfa8 ? -1 : 1; /* an end loses against a row starting at the same pc */
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/*
 * Random .debug_frame sections (one CIE: CFA = rsp + 8, RA at CFA - 8; FDEs in random order,
 * some spanning many others, each raising the CFA offset a few times) built by the table
 * builder and looked up at every pc, against the rule its rows are sorted by: at each pc the
 * last row (by emission) wins, an FDE's end loses against another FDE's row there, and a pc
 * takes the row at or before it.  The builder merges the FDEs, which are runs in order, rather
 * than sorting its rows: this is where interleaved runs must come out as the sort has them.
 */
static void test_unwind_table__fdes_merged_as_sorted(void **state)
{
	enum { NFDE = 48, SPAN = 0x4000 };
	/* clang-format off */
	static const uint8_t cie[] = {
		16, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, /* length 16, the CIE id */
		1, 0, 1, 0x78, 16,		     /* version 1, "", code 1, data -8, RA 16 */
		0x0c, 7, 8,			     /* def_cfa rsp 8 */
		0x90, 1,			     /* offset r16 (RA) cfa-8 */
		0, 0,				     /* nop, to 20 bytes */
	};
	/* clang-format on */
	static uint8_t sec[20 + NFDE * 48];
	static struct synth_row rows[NFDE * 6];
	unsigned seed = 12345;

	for (int round = 0; round < 60; round++) {
		size_t off = sizeof(cie), nr = 0;
		struct unwind_table *t = NULL;
		uint32_t seq = 0;

		memcpy(sec, cie, sizeof(cie));
		for (int f = 0; f < NFDE; f++) {
			uint64_t pc, range, at;
			uint8_t *fde = sec + off, *ins;
			int cfa8 = 1, n;

			seed = seed * 1103515245 + 12345;
			pc = 0x10000 + (seed >> 8) % SPAN;
			seed = seed * 1103515245 + 12345;
			/* One in eight spans a quarter of the code or more. */
			range = (seed >> 8) % 8 == 0 ? SPAN / 4 + (seed >> 12) % SPAN
						     : 1 + (seed >> 12) % 96;
			put32(fde + 4, 0); /* the CIE at offset 0 */
			put64(fde + 8, pc);
			put64(fde + 16, range);
			ins = fde + 24;
			rows[nr++] = (struct synth_row){pc, seq++, cfa8};
			at = pc;
			seed = seed * 1103515245 + 12345;
			n = (int)((seed >> 8) % 4);
			for (int k = 0; k < n; k++) {
				unsigned adv;

				seed = seed * 1103515245 + 12345;
				adv = 1 + (seed >> 8) % 60;
				if (at + adv >= pc + range)
					break;
				at += adv;
				cfa8++;
				*ins++ = 0x40 | adv;	      /* advance_loc */
				*ins++ = 0x0e;		      /* def_cfa_offset */
				*ins++ = (uint8_t)(cfa8 * 8); /* < 128: one uleb byte */
				rows[nr++] = (struct synth_row){at, seq++, cfa8};
			}
			while ((ins - fde) % 8)
				*ins++ = 0; /* nop */
			put32(fde, (uint32_t)(ins - fde - 4));
			off += (size_t)(ins - fde);
			rows[nr++] = (struct synth_row){pc + range, seq++, 0};
		}
		assert_int_equal(unwind_table__build_cfi(&t, sec, off, 0, true, NULL), 0);
		qsort(rows, nr, sizeof(rows[0]), cmp_synth);
		for (uint64_t pc = 0x10000; pc < 0x10000 + 2 * SPAN + 0x100; pc++) {
			struct prof_unwind_row r;
			int want = 0, err;

			/* The last row at or before pc, in the sorted order. */
			for (size_t i = 0; i < nr && rows[i].pc <= pc; i++)
				want = rows[i].cfa8;
			err = unwind_table__find(t, &r, pc);
			if (!want) {
				assert_int_equal(err, -ENOENT);
				continue;
			}
			assert_int_equal(err, 0);
			assert_int_equal(prof_unwind_row__cfa(&r), PROF_UNWIND_CFA_RSP);
			assert_int_equal(r.cfa_off, want);
		}
		unwind_table__free(t);
	}
}

static void test_unwind_table__search_matches_linear(void **state)
{
	struct unwind_table *t = build_ok(LIBC);
	const struct prof_unwind_row *rows;
	uint32_t nr, last;

	rows = unwind_table__rows(t, &nr);
	assert_true(nr > 1000);
	last = rows[nr - 1].pc;
	/* Sorted, strictly increasing, merged, ends with "no information". */
	for (uint32_t i = 1; i < nr; i++) {
		assert_true(rows[i - 1].pc < rows[i].pc);
		assert_true(rows[i - 1].kinds != rows[i].kinds ||
			    rows[i - 1].cfa_off != rows[i].cfa_off ||
			    rows[i - 1].rbp_off != rows[i].rbp_off);
	}
	assert_int_equal(prof_unwind_row__cfa(&rows[nr - 1]), PROF_UNWIND_CFA_NONE);
	srandom(1);
	for (int k = 0; k < 20000; k++) {
		uint32_t pc = (uint32_t)(random() % (last + 64));
		long want = -1;

		for (uint32_t i = 0; i < nr && rows[i].pc <= pc; i++)
			want = i;
		assert_int_equal(prof_unwind__search(rows, nr, pc), want);
	}
	assert_int_equal(prof_unwind__search(rows, 0, 5), -1);
	unwind_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_table__fixture_matches_readelf),
		cmocka_unit_test(test_unwind_table__plt_rows),
		cmocka_unit_test(test_unwind_table__cold_part),
		cmocka_unit_test(test_unwind_table__cold_part_every_pc),
		cmocka_unit_test(test_unwind_table__start_is_stop),
		cmocka_unit_test(test_unwind_table__stack_realignment),
		cmocka_unit_test(test_unwind_table__stackrealign_and16_main),
		cmocka_unit_test(test_unwind_table__debug_frame),
		cmocka_unit_test(test_unwind_table__libc_matches_readelf),
		cmocka_unit_test(test_unwind_table__libc_restore_rt_is_signal_frame),
		cmocka_unit_test(test_unwind_table__debian_libraries_match_readelf),
		cmocka_unit_test(test_unwind_table__mem_equals_fd),
		cmocka_unit_test(test_unwind_table__cfi_section_equals_fd),
		cmocka_unit_test(test_unwind_table__no_section_headers),
		cmocka_unit_test(test_unwind_table__garbage_eh_frame_refused),
		cmocka_unit_test(test_unwind_table__caps_refuse),
		cmocka_unit_test(test_unwind_table__search_matches_linear),
		cmocka_unit_test(test_unwind_table__fdes_merged_as_sorted),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
