/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * MiniDebugInfo (Fedora, RHEL and CentOS ship it in every binary; gdb's manual, "MiniDebugInfo"):
 * a .gnu_debugdata section holding an xz-compressed ELF whose .symtab lists the functions
 * .dynsym lacks (static functions, local symbols such as libc's start_thread).  Its bytes are a
 * target's: liblzma decodes them under a memory limit, and the ELF they give is capped.
 */
#ifndef PROF_MINIDEBUG_H
#define PROF_MINIDEBUG_H

#include <stddef.h>

/* The largest .gnu_debugdata section read, and the largest ELF it may inflate to. */
#define MINIDEBUG_MAX_IN   (32u << 20)
#define MINIDEBUG_MAX_OUT  (128u << 20)
/* liblzma's decoder memory: xz -9 needs 65 MiB, what distributions use far less. */
#define MINIDEBUG_MEMLIMIT (96u << 20)

/*
 * The xz stream xz (len bytes) inflated into *out (malloc'd, *out_len bytes, at most max).
 * 0; -EFBIG: it inflates past max (an xz bomb) or len is over MINIDEBUG_MAX_IN; -ENOEXEC: not
 * one whole xz stream (or corrupt, or it needs more than MINIDEBUG_MEMLIMIT); -ENOMEM.
 */
int minidebug__inflate(void **out, size_t *out_len, const void *xz, size_t len, size_t max);

#endif /* PROF_MINIDEBUG_H */
