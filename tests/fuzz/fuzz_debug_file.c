// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A debug file fetched from a debuginfod server: foreign bytes, read with the limits of a
 * target's own files (elf_file__use_debug_file), and its line tables (dwlines).  The
 * file it is for is the stripped symfix fixture with its build-id note renamed: a file without a
 * build id takes a debug file of any, so mutations reach the symbol table (the fixture's build id
 * differs per checkout: its debug info names the build directory).
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/dwarf_lines.h"
#include "sym/elf_file.h"

#define BASE "build/fixtures/symfix-stripped"

static char dir[64], file[96], base[96];

static void cleanup(void)
{
	unlink(file);
	unlink(base);
	rmdir(dir);
}

/* BASE without its NT_GNU_BUILD_ID note (its type changed), written to base. */
static void write_base(void)
{
	static const uint8_t gnu[] = {4, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 'G', 'N', 'U', 0};
	FILE *f = fopen(BASE, "rb");
	uint8_t *b = malloc(1 << 20);
	size_t n;

	if (!f || !b)
		abort();
	n = fread(b, 1, 1 << 20, f);
	fclose(f);
	for (size_t i = 0; i + sizeof(gnu) <= n; i++)
		if (!memcmp(b + i, gnu, sizeof(gnu)))
			b[i + 8] = 0x7f;
	f = fopen(base, "wb");
	if (!f || fwrite(b, 1, n, f) != n)
		abort();
	fclose(f);
	free(b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct elf_file *ef;

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/tmp/prof-fuzz-dbg.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(file, sizeof(file), "%s/in.debug", dir);
	snprintf(base, sizeof(base), "%s/base", dir);
	atexit(cleanup);
	/* Run from the top of the tree, after `make build/fixtures/symfix-stripped`. */
	write_base();
	if (elf_file__open(&ef, base, &(struct elf_file_opts){.debug_dir = ""}) ||
	    elf_file__build_id(ef)[0])
		abort();
	elf_file__free(ef);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_file *ef;
	struct dwlines *d;
	const struct elf_sym *s;
	FILE *f = fopen(file, "wb");
	int err;

	if (!f || fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	if (elf_file__open(&ef, base, &(struct elf_file_opts){.debug_dir = ""}))
		abort();
	err = elf_file__use_debug_file(ef, file);
	if (err && elf_file__syms(ef) == ELF_FILE_SYMS_DEBUG_FILE)
		__builtin_trap(); /* a refused file changes nothing */
	if (!err && (elf_file__syms(ef) != ELF_FILE_SYMS_DEBUG_FILE || !elf_file__has_symbols(ef)))
		__builtin_trap();
	for (uint64_t a = 0x1000; a < 0x3000; a += 0x40) {
		s = elf_file__lookup(ef, a);
		if (s && (a < s->addr || a - s->addr >= s->size))
			__builtin_trap();
	}
	elf_file__bytes(ef);
	elf_file__free(ef);
	/* Its .debug_line programs, as the symbolizer looks up a frame's line. */
	if (!dwlines__open(&d, file, NULL)) {
		for (uint64_t a = 0x1000; a < 0x3000; a += 0x10) {
			const char *src;
			int line;

			if (!dwlines__lookup(d, a, &src, &line) &&
			    (line <= 0 || strlen(src) >= 4096))
				__builtin_trap();
		}
		dwlines__free(d);
	}
	return 0;
}
