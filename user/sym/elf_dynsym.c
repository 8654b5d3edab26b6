// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/elf_dynsym.h"

#include <gelf.h>
#include <string.h>

uint64_t elf_dynsym__value(int fd, const char *name)
{
	uint64_t v = 0;
	Elf_Scn *scn = NULL;
	Elf *e;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return 0;
	while (!v && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			n = elf_strptr(e, sh.sh_link, sym.st_name);
			if (n && sym.st_shndx != SHN_UNDEF && !strcmp(n, name)) {
				v = sym.st_value;
				break;
			}
		}
	}
	elf_end(e);
	return v;
}
