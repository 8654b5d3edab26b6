/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython inside an ELF file (an executable with libpython linked in, or libpython3.X.so): its
 * version, the ELF addresses of what the BPF walker needs (_PyRuntime, _PyEval_EvalFrameDefault
 * and its .cold part, PyCode_Type), and the structure offsets of that version, from our table of
 * 3.8–3.13 (measured against each version's headers: tests/unit/test_python.c) or, from 3.13 on,
 * from the _Py_DebugOffsets the interpreter carries at the start of _PyRuntime (cross-checked
 * against the table).  The unwinder (user/unwind/unwinder.c) inspects each file it builds a table
 * for, and writes the runtime addresses into the process's entry (include/prof_python.h).
 */
#ifndef PROF_SYM_PYTHON_H
#define PROF_SYM_PYTHON_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "prof_python.h"

/* How a version maps instruction offsets to lines (user/sym/pycode.c decodes each). */
enum py_line_table {
	PY_LNOTAB = 1,	      /* co_lnotab (3.8, 3.9): byte-offset / line increments */
	PY_LINETABLE_310 = 2, /* co_linetable (3.10): PEP 626 (start, line delta) entries */
	PY_LOCATIONS = 3,     /* co_linetable (3.11+): PEP 657 location entries */
};

/*
 * How a version lays out dicts, instance attributes and ints (user/sym/pythreads.c): dict keys
 * (dk_size, or log2 sizes and a kind), where an instance keeps its attributes, how an int
 * stores its digit count.
 */
enum py_obj_layout {
	PY_OBJ_38 = 1, /* 3.8–3.10: a __dict__ at the type's tp_dictoffset; int ob_size */
	PY_OBJ_311 =
		2, /* 3.11: managed dict: values pointer at obj - 32, dict pointer at obj - 24 */
	PY_OBJ_312 = 3, /* 3.12: obj - 24 holds a dict, or (values - 1); int lv_tag */
	PY_OBJ_313 =
		4, /* 3.13: dict pointer at obj - 24, else inline values at obj + tp_basicsize */
};

/* One CPython version's layout. */
struct py_version {
	uint8_t major, minor;
	struct prof_py_offsets bpf; /* what the BPF walker reads */
	/* Code objects (offsets in PyCodeObject), read by user/sym/pycode.c. */
	uint16_t co_firstlineno; /* an int */
	uint16_t co_filename;	 /* PyObject * (str) */
	uint16_t co_name;	 /* PyObject * (str) */
	uint16_t co_qualname;	 /* PyObject * (str), 3.11+; 0: none (co_name is used) */
	uint16_t co_linetable;	 /* PyObject * (bytes): co_lnotab (<= 3.9) or co_linetable */
	uint8_t line_table;	 /* enum py_line_table */
	/* Strings: sizeof(PyASCIIObject) and sizeof(PyCompactUnicodeObject) (their data follows);
	 * the state bit field (kind, compact, ascii) at offset 32 in both. */
	uint16_t ascii_size, compact_size;
	/* Thread names (user/sym/pythreads.c): interpreters, sys.modules, thread states. */
	uint16_t rt_interp_head; /* _PyRuntime: interpreters.head */
	uint16_t is_next;	 /* PyInterpreterState: next */
	uint16_t is_tstate_head; /* PyInterpreterState: tstate_head (<= 3.10), threads.head */
	uint16_t is_modules;	 /* PyInterpreterState: modules (<= 3.11), imports.modules */
	uint16_t ts_next;	 /* PyThreadState: next */
	uint16_t ts_thread_id;	 /* PyThreadState: thread_id (pthread_t, threading.get_ident()) */
	uint16_t ts_native_id;	 /* PyThreadState: native_thread_id (3.11+); 0: none */
	/* Objects: types, dicts and the shared keys of instance attributes. */
	uint16_t tp_basicsize, tp_flags, tp_dictoffset; /* PyTypeObject */
	uint16_t ht_cached_keys;			/* PyHeapTypeObject (3.11+) */
	uint16_t ma_keys, ma_values;			/* PyDictObject */
	uint16_t dk_nentries, dk_indices;		/* PyDictKeysObject */
	uint16_t dv_values;				/* PyDictValues: values[] (3.11+) */
	uint8_t obj_layout;				/* enum py_obj_layout */
};

/* Our table's entry for major.minor, or NULL when we do not know that version. */
const struct py_version *py_version__find(unsigned major, unsigned minor);

enum py_elf_status {
	PY_ELF_NOT_PYTHON = 0,	/* no _PyRuntime / _PyEval_EvalFrameDefault */
	PY_ELF_OK,		/* CPython of a version we walk: v is filled */
	PY_ELF_UNSUPPORTED,	/* CPython of a version we do not walk (major/minor say which) */
	PY_ELF_UNKNOWN_VERSION, /* CPython whose version we could not tell */
	PY_ELF_BAD_OFFSETS,	/* 3.13+: _Py_DebugOffsets unreadable or contradicting our table */
};

/* What an ELF file says of the CPython in it.  Addresses are ELF virtual addresses (st_value). */
struct py_elf {
	enum py_elf_status status;
	uint8_t major, minor;		/* 0 when unknown */
	uint64_t runtime, runtime_size; /* _PyRuntime */
	uint64_t eval_lo, eval_hi;	/* _PyEval_EvalFrameDefault [lo, hi) */
	uint64_t cold_lo, cold_hi;	/* _PyEval_EvalFrameDefault.cold [lo, hi); 0, 0: none */
	uint64_t code_type;		/* PyCode_Type */
	uint64_t code_dealloc;		/* its tp_dealloc (code_dealloc); 0: not found */
	uint64_t code_dealloc_offset;	/* … its offset in the file */
	bool debug_offsets;		/* v's offsets were read from _Py_DebugOffsets */
	struct py_version v;		/* PY_ELF_OK */
};

/*
 * Inspect an ELF file (its .symtab, else .dynsym; the version from Py_Version, else DT_SONAME
 * libpython3.X, else name_hint's basename python3.X, which may be NULL).  Every byte is foreign:
 * bounded and checked.  0 (out->status says what was found) or -errno for a file libelf cannot
 * read.
 */
int python__inspect_elf(Elf *elf, const char *name_hint, struct py_elf *out);

/*
 * Check the interpreter in process pid whose _PyRuntime lies at runtime_addr against what the
 * file said (process_vm_readv, every read bounded): 3.13+ the "xdebugpy" cookie and version in
 * memory; all: the thread-state key, once initialized, is a valid key (< PROF_PY_TSD_KEYS).
 * 0: consistent (or not initialized yet); -EINVAL: memory contradicts the file (do not walk);
 * -ESRCH / -EFAULT: unreadable.
 */
int python__validate(pid_t pid, const struct py_elf *e, uint64_t runtime_addr);

#endif /* PROF_SYM_PYTHON_H */
