// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An ELF file a target maps (its executable, its libraries, the vDSO): symbols, build id,
 * program headers, notes, .gnu_debuglink.  Opened from memory (the vDSO path) and from a file
 * (the path with a debug-file search), then looked up as the symbolizer and the attach code do;
 * and --heap's static-executable check (PT_INTERP) on the same file.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/elf_file.h"
#include "attach/heap_attach.h"
#include "attach/prologue.h"

static char dir[64], file[96], debug[96];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_dir(void)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(dir, sizeof(dir), "/tmp/prof-fuzz-elf.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(file, sizeof(file), "%s/in.elf", dir);
	snprintf(debug, sizeof(debug), "%s/debug", dir);
	if (mkdir(debug, 0700))
		abort();
	atexit(remove_dir);
	return 0;
}

static uint64_t u64_at(const uint8_t *data, size_t size, size_t off)
{
	uint64_t v = 0;

	if (off < size)
		memcpy(&v, data + off, size - off < sizeof(v) ? size - off : sizeof(v));
	return v;
}

static void exercise(const struct elf_file *ef, const uint8_t *data, size_t size, bool from_file)
{
	/* e_entry, and an address from the input's tail: the fuzzer steers both. */
	const uint64_t addrs[] = {u64_at(data, size, 24), u64_at(data, size, size - 8), 0,
				  UINT64_MAX};
	static const char *const names[] = {"main", "malloc", "free", "_start"};
	const struct elf_sym *s;
	struct elf_func fn;
	uint64_t v, off;
	uint8_t code[16];

	if (strlen(elf_file__build_id(ef)) % 2)
		__builtin_trap();
	elf_file__type(ef);
	elf_file__syms(ef);
	elf_file__debug_path(ef);
	if (elf_file__has_symbols(ef) != (elf_file__symbol_count(ef) != 0))
		__builtin_trap();
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		s = elf_file__lookup(ef, addrs[i]);
		if (s) {
			if (addrs[i] < s->addr || addrs[i] - s->addr >= s->size)
				__builtin_trap();
			if (!elf_file__find_symbol(ef, &fn, s->name) && from_file &&
			    !elf_file__read_at(ef, code, sizeof(code), fn.file_offset))
				prologue__probe_offset(code, sizeof(code));
		}
		elf_file__file_offset(ef, &off, addrs[i]);
		elf_file__vaddr(ef, &v, addrs[i], addrs[i] & ~0xfffull, addrs[i] & 0xfff000);
		elf_file__vaddr(ef, &v, addrs[i], 0, 0);
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		elf_file__find_symbol(ef, &fn, names[i]);
}

static int write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	return done == size ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct elf_file_opts opts = {.debug_dir = debug};
	struct elf_file *ef = NULL;
	char copy[256] = "";
	bool mem_ok = false;
	int err;

	if (!elf_file__open_mem(&ef, data, size)) {
		mem_ok = true;
		const char *id = elf_file__build_id(ef);

		exercise(ef, data, size, false);
		/* The same bytes as the debug file of its own build id: a debug search that
		 * finds a candidate. */
		if (strlen(id) > 2 && strlen(id) < 128) {
			char sub[160];

			snprintf(sub, sizeof(sub), "%s/.build-id", debug);
			mkdir(sub, 0700);
			snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", debug, id);
			mkdir(sub, 0700);
			snprintf(copy, sizeof(copy), "%s/%s.debug", sub, id + 2);
			if (write_file(copy, data, size))
				copy[0] = '\0';
		}
		elf_file__free(ef);
	}
	if (!write_file(file, data, size)) {
		err = elf_file__open(&ef, file, &opts);
		/* The same bytes from a file: a debug-file search (whatever the file's debuglink
		 * or build id names) may add symbols, never lose the file. */
		if (mem_ok && err)
			__builtin_trap();
		if (!err) {
			exercise(ef, data, size, true);
			elf_file__free(ef);
		}
		/* The --heap check for a static executable: its program headers. */
		heap_attach__is_static(file);
	}
	if (copy[0])
		unlink(copy);
	return 0;
}
