// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/otel_notes.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NT_STAPSDT	3
#define STAPSDT_SECTION ".note.stapsdt"

static size_t align4(size_t v)
{
	return (v + 3) & ~(size_t)3;
}

/* The NUL-terminated string at *pos in [0, end), or NULL; *pos moves past it. */
static const char *str_at(const uint8_t *desc, size_t end, size_t *pos)
{
	const uint8_t *s, *nul;

	if (*pos >= end)
		return NULL;
	s = desc + *pos;
	nul = memchr(s, 0, end - *pos);
	if (!nul)
		return NULL;
	*pos += (size_t)(nul - s) + 1;
	return (const char *)s;
}

/*
 * The bit of provider:probe (enum otel_notes_probe; 0 for another otel_memory probe, whose site
 * is checked all the same), or -1 when it is none of ours.
 */
static int probe_bit(const char *provider, const char *probe)
{
	if (!strcmp(provider, "otel_memory"))
		return !strcmp(probe, "alloc")	? OTEL_NOTES_ALLOC
		       : !strcmp(probe, "free") ? OTEL_NOTES_FREE
						: 0;
	if (!strcmp(provider, "bpftrace_prof") && !strcmp(probe, "sampler_lost"))
		return OTEL_NOTES_LOST;
	return -1;
}

/* The probes named, and the sites (link-time addresses) of up to max of them in pcs[*npcs]. */
static unsigned scan(const uint8_t *data, size_t len, uint64_t *pcs, size_t max, size_t *npcs)
{
	unsigned found = 0;
	size_t off = 0;

	/* Elf64_Nhdr: namesz, descsz, type; the name and the desc each padded to 4 bytes. */
	while (len - off >= sizeof(Elf64_Nhdr)) {
		Elf64_Nhdr nh;
		size_t name_off, desc_off, pos;
		const char *provider, *probe;
		int bit;

		memcpy(&nh, data + off, sizeof(nh));
		name_off = off + sizeof(nh);
		if (nh.n_namesz > len - name_off)
			break;
		desc_off = name_off + align4(nh.n_namesz);
		if (desc_off > len || nh.n_descsz > len - desc_off)
			break;
		/* pc, link-time base, semaphore; then provider, name and arguments. */
		if (nh.n_type == NT_STAPSDT && nh.n_namesz == sizeof("stapsdt") &&
		    !memcmp(data + name_off, "stapsdt", sizeof("stapsdt")) &&
		    nh.n_descsz > 3 * sizeof(uint64_t)) {
			pos = 3 * sizeof(uint64_t);
			provider = str_at(data + desc_off, nh.n_descsz, &pos);
			probe = provider ? str_at(data + desc_off, nh.n_descsz, &pos) : NULL;
			bit = probe ? probe_bit(provider, probe) : -1;
			if (bit >= 0) {
				found |= (unsigned)bit;
				if (pcs && *npcs < max)
					memcpy(&pcs[(*npcs)++], data + desc_off, sizeof(*pcs));
			}
		}
		off = desc_off + align4(nh.n_descsz);
		if (off > len)
			break;
	}
	return found;
}

unsigned otel_notes__scan(const uint8_t *data, size_t len)
{
	return scan(data, len, NULL, 0, NULL);
}

/*
 * Is any of the sites a 5-byte nop (0f 1f 44 00 00)?  Found in the file through the loadable
 * segment holding it.  Linux 6.18 turns a uprobe on such a nop into a call: it writes below %rsp
 * (a leaf function's red zone) and a child forked after the site was turned crashes on it.
 */
