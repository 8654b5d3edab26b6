/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A CPython code object read from a process (or any memory a reader gives): its name (co_qualname
 * from 3.11, else co_name), file name and first line, and its line table, which maps the
 * instruction index the BPF walker reports (include/prof_python.h) to a source line.  Everything
 * read is foreign bytes: string and table lengths are capped, kinds checked, nothing trusted.
 */
#ifndef PROF_SYM_PYCODE_H
#define PROF_SYM_PYCODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sym/python.h"

/* Caps on what is read from one code object. */
#define PYCODE_MAX_STR	 1024	     /* bytes of a name or file name (UTF-8, longer: cut) */
#define PYCODE_MAX_TABLE (64u << 10) /* bytes of a line table (longer: refused) */

/* Read len bytes at addr of the target into buf: 0, or -errno (nothing partial is used). */
typedef int (*pycode_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* A reader of process memory with process_vm_readv; ctx is the pid as (void *)(uintptr_t)pid. */
int pycode__read_pid(void *ctx, uint64_t addr, void *buf, size_t len);

struct pycode {
	char *name;	/* UTF-8, NUL-terminated; malloc'd */
	char *filename; /* likewise */
	int32_t firstlineno;
	uint8_t *table; /* the line table's bytes (co_lnotab / co_linetable); malloc'd */
	uint32_t table_len;
	/* co_filename and the pointer after it (co_name), as the head that gave name and
	 * filename held them: with firstlineno, what the BPF walker fingerprints */
	uint64_t names[2];
};

/*
 * Read the code object at addr.  code_type, when not 0, must be its ob_type (PyCode_Type):
 * -EINVAL otherwise.  The head is read again at the end: a code object freed while it was read
 * (its address taken by another: what was read is of two objects) gives -EAGAIN.  0, or
 * -errno (-EFAULT unreadable, -EINVAL not a code object / a string of an unknown kind, -E2BIG
 * a line table over the cap, -ENOMEM, -EAGAIN); on failure *out is zeroed.
 */
int pycode__read(const struct py_version *v, pycode_read_fn read, void *ctx, uint64_t addr,
		 uint64_t code_type, struct pycode *out);
void pycode__free(struct pycode *c);

/*
 * The compact str object at addr as UTF-8 (malloc'd, NUL-terminated, cut at a character to
 * PYCODE_MAX_STR bytes; code points with no UTF-8 become '?').  0, or -errno (-EFAULT
 * unreadable, -EINVAL not a compact str of a known kind, -ENOMEM); *out is NULL on failure.
 */
int pycode__read_str(const struct py_version *v, pycode_read_fn read, void *ctx, uint64_t addr,
		     char **out);

/*
 * The source line of the instruction the walker reported (its raw instruction value: f_lasti in
 * bytes for 3.8/3.9, in code units for 3.10, a code-unit index for 3.11+), decoding
 * v->line_table.  0 when the table says the instruction has no line (or it is malformed).
 */
int32_t pycode__line(const struct py_version *v, const struct pycode *c, uint32_t instr);

#endif /* PROF_SYM_PYCODE_H */
