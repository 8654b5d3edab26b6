// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MiniDebugInfo, a target's .gnu_debugdata: an xz stream inflated under our caps, and the ELF
 * it holds read for its .symtab.  The first byte picks what the rest is: even, the xz stream as
 * found in a file; odd, the ELF inside it, compressed here first, so that mutations reach the
 * symbol reader past xz's checksums.  (Whole files carrying the section are in the elf corpus.)
 */
#include <lzma.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/elf_file.h"
#include "sym/minidebug.h"

/* Small enough that a bomb in the corpus stops early and fast. */
#define FUZZ_MAX_OUT (4u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *xz = NULL;
	size_t xz_len = 0, out_len;
	struct elf_file *ef;
	void *out;
	int err;

	if (!size)
		return 0;
	if (data[0] & 1) {
		size_t cap = lzma_stream_buffer_bound(size - 1);

		xz = malloc(cap);
		if (!xz || lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, NULL, data + 1, size - 1,
						   xz, &xz_len, cap) != LZMA_OK) {
			free(xz);
			return 0;
		}
	}
	err = minidebug__inflate(&out, &out_len, xz ? xz : data + 1, xz ? xz_len : size - 1,
				 FUZZ_MAX_OUT);
	if (!err) {
		if (out_len > FUZZ_MAX_OUT)
			__builtin_trap();
		/* What we compressed comes back whole. */
		if (xz && (out_len != size - 1 || memcmp(out, data + 1, out_len)))
			__builtin_trap();
		if (!elf_file__open_mem(&ef, out, out_len)) {
			elf_file__lookup(ef, 0x1000);
			elf_file__free(ef);
		}
		free(out);
	} else if (out) {
		__builtin_trap(); /* nothing handed back on an error */
	}
	free(xz);
	return 0;
}