static int any_nop5(bool *out, const Elf64_Ehdr *eh, const uint64_t *pcs, size_t n,
		    otel_notes_read_fn read, void *ctx, uint64_t size)
{
	static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

	*out = false;
	if (!eh->e_phnum) /* nothing loadable: no site is in a process */
		return 0;
	if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum > OTEL_NOTES_MAX_SECTIONS)
		return -ENOEXEC;
	for (uint32_t i = 0; i < eh->e_phnum && !*out; i++) {
		uint64_t off = eh->e_phoff + (uint64_t)i * sizeof(Elf64_Phdr);
		Elf64_Phdr ph;
		int err;

		if (off > size || sizeof(ph) > size - off)
			return -ENOEXEC;
		err = read(ctx, &ph, sizeof(ph), off);
		if (err)
			return err;
		if (ph.p_type != PT_LOAD || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			continue;
		for (size_t k = 0; k < n && !*out; k++) {
			uint8_t b[sizeof(nop5)];

			if (pcs[k] < ph.p_vaddr || pcs[k] - ph.p_vaddr > ph.p_filesz ||
			    ph.p_filesz - (pcs[k] - ph.p_vaddr) < sizeof(b))
				continue;
			err = read(ctx, b, sizeof(b), ph.p_offset + (pcs[k] - ph.p_vaddr));
			if (err)
				return err;
			*out = !memcmp(b, nop5, sizeof(b));
		}
	}
	return 0;
}

/* Section i's header. */
static int shdr_at(Elf64_Shdr *out, const Elf64_Ehdr *eh, uint32_t i, otel_notes_read_fn read,
		   void *ctx, uint64_t size)
{
	uint64_t off = eh->e_shoff + (uint64_t)i * sizeof(*out);

	if (off > size || sizeof(*out) > size - off)
		return -ENOEXEC;
	return read(ctx, out, sizeof(*out), off);
}

int otel_notes__read(unsigned *out, otel_notes_read_fn read, void *ctx, uint64_t size)
{
	static const char want[] = STAPSDT_SECTION;
	uint64_t pcs[OTEL_NOTES_MAX_SITES];
	uint8_t *data = NULL;
	size_t npcs = 0;
	bool nop5 = false;
	Elf64_Shdr strtab, sh;
	Elf64_Ehdr eh;
	char name[sizeof(want)];
	int err;

	*out = 0;
	if (size < sizeof(eh))
		return -ENOEXEC;
	err = read(ctx, &eh, sizeof(eh), 0);
	if (err)
		return err;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    eh.e_shnum > OTEL_NOTES_MAX_SECTIONS || eh.e_shstrndx >= eh.e_shnum)
		return -ENOEXEC;
	err = shdr_at(&strtab, &eh, eh.e_shstrndx, read, ctx, size);
	if (err)
		return err;
	for (uint32_t i = 0; i < eh.e_shnum; i++) {
		err = shdr_at(&sh, &eh, i, read, ctx, size);
		if (err)
			return err;
		if (sh.sh_type != SHT_NOTE || sh.sh_name >= strtab.sh_size ||
		    strtab.sh_size - sh.sh_name < sizeof(want) || strtab.sh_offset > size ||
		    strtab.sh_offset + sh.sh_name > size - sizeof(want))
			continue;
		err = read(ctx, name, sizeof(name), strtab.sh_offset + sh.sh_name);
		if (err)
			return err;
		if (memcmp(name, want, sizeof(want)))
			continue;
		if (sh.sh_size > OTEL_NOTES_MAX_BYTES)
			return -EFBIG;
		if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			return -ENOEXEC;
		data = malloc(sh.sh_size ? sh.sh_size : 1);
		if (!data)
			return -ENOMEM;
		err = read(ctx, data, sh.sh_size, sh.sh_offset);
		if (!err)
			*out = scan(data, sh.sh_size, pcs, OTEL_NOTES_MAX_SITES, &npcs);
		free(data);
		if (!err && npcs) {
			/* Sites that cannot be read are not attached either. */
			err = any_nop5(&nop5, &eh, pcs, npcs, read, ctx, size);
			if (err)
				*out = 0;
			else if (nop5)
				*out |= OTEL_NOTES_NOP5;
		}
		return err;
	}
	return 0;
}

static int read_fd(void *ctx, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(*(int *)ctx, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int otel_notes__fd(unsigned *out, int fd)
{
	struct stat st;

	*out = 0;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	return otel_notes__read(out, read_fd, &fd, (uint64_t)st.st_size);
}
