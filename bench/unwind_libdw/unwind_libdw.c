// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The libdw alternative to user/unwind/unwind_table.c, kept only to measure it (README "Unwind
 * tables"): the same rows (include/prof_unwind.h kinds, merged, end-of-FDE rows) from
 * dwarf_getcfi_elf + dwarf_cfi_addrframe, FDE starts from .eh_frame_hdr's sorted table, each
 * row's end found by dwarf_frame_info.  Not built by the Makefile:
 *   cc -O2 -Iinclude -Iuser bench/unwind_libdw/unwind_libdw.c -ldw -lelf -o /tmp/unwind_libdw
 * Prints the same columns as bench/unwind_tables.c.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prof_unwind.h"

struct row {
	uint64_t pc;
	uint8_t kinds;
	int8_t rbp_off;
	int16_t cfa_off;
};

static struct row *rows;
static size_t nr, cap;

static void push(uint64_t pc, uint8_t kinds, int8_t rbp_off, int16_t cfa_off)
{
	if (nr && rows[nr - 1].kinds == kinds && rows[nr - 1].rbp_off == rbp_off &&
	    rows[nr - 1].cfa_off == cfa_off)
		return;
	if (nr && rows[nr - 1].pc == pc) {
		nr--;
	}
	if (nr == cap) {
		cap = cap ? cap * 2 : 4096;
		rows = realloc(rows, cap * sizeof(*rows));
		if (!rows)
			exit(1);
	}
	rows[nr++] = (struct row){pc, kinds, rbp_off, cfa_off};
}

static void frame_row(Dwarf_Frame *f, uint64_t pc, bool signal)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	uint8_t cfa = PROF_UNWIND_CFA_UNSUPPORTED, rbp = PROF_UNWIND_RBP_UNSUPPORTED;
	int64_t cfa_off = 0, rbp_off = 0;

	if (signal) {
		push(pc, PROF_UNWIND_CFA_SIGNAL, 0, 0);
		return;
	}
	if (dwarf_frame_register(f, 16, mem, &ops, &n) == 0 && n == 0 && ops == mem) {
		push(pc, PROF_UNWIND_CFA_STOP, 0, 0);
		return;
	}
	if (n != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst ||
	    (int64_t)ops[1].number != -8) {
		push(pc, PROF_UNWIND_CFA_UNSUPPORTED, 0, 0);
		return;
	}
	if (dwarf_frame_cfa(f, &ops, &n) == 0 && n >= 1) {
		/* libdw gives reg+off as DW_OP_bregx reg, off. */
		if (n == 1 && ops[0].atom == DW_OP_bregx && ops[0].number <= 7 &&
		    ops[0].number >= 6)
			cfa = ops[0].number == 7 ? PROF_UNWIND_CFA_RSP : PROF_UNWIND_CFA_RBP,
			cfa_off = (int64_t)ops[0].number2;
		else if (n == 1 && ops[0].atom == DW_OP_breg7)
			cfa = PROF_UNWIND_CFA_RSP, cfa_off = (int64_t)ops[0].number;
		else if (n == 1 && ops[0].atom == DW_OP_breg6)
			cfa = PROF_UNWIND_CFA_RBP, cfa_off = (int64_t)ops[0].number;
		else if (n == 2 && ops[1].atom == DW_OP_deref && ops[0].atom == DW_OP_breg6)
			cfa = PROF_UNWIND_CFA_DEREF_RBP, cfa_off = (int64_t)ops[0].number;
		else if (n == 9 && ops[0].atom == DW_OP_breg7 && ops[1].atom == DW_OP_breg16)
			cfa = PROF_UNWIND_CFA_PLT, cfa_off = (int64_t)ops[0].number;
	}
	if (dwarf_frame_register(f, 6, mem, &ops, &n) == 0) {
		if (n == 0)
			rbp = ops ? PROF_UNWIND_RBP_UNDEFINED : PROF_UNWIND_RBP_UNCHANGED;
		else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			 ops[1].atom == DW_OP_plus_uconst)
			rbp = PROF_UNWIND_RBP_CFA, rbp_off = (int64_t)ops[1].number;
		else if (n == 1 && ops[0].atom == DW_OP_breg6)
			rbp = PROF_UNWIND_RBP_DEREF_RBP, rbp_off = (int64_t)ops[0].number;
	}
	if (cfa == PROF_UNWIND_CFA_UNSUPPORTED || cfa_off % 8 || cfa_off / 8 < INT16_MIN ||
	    cfa_off / 8 > INT16_MAX) {
		push(pc, PROF_UNWIND_CFA_UNSUPPORTED, 0, 0);
		return;
	}
	if (rbp_off % 8 || rbp_off / 8 < INT8_MIN || rbp_off / 8 > INT8_MAX)
		rbp = PROF_UNWIND_RBP_UNSUPPORTED, rbp_off = 0;
	push(pc, (uint8_t)(cfa | rbp << 4), cfa == PROF_UNWIND_CFA_PLT ? 11 : (int8_t)(rbp_off / 8),
	     (int16_t)(cfa_off / 8));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* FDE initial locations from .eh_frame_hdr (pcrel eh_frame_ptr, udata4 count, datarel sdata4). */
