// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "attach/otel_notes.h"

/* One stapsdt note for provider:probe at out; its size. */
static size_t put_note(uint8_t *out, const char *provider, const char *probe, uint32_t type)
{
	Elf64_Nhdr nh = {.n_namesz = 8, .n_type = type};
	size_t pl = strlen(provider) + 1, nl = strlen(probe) + 1, off;

	nh.n_descsz = (uint32_t)(24 + pl + nl + 1); /* pc, base, semaphore; names; empty args */
	memcpy(out, &nh, sizeof(nh));
	memcpy(out + 12, "stapsdt", 8);
	memset(out + 20, 0, 24);
	memcpy(out + 44, provider, pl);
	memcpy(out + 44 + pl, probe, nl);
	out[44 + pl + nl] = 0;
	off = 20 + ((nh.n_descsz + 3) & ~3u);
	return off;
}

static void test_otel_notes__finds_alloc_and_free(void **state)
{
	uint8_t buf[512] = {0};
	size_t n = 0;

	(void)state;
	n += put_note(buf + n, "libc", "memory_malloc_retry", 3);
	n += put_note(buf + n, "otel_memory", "alloc", 3);
	assert_int_equal(otel_notes__scan(buf, n), OTEL_NOTES_ALLOC);
	n += put_note(buf + n, "otel_memory", "free", 3);
	assert_int_equal(otel_notes__scan(buf, n), OTEL_NOTES_BOTH);
	/* our sampler's loss probe, by provider and name */
	n += put_note(buf + n, "otel_memory", "sampler_lost", 3);
	n += put_note(buf + n, "bpftrace_prof", "sampler_gone", 3);
	assert_int_equal(otel_notes__scan(buf, n), OTEL_NOTES_BOTH);
	n += put_note(buf + n, "bpftrace_prof", "sampler_lost", 3);
	assert_int_equal(otel_notes__scan(buf, n), OTEL_NOTES_BOTH | OTEL_NOTES_LOST);
}

static void test_otel_notes__other_types_and_cut_notes_ignored(void **state)
{
	uint8_t buf[512] = {0};
	size_t n;

	(void)state;
	n = put_note(buf, "otel_memory", "alloc", 1); /* not NT_STAPSDT */
	assert_int_equal(otel_notes__scan(buf, n), 0);
	n = put_note(buf, "otel_memory", "alloc", 3);
	/* cut inside its desc: the note is not whole, nothing is read past the end */
	assert_int_equal(otel_notes__scan(buf, n - 8), 0);
	/* the provider without its NUL inside the desc */
	memset(buf + 44, 'x', n - 44);
	assert_int_equal(otel_notes__scan(buf, n), 0);
}

struct mem {
	const uint8_t *data;
	size_t size;
};

static int read_mem(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct mem *m = ctx;

	if (off > m->size || len > m->size - off)
		return -EIO;
	memcpy(buf, m->data + off, len);
	return 0;
}

/* A minimal ELF64 file: null section, .shstrtab, .note.stapsdt with the two probes. */
static void test_otel_notes__reads_the_section_of_a_file(void **state)
{
	static const char names[] = "\0.shstrtab\0.note.stapsdt";
	uint8_t img[2048] = {0};
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Shdr sh[3] = {{0}};
	size_t notes_off = 256, notes_len = 0, shoff = 1024;
	struct mem m = {img, sizeof(img)};
	unsigned found = 9;

	(void)state;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_shoff = shoff;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	memcpy(img + 128, names, sizeof(names));
	sh[1] = (Elf64_Shdr){
		.sh_name = 1, .sh_type = SHT_STRTAB, .sh_offset = 128, .sh_size = sizeof(names)};
	notes_len += put_note(img + notes_off, "otel_memory", "free", 3);
	notes_len += put_note(img + notes_off + notes_len, "otel_memory", "alloc", 3);
	sh[2] = (Elf64_Shdr){
		.sh_name = 11, .sh_type = SHT_NOTE, .sh_offset = notes_off, .sh_size = notes_len};
	memcpy(img + shoff, sh, sizeof(sh));
	assert_int_equal(otel_notes__read(&found, read_mem, &m, sizeof(img)), 0);
	assert_int_equal(found, OTEL_NOTES_BOTH);
	/* the section past the end of the file: malformed, nothing found */
	sh[2].sh_offset = sizeof(img) - 8;
	memcpy(img + shoff, sh, sizeof(sh));
	assert_int_equal(otel_notes__read(&found, read_mem, &m, sizeof(img)), -ENOEXEC);
	assert_int_equal(found, 0);
	/* not ELF */
	img[0] = 0;
	assert_int_equal(otel_notes__read(&found, read_mem, &m, sizeof(img)), -ENOEXEC);
}

/* Real files built here: a nop5 site is told apart from <sys/sdt.h>'s one-byte nop. */
static void test_otel_notes__nop5_sites_told(void **state)
{
	static const struct {
		const char *path;
		unsigned want;
	} files[] = {
		{"build/targets/otel_nop5_nofp", OTEL_NOTES_BOTH | OTEL_NOTES_NOP5},
		{"build/targets/otel_probes", OTEL_NOTES_BOTH},
		{"build/libbpftrace-prof-sampler.so", OTEL_NOTES_BOTH | OTEL_NOTES_LOST},
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		unsigned found = 99;
		int fd = open(files[i].path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			fail_msg("%s: %s (make all)", files[i].path, strerror(errno));
		assert_int_equal(otel_notes__fd(&found, fd), 0);
		close(fd);
		if (found != files[i].want)
			fail_msg("%s: found %u, want %u", files[i].path, found, files[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otel_notes__finds_alloc_and_free),
		cmocka_unit_test(test_otel_notes__other_types_and_cut_notes_ignored),
		cmocka_unit_test(test_otel_notes__reads_the_section_of_a_file),
		cmocka_unit_test(test_otel_notes__nop5_sites_told),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
