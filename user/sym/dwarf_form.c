// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/dwarf_form.h"

#include <stddef.h>

void dwform__skip(struct cur *r, uint64_t form, unsigned offsz, unsigned asz, unsigned version)
{
	static const uint8_t fixed[] = {
		[0x05] = 2, [0x06] = 4, [0x07] = 8, [0x0b] = 1,	 [0x0c] = 1, [0x11] = 1, [0x12] = 2,
		[0x13] = 4, [0x14] = 8, [0x1c] = 4, [0x1e] = 16, [0x20] = 8, [0x24] = 8, [0x25] = 1,
		[0x26] = 2, [0x27] = 3, [0x28] = 4, [0x29] = 1,	 [0x2a] = 2, [0x2b] = 3, [0x2c] = 4,
	};

	/* indirect: the form is in the value, once (an indirect indirect is malformed) */
	if (form == 0x16)
		form = rd_uleb(r);
	if (form < sizeof(fixed) && fixed[form]) {
		rd_skip(r, fixed[form]);
		return;
	}
	switch (form) {
	case 0x01: /* addr */
		rd_skip(r, asz);
		break;
	case 0x03: /* block2 */
		rd_skip(r, rd_u(r, 2));
		break;
	case 0x04: /* block4 */
		rd_skip(r, rd_u(r, 4));
		break;
	case 0x08: /* string */
		rd_str(r);
		break;
	case 0x09: /* block */
	case 0x18: /* exprloc */
		rd_skip(r, rd_uleb(r));
		break;
	case 0x0a: /* block1 */
		rd_skip(r, rd_u(r, 1));
		break;
	case 0x0d: /* sdata */
		rd_sleb(r);
		break;
	case 0x0f:   /* udata */
	case 0x15:   /* ref_udata */
	case 0x1a:   /* strx */
	case 0x1b:   /* addrx */
	case 0x22:   /* loclistx */
	case 0x23:   /* rnglistx */
	case 0x1f01: /* GNU_addr_index */
	case 0x1f02: /* GNU_str_index */
		rd_uleb(r);
		break;
	case 0x10: /* ref_addr: an address's size in DWARF 2 */
		rd_skip(r, version == 2 ? asz : offsz);
		break;
	case 0x0e:   /* strp */
	case 0x17:   /* sec_offset */
	case 0x1d:   /* strp_sup */
	case 0x1f:   /* line_strp */
	case 0x1f20: /* GNU_ref_alt */
	case 0x1f21: /* GNU_strp_alt */
		rd_skip(r, offsz);
		break;
	case 0x19: /* flag_present */
	case 0x21: /* implicit_const: its value is in the abbreviation */
		break;
	default:
		r->err = true;
	}
}

void dwform__read(struct cur *r, uint64_t form, int64_t implicit, const struct dwunit *u,
		  struct dwval *out)
{
	static const uint8_t width[] = {
		[0x05] = 2, [0x06] = 4, [0x07] = 8, [0x0b] = 1, [0x0c] = 1, [0x11] = 1,
		[0x12] = 2, [0x13] = 4, [0x14] = 8, [0x25] = 1, [0x26] = 2, [0x27] = 3,
		[0x28] = 4, [0x29] = 1, [0x2a] = 2, [0x2b] = 3, [0x2c] = 4};