static uint64_t *fde_starts(Elf *elf, size_t *count)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	elf_getshdrstrndx(elf, &shstrndx);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const uint8_t *p;
		uint32_t n;
		uint64_t *out;

		gelf_getshdr(scn, &sh);
		if (strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".eh_frame_hdr"))
			continue;
		d = elf_rawdata(scn, NULL);
		p = d->d_buf;
		if (p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 || p[3] != 0x3b)
			return NULL;
		memcpy(&n, p + 8, 4);
		out = calloc(n, sizeof(*out));
		for (uint32_t i = 0; i < n; i++) {
			int32_t loc;

			memcpy(&loc, p + 12 + 8 * i, 4);
			out[i] = sh.sh_addr + (int64_t)loc;
		}
		*count = n;
		return out;
	}
	return NULL;
}

/* User CPU time between two getrusage calls: unlike wall time, not inflated by uprobes that
 * other tools on this machine put on libc's malloc (their traps count as system time). */
static double user_ms(const struct rusage *a, const struct rusage *b)
{
	return (a->ru_utime.tv_sec - b->ru_utime.tv_sec) * 1e3 +
	       (a->ru_utime.tv_usec - b->ru_utime.tv_usec) / 1e3;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int one(const char *path, int runs)
{
	double best = 1e18;
	size_t nfde = 0;
	struct rusage before, after;

	getrusage(RUSAGE_SELF, &before);

	for (int r = 0; r < runs; r++) {
		double t0 = now_ms();
		int fd = open(path, O_RDONLY);
		Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
		Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
		uint64_t *starts = fde_starts(elf, &nfde);

		if (!cfi || !starts)
			return 1;
		nr = 0;
		for (size_t i = 0; i < nfde; i++) {
			uint64_t pc = starts[i], next = i + 1 < nfde ? starts[i + 1] : UINT64_MAX;

			while (pc < next) {
				Dwarf_Frame *f;
				Dwarf_Addr s, e;
				bool sig;

				if (dwarf_cfi_addrframe(cfi, pc, &f) != 0) {
					push(pc, PROF_UNWIND_CFA_NONE, 0, 0);
					break;
				}
				dwarf_frame_info(f, &s, &e, &sig);
				frame_row(f, pc, sig);
				free(f);
				if (e <= pc)
					break;
				pc = e;
			}
		}
		qsort(starts, nfde, sizeof(*starts), cmp_u64);
		free(starts);
		dwarf_cfi_end(cfi);
		elf_end(elf);
		close(fd);
		if (now_ms() - t0 < best)
			best = now_ms() - t0;
	}
	getrusage(RUSAGE_SELF, &after);
	printf("%-44s %9zu %11zu %6zu %7s %9.2f %8.2f %9ld\n", path, nr,
	       nr * sizeof(struct prof_unwind_row), nfde, "-", best,
	       user_ms(&after, &before) / runs, after.ru_maxrss - before.ru_maxrss);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	elf_version(EV_CURRENT);
	printf("%-44s %9s %11s %6s %7s %9s %8s %9s\n", "file (libdw)", "rows", "table_B", "fdes",
	       "unsupp", "build_ms", "user_ms", "peak+KiB");
	for (int i = 1; i < argc; i++) {
		int status;
		pid_t pid;

		fflush(stdout);
		pid = fork();

		if (pid == 0)
			_exit(one(argv[i], 5));
		waitpid(pid, &status, 0);
	}
	return 0;
}
