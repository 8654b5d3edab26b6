/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef PROF_ELF_DYNSYM_H
#define PROF_ELF_DYNSYM_H

#include <stdint.h>

/*
 * The value of the defined dynamic symbol name (any type: a function or an object such as
 * ld.so's _r_debug) in the ELF file open as fd, read with pread (the offset is not moved), or 0.
 * libelf over the fd: a file we do not control, read only through its own bounds checks.
 */
uint64_t elf_dynsym__value(int fd, const char *name);

#endif /* PROF_ELF_DYNSYM_H */