	*out = (struct dwval){DWVAL_NONE, 0, NULL};
	if (form == 0x16) /* indirect */
		form = rd_uleb(r);
	if (form < sizeof(width) && width[form]) {
		out->u = rd_u(r, width[form]);
		if (form >= 0x11 && form <= 0x14) { /* ref1..8: unit-relative */
			out->kind = DWVAL_REF;
			out->u += u->off;
		} else if (form >= 0x25 && form <= 0x28) {
			out->kind = DWVAL_STRX;
		} else if (form >= 0x29) {
			out->kind = DWVAL_ADDRX;
		} else {
			out->kind = DWVAL_NUM;
		}
		return;
	}
	switch (form) {
	case 0x01: /* addr */
		out->kind = DWVAL_ADDR;
		out->u = rd_u(r, u->asz);
		break;
	case 0x08: /* string */
		out->kind = DWVAL_STR;
		out->s = rd_str(r);
		break;
	case 0x0d: /* sdata */
		out->kind = DWVAL_NUM;
		out->u = (uint64_t)rd_sleb(r);
		break;
	case 0x0f: /* udata */
		out->kind = DWVAL_NUM;
		out->u = rd_uleb(r);
		break;
	case 0x15: /* ref_udata */
		out->kind = DWVAL_REF;
		out->u = u->off + rd_uleb(r);
		break;
	case 0x10: /* ref_addr */
		out->kind = DWVAL_REF;
		out->u = rd_u(r, u->version == 2 ? u->asz : u->offsz);
		break;
	case 0x0e: /* strp */
		out->kind = DWVAL_STRP;
		out->u = rd_u(r, u->offsz);
		break;
	case 0x1f: /* line_strp */
		out->kind = DWVAL_LSTRP;
		out->u = rd_u(r, u->offsz);
		break;
	case 0x17: /* sec_offset */
		out->kind = DWVAL_NUM;
		out->u = rd_u(r, u->offsz);
		break;
	case 0x1a: /* strx */
		out->kind = DWVAL_STRX;
		out->u = rd_uleb(r);
		break;
	case 0x1b: /* addrx */
		out->kind = DWVAL_ADDRX;
		out->u = rd_uleb(r);
		break;
	case 0x23: /* rnglistx */
		out->kind = DWVAL_RNGX;
		out->u = rd_uleb(r);
		break;
	case 0x19: /* flag_present */
		out->kind = DWVAL_NUM;
		out->u = 1;
		break;
	case 0x21: /* implicit_const */
		out->kind = DWVAL_NUM;
		out->u = (uint64_t)implicit;
		break;
	case 0x1f20: /* GNU_ref_alt */
		out->kind = DWVAL_REF_ALT;
		out->u = rd_u(r, u->offsz);
		break;
	case 0x1c: /* ref_sup4 */
	case 0x24: /* ref_sup8 */
		out->kind = DWVAL_REF_ALT;
		out->u = rd_u(r, form == 0x1c ? 4 : 8);
		break;
	case 0x1d:   /* strp_sup */
	case 0x1f21: /* GNU_strp_alt */
		out->kind = DWVAL_STRP_ALT;
		out->u = rd_u(r, u->offsz);
		break;
	default:
		dwform__skip(r, form, u->offsz, u->asz, u->version);
	}
}

/* Entry idx of size n of the table at base of section s: true and *out. */
static bool table_entry(const struct cur *s, uint64_t base, uint64_t idx, unsigned n, uint64_t *out)
{
	struct cur r = *s;
	uint64_t size = s->p ? (uint64_t)(s->end - s->p) : 0;

	if (!s->p || idx > size / n || base > size - idx * n)
		return false;
	r.err = false;
	r.p += base + idx * n;
	*out = rd_u(&r, n);
	return !r.err;
}

const char *dwform__string(const struct dwsecs *s, const struct dwunit *u, const struct dwval *v)
{
	uint64_t off;

	switch (v->kind) {
	case DWVAL_STR:
		return v->s;
	case DWVAL_STRP:
		return rd_str_at(&s->str, v->u);
	case DWVAL_LSTRP:
		return rd_str_at(&s->line_str, v->u);
	case DWVAL_STRP_ALT:
		return rd_str_at(&s->alt_str, v->u);
	case DWVAL_STRX:
		if (!table_entry(&s->str_offsets, u->str_offsets_base, v->u, u->offsz, &off))
			return NULL;
		return rd_str_at(&s->str, off);
	default:
		return NULL;
	}
}

bool dwform__addr(const struct dwsecs *s, const struct dwunit *u, const struct dwval *v,
		  uint64_t *out)
{
	if (v->kind == DWVAL_ADDR) {
		*out = v->u;
		return true;
	}
	return v->kind == DWVAL_ADDRX && table_entry(&s->addr, u->addr_base, v->u, u->asz, out);
}
