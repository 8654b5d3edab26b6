// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython discovery in an ELF file a target maps (sym/python.c): symbol tables, Py_Version's
 * bytes, DT_SONAME, 3.13's _Py_DebugOffsets inside _PyRuntime's section data.
 *
 * Seeds (tests/fuzz/corpus/python_elf/): tiny shared objects with CPython's symbol names, from
 *   const unsigned long Py_Version = VER;                  (left out when VER is 0)
 *   __attribute__((aligned(64))) unsigned char _PyRuntime[RTSIZE] = { <3.13.0's first 584
 *           bytes, runtime_state.size set to RTSIZE, for DO313> };
 *   unsigned char PyCode_Type[416] = {1};
 *   int _PyEval_EvalFrameDefault(int x) { return x * 3 + 1; }
 *   + for COLD a 4-byte local function "_PyEval_EvalFrameDefault.cold" (top-level asm)
 * built with `cc -shared -nostdlib -Os -fPIC -Wl,--build-id=none -Wl,-z,noseparate-code
 * -Wl,-z,norelro` (+ -s, -Wl,-soname,…): py313-stripped.so (3.13, .dynsym only, a matching
 * _Py_DebugOffsets), py311-cold-symtab.so (.symtab with the .cold part), py310-soname.so and
 * py37m-soname.so (version from the soname only), py314-version.so (Py_Version 3.14).
 * tests/unit/test_python.c checks what each seed is found to be.
 */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/python.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The name the file runs under, chosen by the input's last byte. */
	static const char *const hints[] = {NULL,	  "python3.11",	    "/usr/bin/python3.13",
					    "python3.7m", "/x/python3.999", "python3."};
	const char *hint = size ? hints[data[size - 1] % (sizeof(hints) / sizeof(hints[0]))] : NULL;
	struct py_elf e;
	char *buf;
	Elf *elf;

	/* libelf may convert data in place: give it a copy it may write. */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	elf = elf_memory(buf, size);
	if (elf) {
		if (!python__inspect_elf(elf, hint, &e) && e.status == PY_ELF_OK) {
			const struct py_version *v = py_version__find(e.major, e.minor);

			/* OK means a version of our table, a non-empty loop, and the table's
			 * offsets unless 3.13's own were read (and then they equal the table's). */
			if (!v || e.eval_lo >= e.eval_hi || (e.cold_hi && e.cold_lo >= e.cold_hi) ||
			    memcmp(v, &e.v, sizeof(*v)) || e.debug_offsets != (e.minor >= 13))
				__builtin_trap();
		} else if (e.status == PY_ELF_NOT_PYTHON && (e.major || e.runtime)) {
			__builtin_trap();
		}
		elf_end(elf);
	}
	free(buf);
	return 0;
}
