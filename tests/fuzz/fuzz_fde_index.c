// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A target's .eh_frame_hdr table of FDEs and the FDEs it points to in .eh_frame: what names a
 * frame no symbol covers (user/sym/fde_index.c).  Input: the header's and .eh_frame's addresses
 * (8 bytes each), the header's length (4), the header, then .eh_frame.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/fde_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t hdr_vaddr, eh_vaddr, start;
	struct fde_index x;
	uint8_t *hdr, *eh;
	uint32_t hdr_len;
	size_t eh_len;

	if (size < 20)
		return 0;
	memcpy(&hdr_vaddr, data, 8);
	memcpy(&eh_vaddr, data + 8, 8);
	memcpy(&hdr_len, data + 16, 4);
	data += 20;
	size -= 20;
	if (hdr_len > size)
		hdr_len = (uint32_t)size;
	eh_len = size - hdr_len;
	/* Copies of exactly their length: a read past either end is caught. */
	hdr = malloc(hdr_len ? hdr_len : 1);
	eh = malloc(eh_len ? eh_len : 1);
	if (!hdr || !eh)
		goto out;
	memcpy(hdr, data, hdr_len);
	memcpy(eh, data + hdr_len, eh_len);
	if (fde_index__parse(&x, hdr, hdr_len, hdr_vaddr, eh_len ? eh : NULL, eh_len, eh_vaddr))
		goto out;
	for (size_t i = 1; i < x.n; i++)
		if (x.start[i] < x.start[i - 1])
			__builtin_trap();
	for (size_t i = 0; i < x.n && i < 64; i++) {
		uint64_t probes[] = {x.start[i], x.start[i] + 1, x.start[i] - 1,
				     x.start[i] + x.len[i]};

		for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++)
			if (fde_index__find(&x, probes[k], &start) && start > probes[k])
				__builtin_trap();
	}
	fde_index__release(&x);
out:
	free(hdr);
	free(eh);
	return 0;
}
