// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Where an ELF file keeps its call-frame information (unwind_table.h): .eh_frame, else
 * .debug_frame (inflated when compressed, capped by the size its header announces), else the
 * .eh_frame that PT_GNU_EH_FRAME points to in a file without section headers.  The bytes found
 * go to the CFI reader (unwind_table.c).
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_table.h"

/* A CFI section's bytes and address (the base of pc-relative pointers). */
struct sec {
	const void *data;
	size_t size;
	uint64_t vaddr;
};

/* .eh_frame / .debug_frame of elf; -ENODATA when absent or empty. */
static int find_sec(Elf *elf, const char *name, struct sec *out, uint64_t max_bytes)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return -ENODATA;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name) != 0)
			continue;
		if (sh.sh_size > max_bytes)
			return -EFBIG;
		if (sh.sh_flags & SHF_COMPRESSED) {
			/* Debug files compress .debug_frame; the cap applies to the size the header
			 * announces, before anything is inflated (libelf inflates exactly that). */
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch))
				return -EBADMSG;
			if (ch.ch_size > max_bytes)
				return -EFBIG;
			if (elf_compress(scn, 0, 0) < 0 || !gelf_getshdr(scn, &sh))
				return -EBADMSG;
			d = elf_getdata(scn, NULL);
		} else {
			/* libelf checks that the section lies inside the file. */
			d = elf_rawdata(scn, NULL);
		}
		if (!d || !d->d_buf || d->d_size == 0 || d->d_size != sh.sh_size)
			return -ENODATA;
		out->data = d->d_buf;
		out->size = d->d_size;
		out->vaddr = sh.sh_addr;
		return 0;
	}
	return -ENODATA;
}

/*
 * .eh_frame of a file without section headers (sstripped), found as the loader finds it:
 * PT_GNU_EH_FRAME → .eh_frame_hdr → its eh_frame_ptr.  The section's size is not recorded
 * anywhere, so it runs to the end of the PT_LOAD segment that holds it (capped); the scan stops
 * at .eh_frame's zero terminator.
 */
static int find_eh_frame_phdr(Elf *elf, struct sec *out, uint64_t max_bytes)
{
	GElf_Phdr hdr = {0}, ph;
	Elf_Data *d;
	uint64_t ptr;
	size_t n;
	int err;

	if (elf_getphdrnum(elf, &n) != 0)
		return -ENODATA;
	for (size_t i = 0; i < n; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			hdr = ph;
	if (hdr.p_type != PT_GNU_EH_FRAME || hdr.p_filesz < 4 || hdr.p_filesz > max_bytes)
		return -ENODATA;
	/* libelf checks that the chunk lies inside the file. */
	d = elf_getdata_rawchunk(elf, (int64_t)hdr.p_offset, hdr.p_filesz, ELF_T_BYTE);
	if (!d || !d->d_buf)
		return -ENODATA;
	err = unwind_table__eh_frame_ptr(&ptr, d->d_buf, d->d_size, hdr.p_vaddr);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		uint64_t off, len;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || ptr < ph.p_vaddr ||
		    ptr - ph.p_vaddr >= ph.p_filesz)
			continue;
		off = ph.p_offset + (ptr - ph.p_vaddr);
		len = ph.p_filesz - (ptr - ph.p_vaddr);
		if (len > max_bytes)
			len = max_bytes;
		d = elf_getdata_rawchunk(elf, (int64_t)off, len, ELF_T_BYTE);
		if (!d || !d->d_buf)
			return -ENODATA;
		*out = (struct sec){d->d_buf, d->d_size, ptr};
		return 0;
	}
	return -ENODATA;
}

/* The table of the first of .eh_frame, .debug_frame, PT_GNU_EH_FRAME's .eh_frame with an FDE. */
static int build_elf(struct unwind_table **out, Elf *elf, const struct unwind_table_opts *opts)
{
	uint64_t max_bytes = opts && opts->max_bytes ? opts->max_bytes : UNWIND_TABLE_MAX_BYTES;
	struct sec s;
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -ENOEXEC;
	err = find_sec(elf, ".eh_frame", &s, max_bytes);
	if (!err)
		err = unwind_table__build_cfi(out, s.data, s.size, s.vaddr, false, opts);
	if (err == -ENODATA) {
		err = find_sec(elf, ".debug_frame", &s, max_bytes);
		if (!err)
			err = unwind_table__build_cfi(out, s.data, s.size, s.vaddr, true, opts);
	}
	if (err == -ENODATA) {
		err = find_eh_frame_phdr(elf, &s, max_bytes);
		if (!err)
			err = unwind_table__build_cfi(out, s.data, s.size, s.vaddr, false, opts);
	}
	return err;
}

int unwind_table__build(struct unwind_table **out, int fd, const struct unwind_table_opts *opts)
{
	Elf *elf;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* Read, not mmapped: a file its owner truncates under us must not raise SIGBUS. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	err = build_elf(out, elf, opts);
	elf_end(elf);
	return err;
}

int unwind_table__build_mem(struct unwind_table **out, const void *image, size_t size,
			    const struct unwind_table_opts *opts)
{
	char *copy = NULL;
	Elf *elf = NULL;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE || size == 0)
		return -ENOEXEC;
	/* libelf may convert headers in place; the caller's image stays untouched. */
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, size);
	elf = elf_memory(copy, size);
	if (!elf) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = build_elf(out, elf, opts);
cleanup:
	elf_end(elf);
	free(copy);
	return err;
}
