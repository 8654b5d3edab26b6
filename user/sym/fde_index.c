// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/fde_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* DWARF exception-header pointer encodings (LSB "Linux Standard Base Core", .eh_frame_hdr). */
#define PE_UDATA4  0x03
#define PE_SDATA4  0x0b
#define PE_DATAREL 0x30
#define PE_OMIT	   0xff

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The FDE at eh + off (an .eh_frame offset) says it begins at start: its length, else 0. */
static uint32_t fde_len(const uint8_t *eh, size_t eh_size, uint64_t eh_vaddr, uint64_t off,
			uint64_t start)
{
	uint32_t length;
	int32_t begin;

	/* length, CIE pointer, pc_begin (pc-relative sdata4), pc_range (udata4) */
	if (!eh || off > eh_size || eh_size - off < 16)
		return 0;
	length = u32_at(eh + off);
	if (length < 12 || length == 0xffffffff || length > eh_size - off - 4)
		return 0;
	memcpy(&begin, eh + off + 8, sizeof(begin));
	if (eh_vaddr + off + 8 + (uint64_t)(int64_t)begin != start)
		return 0; /* another encoding: the next start bounds it */
	return u32_at(eh + off + 12);
}

int fde_index__parse(struct fde_index *out, const uint8_t *hdr, size_t hdr_size, uint64_t hdr_vaddr,
		     const uint8_t *eh, size_t eh_size, uint64_t eh_vaddr)
{
	size_t pos = 4, count;
	uint64_t *start;
	uint32_t *len;

	memset(out, 0, sizeof(*out));
	/* version 1; eh_frame_ptr and fde_count 4-byte encodings; the table as ld writes it */
	if (hdr_size < 4 || hdr[0] != 1 || hdr[3] != (PE_DATAREL | PE_SDATA4))
		return 0;
	if (hdr[1] == PE_OMIT || (hdr[1] & 0x0f) == PE_UDATA4 || (hdr[1] & 0x0f) == PE_SDATA4)
		pos += hdr[1] == PE_OMIT ? 0 : 4;
	else
		return 0;
	if ((hdr[2] & 0x0f) != PE_UDATA4 && (hdr[2] & 0x0f) != PE_SDATA4)
		return 0;
	if (hdr_size < pos + 4)
		return -EBADMSG;
	count = u32_at(hdr + pos);
	pos += 4;
	if (count > (hdr_size - pos) / 8)
		return -EBADMSG;
	if (!count)
		return 0;
	start = malloc(count * sizeof(*start));
	len = malloc(count * sizeof(*len));
	if (!start || !len) {
		free(start);
		free(len);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++) {
		int32_t loc, fde;

		memcpy(&loc, hdr + pos + 8 * i, sizeof(loc));
		memcpy(&fde, hdr + pos + 8 * i + 4, sizeof(fde));
		start[i] = hdr_vaddr + (uint64_t)(int64_t)loc;
		if (i && start[i] < start[i - 1]) {
			free(start);
			free(len);
			return -EBADMSG;
		}
		len[i] = fde_len(eh, eh_size, eh_vaddr,
				 hdr_vaddr + (uint64_t)(int64_t)fde - eh_vaddr, start[i]);
	}
	out->start = start;
	out->len = len;
	out->n = count;
	return 0;
}

bool fde_index__find(const struct fde_index *x, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = x->n;

	/* the last start <= vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->start[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	lo--;
	/* Without a length read, the next start bounds it (the last one: taken as covering). */
	if (x->len[lo] && vaddr - x->start[lo] >= x->len[lo])
		return false;
	*start = x->start[lo];
	return true;
}

void fde_index__release(struct fde_index *x)
{
	free(x->start);
	free(x->len);
	memset(x, 0, sizeof(*x));
}
