// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness of the unwind-table builder (user/unwind/unwind_table.c, unwind_elf.c): the
 * input is an ELF image in memory, as a container's library or the vDSO would be, or one raw CFI
 * section.  A table that builds must be sorted, end with "no information", and answer a lookup
 * at a row's pc with that row.  Built by hand until `make fuzz` exists:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iinclude -Iuser \
 *     tests/fuzz/fuzz_unwind_table.c user/unwind/unwind_table.c user/unwind/unwind_elf.c \
 *     -lelf -lz -o build/fuzz_unwind_table
 *   build/fuzz_unwind_table -max_total_time=60 tests/fuzz/corpus/unwind_table
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Small caps so one input cannot run long; the defaults are tested in the unit tests. */
	struct unwind_table_opts opts = {.max_rows = 1 << 16, .max_bytes = 1 << 20, .max_ms = 1000};
	const struct prof_unwind_row *rows;
	struct unwind_table *t = NULL;
	uint32_t nr;

	int err;

	/*
	 * An ELF image goes through libelf to its sections; anything else is one CFI section
	 * itself (first byte: 'e' .eh_frame at address 0x1000, 'd' .debug_frame), so mutations
	 * reach the CFI reader without first having to keep an ELF header intact.
	 */
	if (size >= 4 && memcmp(data, "\177ELF", 4) == 0)
		err = unwind_table__build_mem(&t, data, size, &opts);
	else if (size >= 1)
		err = unwind_table__build_cfi(&t, data + 1, size - 1, 0x1000, data[0] == 'd',
					      &opts);
	else
		return 0;
	if (err != 0) {
		if (t)
			abort(); /* a failed build hands back nothing */
		return 0;
	}
	rows = unwind_table__rows(t, &nr);
	if (nr == 0 || prof_unwind_row__cfa(&rows[nr - 1]) != PROF_UNWIND_CFA_NONE)
		abort();
	for (uint32_t i = 1; i < nr; i++)
		if (rows[i - 1].pc >= rows[i].pc)
			abort();
	for (uint32_t i = 0; i < nr && i < 64; i++) {
		uint64_t base = unwind_table__base(t);
		struct prof_unwind_row r;

		/* At a row's own pc the row itself answers (or "no information" for NONE rows). */
		int err = unwind_table__find(t, &r, base + rows[i].pc);

		if (prof_unwind_row__cfa(&rows[i]) == PROF_UNWIND_CFA_NONE
			    ? err == 0
			    : err != 0 || r.pc != rows[i].pc)
			abort();
		unwind_table__find(t, &r, base + rows[i].pc - 1);
	}
	unwind_table__free(t);
	return 0;
}
