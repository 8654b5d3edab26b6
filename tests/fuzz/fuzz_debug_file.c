// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A debug file fetched from a debuginfod server: foreign bytes, read with the limits of a
 * target's own files (elf_file__use_debug_file), and its line tables (dwlines).  The
 * file it is for is the stripped symfix fixture with its build-id note renamed: a file without a
 * build id takes a debug file of any, so mutations reach the symbol table (the fixture's build id
 * differs per checkout: its debug info names the build directory).  An input holding ALT_MAGIC
 * is two files: the debug file before it, and after it dwz's alternate file, written where the
 * dwz fixtures' links name it (.dwz/dwzfix-common.debug next to the debug file), so that the link,
 * the path search under the debug directory, the build-id check and the names read through
 * ref_alt / strp_alt all run on foreign bytes; the alternate file is also read unchecked.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/dwarf_lines.h"
#include "sym/elf_file.h"

#define BASE	  "build/fixtures/symfix-stripped"
#define ALT_MAGIC "\0DWZALT\0"

static char dir[64], file[96], base[96], altdir[96], alt[128];

static void cleanup(void)
{
	unlink(file);
	unlink(base);
	unlink(alt);
	rmdir(altdir);
	rmdir(dir);
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
}

/* Every line and inlined call of d the harness probes: bounded, named when returned. */
static void probe(struct dwlines *d)
{
	for (uint64_t a = 0x1000; a < 0x3000; a += 0x10) {
		struct dwlines_frame fr[8];
		const char *src;
		unsigned n;
		int line;

		if (!dwlines__lookup(d, a, &src, &line) && (line <= 0 || strlen(src) >= 4096))
			__builtin_trap();
		if (dwlines__inlined(d, a, fr, 8, &n))
			continue;
		if (!n || n > 8 || fr[n - 1].name)
			__builtin_trap();
		for (unsigned k = 0; k + 1 < n; k++)
			if (!fr[k].name || !fr[k].name[0])
				__builtin_trap();
	}
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
	snprintf(altdir, sizeof(altdir), "%s/.dwz", dir);
	snprintf(alt, sizeof(alt), "%s/dwzfix-common.debug", altdir);
	if (mkdir(altdir, 0700))
		abort();
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
	const uint8_t *sep = memmem(data, size, ALT_MAGIC, sizeof(ALT_MAGIC) - 1);
	size_t main_size = sep ? (size_t)(sep - data) : size;
	int err;

	write_file(file, data, main_size);
	if (sep)
		write_file(alt, sep + sizeof(ALT_MAGIC) - 1,
			   size - main_size - (sizeof(ALT_MAGIC) - 1));
	else
		unlink(alt);
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
	/* Its .debug_line programs and inlined calls, as the symbolizer looks up a frame's. */
	if (!dwlines__open(&d, file, dir)) {
		probe(d);
		dwlines__free(d);
	}
	if (sep) {
		int fd = open(file, O_RDONLY), alt_fd = open(alt, O_RDONLY);

		if (fd < 0 || alt_fd < 0)
			abort();
		if (!dwlines__open_alt(&d, fd, alt_fd)) {
			probe(d);
			dwlines__free(d);
		}
		close(fd);
		close(alt_fd);
	}
	return 0;
}
