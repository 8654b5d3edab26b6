// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Our own reader of DWARF call-frame information (.eh_frame / .debug_frame, DWARF 5 §6.4 and the
 * LSB's .eh_frame format) turned into include/prof_unwind.h rows.  Own code rather than libdw:
 * measured faster and smaller (README "Unwind tables"), and every byte it reads is checked here,
 * fuzzed with sanitizers, and bounded per file — libdw's CFI reader is none of these for us.
 *
 * Only what the BPF unwinder can use is tracked: the CFA rule, the rule of rbp (DWARF register 6)
 * and of the return-address column.  Each FDE's rows are produced by running the CIE's initial
 * instructions and then the FDE's; then all rows are sorted, an FDE's end becomes a "no
 * information" row (unless another FDE starts there), and consecutive equal rows are merged.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unwind/unwind_table.h"
#include "util/clock.h"
#include "util/dwcursor.h"

#define DW_REG_RBP 6
#define DW_REG_RSP 7
#define DW_REG_RA  16

#define REMEMBER_DEPTH	8   /* DW_CFA_remember_state nesting; gcc uses 1–2 */
#define TIME_CHECK_FDES 256 /* read the clock once per this many FDEs */

struct unwind_table {
	uint64_t base;
	uint32_t nr;
	struct prof_unwind_row *rows;
	enum unwind_table_source source;
	struct unwind_table_stats stats;
};

/* A block (uleb length, bytes) inside the cursor. */
static const uint8_t *rd_block(struct cur *c, uint64_t *len)
{
	const uint8_t *p;

	*len = rd_uleb(c);
	if (c->err || *len > (uint64_t)(c->end - c->p)) {
		c->err = true;
		return NULL;
	}
	p = c->p;
	c->p += *len;
	return p;
}

struct cfi_sec {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr; /* sh_addr: the base of pc-relative pointers */
	bool eh;	/* .eh_frame (else .debug_frame) */
};

/* DW_EH_PE_* pointer encodings. */
#define PE_OMIT	  0xff
#define PE_PCREL  0x10
#define PE_INDIR  0x80
#define PE_FORMAT 0x0f

static uint64_t rd_encoded(struct cur *c, uint8_t enc, const struct cfi_sec *s)
{
	uint64_t here = s->vaddr + (uint64_t)(c->p - s->data), v;

	switch (enc & PE_FORMAT) {
	case 0x0: /* absptr */
	case 0x4: /* udata8 */
	case 0xc: /* sdata8 */
		v = rd_u(c, 8);
		break;
	case 0x1:
		v = rd_uleb(c);
		break;
	case 0x2:
		v = rd_u(c, 2);
		break;
	case 0x3:
		v = rd_u(c, 4);
		break;
	case 0x9:
		v = (uint64_t)rd_sleb(c);
		break;
	case 0xa:
		v = (uint64_t)(int64_t)(int16_t)rd_u(c, 2);
		break;
	case 0xb:
		v = (uint64_t)(int64_t)(int32_t)rd_u(c, 4);
		break;
	default:
		c->err = true;
		return 0;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case PE_PCREL:
		v += here;
		break;
	default: /* textrel, datarel, funcrel, aligned: not used for FDE addresses on x86_64 */
		c->err = true;
	}
	if (enc & PE_INDIR)
		c->err = true;
	return v;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool has_z, signal;
	const uint8_t *insns, *insns_end;
};

/* A record's header at off: its bounds and the CIE id / pointer field. */
struct rec {
	size_t start, end; /* end: one past the record */
	size_t id_off;	   /* offset of the CIE id / CIE pointer */
	uint64_t id;
	bool dwarf64;
	struct cur body; /* after the id, up to end */
};

/* 0, 1 at the terminator, -EBADMSG when the record does not fit. */
static int rd_rec(const struct cfi_sec *s, size_t off, struct rec *r)
{
	struct cur c = {s->data + off, s->data + s->size, false};
	uint64_t len = rd_u(&c, 4);

	if (c.err)
		return -EBADMSG;
	if (len == 0)
		return 1;
	r->dwarf64 = len == 0xffffffff;
	if (r->dwarf64)
		len = rd_u(&c, 8);
	if (c.err || len > (uint64_t)(c.end - c.p) || len < (r->dwarf64 ? 8u : 4u))
		return -EBADMSG;
	r->start = off;
	r->end = (size_t)(c.p - s->data) + len;
	r->id_off = (size_t)(c.p - s->data);
	c.end = s->data + r->end;
	r->id = rd_u(&c, r->dwarf64 ? 8 : 4);
	r->body = c;
	return 0;
}

static bool rec_is_cie(const struct cfi_sec *s, const struct rec *r)
{
	if (s->eh)
		return r->id == 0;
	return r->id == (r->dwarf64 ? ~0ULL : 0xffffffffULL);
}

static int rd_cie(const struct cfi_sec *s, size_t off, struct cie *out)
{
	struct rec r;
	struct cur *c = &r.body;
	const char *aug;
	size_t auglen;
	uint8_t version;

	if (off >= s->size || rd_rec(s, off, &r) != 0 || !rec_is_cie(s, &r))
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	version = (uint8_t)rd_u(c, 1);
	if (c->err || (version != 1 && version != 3 && version != 4))
		return -EBADMSG;
	aug = (const char *)c->p;
	auglen = strnlen(aug, (size_t)(c->end - c->p));
	if (auglen == (size_t)(c->end - c->p))
		return -EBADMSG;
	c->p += auglen + 1;
	if (version == 4) {
		uint8_t addr_size = (uint8_t)rd_u(c, 1), seg_size = (uint8_t)rd_u(c, 1);

		if (addr_size != 8 || seg_size != 0)
			return -EBADMSG;
	}
	out->code_align = rd_uleb(c);
	out->data_align = rd_sleb(c);
	out->ra_reg = version == 1 ? rd_u(c, 1) : rd_uleb(c);
	if (aug[0] == 'z') {
		uint64_t zlen;
		const uint8_t *zdata = rd_block(c, &zlen);
		struct cur z = {zdata, zdata ? zdata + zlen : NULL, !zdata};

		out->has_z = true;
		for (size_t i = 1; i < auglen && !z.err; i++) {
			switch (aug[i]) {
			case 'R':
				out->fde_enc = (uint8_t)rd_u(&z, 1);
				break;
			case 'L':
				rd_u(&z, 1);
				break;
			case 'P': {
				/* Personality pointer: only its size matters. */
				uint8_t penc = (uint8_t)rd_u(&z, 1);

				rd_encoded(&z, penc & (PE_FORMAT | PE_PCREL), s);
				break;
			}
			case 'S':
				out->signal = true;
				break;
			default:
				/* Unknown letters after 'R' are covered by the length. */
				i = auglen;
			}
		}
		if (z.err)
			return -EBADMSG;
	} else if (auglen) {
		return -EBADMSG; /* "eh" and other pre-'z' augmentations: layout unknown */
	}
	if (c->err)
		return -EBADMSG;
	if (!s->eh)
		out->fde_enc = 0;
	out->insns = c->p;
	out->insns_end = c->end;
	return 0;
}

/* The rules we track for one register. */
enum rule_kind { RULE_SAME, RULE_UNDEF, RULE_OFFSET, RULE_EXPR, RULE_OTHER };

struct rule {
	uint8_t kind;
	int64_t off;
	const uint8_t *expr;
	uint64_t len;
};

struct cfa_state {
	bool cfa_expr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *expr;
	uint64_t expr_len;
	struct rule rbp, ra;
};

struct raw_row {
	uint64_t pc;
	uint32_t seq; /* emission order: at one pc the last row wins */
	/* PROF_UNWIND_CFA_NONE only for the end of an FDE: it loses against a row of another FDE
	 * starting at the same pc. */
	uint8_t kinds;
	int8_t rbp_off;
	int16_t cfa_off;
};

_Static_assert(sizeof(struct raw_row) == 16, "raw rows: 16 B each, twice the cap at most");

struct builder {
	const struct cfi_sec *sec;
	struct raw_row *raw;
	size_t nr, cap, max;
	size_t fde_first; /* first raw row of the FDE being read */
	uint32_t seq;
	struct unwind_table_stats stats;
};

static int push_raw(struct builder *b, const struct raw_row *r)
{
	if (b->nr == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1024;
		struct raw_row *n;

		if (b->nr >= b->max)
			return -E2BIG;
		if (cap > b->max)
			cap = b->max;
		n = realloc(b->raw, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->raw = n;
		b->cap = cap;
	}
	b->raw[b->nr] = *r;
	b->raw[b->nr].seq = b->seq++;
	b->nr++;
	return 0;
}

static bool fits8(int64_t off, int64_t lo, int64_t hi)
{
	return off % 8 == 0 && off / 8 >= lo && off / 8 <= hi;
}

/* DWARF expression opcodes the special CFA rules are made of. */
#define OP_DEREF 0x06
#define OP_AND	 0x1a
#define OP_PLUS	 0x22
#define OP_SHL	 0x24
#define OP_GE	 0x2a
#define OP_LIT0	 0x30
#define OP_BREG0 0x70

/*
 * The CFA expressions x86_64 toolchains emit: the PLT stub's
 *   breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus   (rsp + N + ((rip&15) >= K) << 3)
 * and stack realignment's  bregR off; deref  (R = rbp or rsp).
 */
static uint8_t cfa_expr_kind(const uint8_t *e, uint64_t len, int64_t *off, int8_t *thr)
{
	struct cur c = {e, e + len, false};
	uint8_t op = (uint8_t)rd_u(&c, 1);
	uint64_t reg = op - OP_BREG0;

	if (c.err || op < OP_BREG0 || op > OP_BREG0 + 16)
		return PROF_UNWIND_CFA_UNSUPPORTED;
	*off = rd_sleb(&c);
	if (c.err)
		return PROF_UNWIND_CFA_UNSUPPORTED;
	if (c.p + 1 == c.end && *c.p == OP_DEREF) {
		if (reg == DW_REG_RBP)
			return PROF_UNWIND_CFA_DEREF_RBP;
		if (reg == DW_REG_RSP)
			return PROF_UNWIND_CFA_DEREF_RSP;
		return PROF_UNWIND_CFA_UNSUPPORTED;
	}
	if (reg != DW_REG_RSP || rd_u(&c, 1) != OP_BREG0 + 16 || rd_sleb(&c) != 0 ||
	    rd_u(&c, 1) != OP_LIT0 + 15 || rd_u(&c, 1) != OP_AND)
		return PROF_UNWIND_CFA_UNSUPPORTED;
	op = (uint8_t)rd_u(&c, 1);
	if (op < OP_LIT0 || op > OP_LIT0 + 15 || rd_u(&c, 1) != OP_GE ||
	    rd_u(&c, 1) != OP_LIT0 + 3 || rd_u(&c, 1) != OP_SHL || rd_u(&c, 1) != OP_PLUS ||
	    c.err || c.p != c.end)
		return PROF_UNWIND_CFA_UNSUPPORTED;
	*thr = (int8_t)(op - OP_LIT0);
	return PROF_UNWIND_CFA_PLT;
}

static void to_row(const struct cie *cie, const struct cfa_state *st, struct raw_row *r)
{
	uint8_t cfa = PROF_UNWIND_CFA_UNSUPPORTED, rbp = PROF_UNWIND_RBP_UNSUPPORTED;
	int64_t cfa_off = 0, rbp_off = 0;
	int8_t thr = 0;

	r->cfa_off = 0;
	r->rbp_off = 0;
	if (cie->signal) {
		r->kinds = PROF_UNWIND_CFA_SIGNAL;
		return;
	}
	if (cie->ra_reg == DW_REG_RA && st->ra.kind == RULE_UNDEF) {
		r->kinds = PROF_UNWIND_CFA_STOP;
		return;
	}
	if (cie->ra_reg != DW_REG_RA || st->ra.kind != RULE_OFFSET || st->ra.off != -8) {
		r->kinds = PROF_UNWIND_CFA_UNSUPPORTED;
		return;
	}
	if (st->cfa_expr) {
		cfa = cfa_expr_kind(st->expr, st->expr_len, &cfa_off, &thr);
	} else if (st->cfa_reg == DW_REG_RSP) {
		cfa = PROF_UNWIND_CFA_RSP;
		cfa_off = st->cfa_off;
	} else if (st->cfa_reg == DW_REG_RBP) {
		cfa = PROF_UNWIND_CFA_RBP;
		cfa_off = st->cfa_off;
	}
	if (cfa != PROF_UNWIND_CFA_UNSUPPORTED && !fits8(cfa_off, INT16_MIN, INT16_MAX))
		cfa = PROF_UNWIND_CFA_UNSUPPORTED;

	switch (st->rbp.kind) {
	case RULE_SAME:
		rbp = PROF_UNWIND_RBP_UNCHANGED;
		break;
	case RULE_UNDEF:
		rbp = PROF_UNWIND_RBP_UNDEFINED;
		break;
	case RULE_OFFSET:
		rbp = PROF_UNWIND_RBP_CFA;
		rbp_off = st->rbp.off;
		break;
	case RULE_EXPR: {
		/* "saved at rbp + off": bregR(6) off, as realigned frames say it. */
		struct cur c = {st->rbp.expr, st->rbp.expr + st->rbp.len, false};

		if (rd_u(&c, 1) == OP_BREG0 + DW_REG_RBP) {
			rbp_off = rd_sleb(&c);
			if (!c.err && c.p == c.end)
				rbp = PROF_UNWIND_RBP_DEREF_RBP;
		}
		break;
	}
	}
	if (rbp != PROF_UNWIND_RBP_UNSUPPORTED && !fits8(rbp_off, INT8_MIN, INT8_MAX))
		rbp = PROF_UNWIND_RBP_UNSUPPORTED;
	if (cfa == PROF_UNWIND_CFA_UNSUPPORTED) {
		r->kinds = cfa;
		return;
	}
	r->kinds = (uint8_t)(cfa | rbp << 4);
	r->cfa_off = (int16_t)(cfa_off / 8);
	r->rbp_off = cfa == PROF_UNWIND_CFA_PLT ? thr : (int8_t)(rbp_off / 8);
	if (rbp == PROF_UNWIND_RBP_UNSUPPORTED && cfa != PROF_UNWIND_CFA_PLT)
		r->rbp_off = 0;
}

/* The row for [pc, …) of the FDE being read: replaces one at the same pc, skips a repeat. */
static int emit(struct builder *b, const struct cie *cie, const struct cfa_state *st, uint64_t pc)
{
	struct raw_row r = {.pc = pc};

	to_row(cie, st, &r);
	if (b->nr > b->fde_first) {
		struct raw_row *last = &b->raw[b->nr - 1];

		if (last->pc == pc) {
			last->kinds = r.kinds;
			last->rbp_off = r.rbp_off;
			last->cfa_off = r.cfa_off;
			return 0;
		}
		if (last->kinds == r.kinds && last->rbp_off == r.rbp_off &&
		    last->cfa_off == r.cfa_off)
			return 0;
	}
	return push_raw(b, &r);
}

static struct rule *reg_rule(struct cfa_state *st, const struct cie *cie, uint64_t reg)
{
	if (reg == DW_REG_RBP)
		return &st->rbp;
	if (reg == cie->ra_reg)
		return &st->ra;
	return NULL;
}

/* v * align, or INT64_MAX (an offset no row accepts) when that overflows: hostile input. */
static int64_t mul_off(int64_t v, int64_t align)
{
	int64_t r;

	if (__builtin_mul_overflow(v, align, &r))
		return INT64_MAX;
	return r;
}

/* The CIE's rule for the register whose rule in st is rr. */
static const struct rule *init_rule(const struct cfa_state *init, const struct cfa_state *st,
				    const struct rule *rr)
{
	return rr == &st->rbp ? &init->rbp : &init->ra;
}

/*
 * Run instructions [p, end).  fde: emit rows from *loc up to pc_end (CIE initial instructions
 * pass fde false: location changes there are meaningless).  -EBADMSG on anything unreadable.
 */
static int run_cfi(struct builder *b, const struct cie *cie, const uint8_t *p, const uint8_t *end,
		   struct cfa_state *st, const struct cfa_state *init, bool fde, uint64_t *loc,
		   uint64_t pc_end)
{
	struct cfa_state stack[REMEMBER_DEPTH];
	unsigned depth = 0;
	struct cur c = {p, end, false};
	const struct cfi_sec *s = b->sec;
	int err;

	while (c.p < c.end && !c.err) {
		uint8_t op = (uint8_t)rd_u(&c, 1);
		uint64_t reg, delta = 0, newloc = 0;
		bool advance = false, setloc = false;
		struct rule *rr;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			delta = op & 0x3f;
			advance = true;
			break;
		case 2: /* DW_CFA_offset */
			reg = op & 0x3f;
			rr = reg_rule(st, cie, reg);
			if (rr)
				*rr = (struct rule){
					.kind = RULE_OFFSET,
					.off = mul_off((int64_t)rd_uleb(&c), cie->data_align)};
			else
				rd_uleb(&c);
			break;
		case 3: /* DW_CFA_restore */
			rr = reg_rule(st, cie, op & 0x3f);
			if (rr && init)
				*rr = *init_rule(init, st, rr);
			break;
		default:
			switch (op) {
			case 0x00: /* nop */
			case 0x2e: /* GNU_args_size */
				if (op)
					rd_uleb(&c);
				break;
			case 0x01: /* set_loc */
				newloc = rd_encoded(&c, cie->fde_enc, s);
				setloc = true;
				break;
			case 0x02:
			case 0x03:
			case 0x04: /* advance_loc1/2/4 */
				delta = rd_u(&c, op == 0x02 ? 1 : op == 0x03 ? 2 : 4);
				advance = true;
				break;
			case 0x05: /* offset_extended */
			case 0x14: /* val_offset */
			case 0x2f: /* GNU_negative_offset_extended */
				reg = rd_uleb(&c);
				delta = rd_uleb(&c);
				rr = reg_rule(st, cie, reg);
				if (rr && op != 0x14) {
					int64_t off = mul_off((int64_t)delta, cie->data_align);

					/* negative_offset: -off, unless that overflows too */
					if (op == 0x2f)
						off = off == INT64_MAX || off == INT64_MIN
							      ? INT64_MAX
							      : -off;
					*rr = (struct rule){.kind = RULE_OFFSET, .off = off};
				} else if (rr) {
					*rr = (struct rule){.kind = RULE_OTHER};
				}
				delta = 0;
				break;
			case 0x11: /* offset_extended_sf */
			case 0x15: /* val_offset_sf */
				reg = rd_uleb(&c);
				rr = reg_rule(st, cie, reg);
				{
					int64_t off = mul_off(rd_sleb(&c), cie->data_align);

					if (rr)
						*rr = (struct rule){.kind = op == 0x11 ? RULE_OFFSET
										       : RULE_OTHER,
								    .off = off};
				}
				break;
			case 0x06: /* restore_extended */
				reg = rd_uleb(&c);
				rr = reg_rule(st, cie, reg);
				if (rr && init)
					*rr = *init_rule(init, st, rr);
				break;
			case 0x07: /* undefined */
			case 0x08: /* same_value */
				rr = reg_rule(st, cie, rd_uleb(&c));
				if (rr)
					*rr = (struct rule){.kind = op == 0x07 ? RULE_UNDEF
									       : RULE_SAME};
				break;
			case 0x09: /* register */
				rr = reg_rule(st, cie, rd_uleb(&c));
				reg = rd_uleb(&c);
				if (rr)
					*rr = (struct rule){.kind = RULE_OTHER};
				break;
			case 0x0a: /* remember_state */
				if (depth == REMEMBER_DEPTH)
					return -EBADMSG;
				stack[depth++] = *st;
				break;
			case 0x0b: /* restore_state: the location is not restored */
				if (depth == 0)
					return -EBADMSG;
				*st = stack[--depth];
				break;
			case 0x0c: /* def_cfa */
				st->cfa_expr = false;
				st->cfa_reg = rd_uleb(&c);
				st->cfa_off = (int64_t)rd_uleb(&c);
				break;
			case 0x12: /* def_cfa_sf */
				st->cfa_expr = false;
				st->cfa_reg = rd_uleb(&c);
				st->cfa_off = mul_off(rd_sleb(&c), cie->data_align);
				break;
			case 0x0d: /* def_cfa_register */
				st->cfa_expr = false;
				st->cfa_reg = rd_uleb(&c);
				break;
			case 0x0e: /* def_cfa_offset */
				st->cfa_off = (int64_t)rd_uleb(&c);
				break;
			case 0x13: /* def_cfa_offset_sf */
				st->cfa_off = mul_off(rd_sleb(&c), cie->data_align);
				break;
			case 0x0f: /* def_cfa_expression */
				st->cfa_expr = true;
				st->expr = rd_block(&c, &st->expr_len);
				break;
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				rr = reg_rule(st, cie, rd_uleb(&c));
				{
					uint64_t len;
					const uint8_t *e = rd_block(&c, &len);

					if (rr)
						*rr = (struct rule){.kind = op == 0x10 ? RULE_EXPR
										       : RULE_OTHER,
								    .expr = e,
								    .len = len};
				}
				break;
			default:
				return -EBADMSG;
			}
		}
		if (c.err)
			return -EBADMSG;
		if (!fde || (!advance && !setloc))
			continue;
		if (advance) {
			if (__builtin_mul_overflow(delta, cie->code_align, &delta) ||
			    *loc + delta < *loc)
				return -EBADMSG;
			newloc = *loc + delta;
		}
		if (newloc < *loc)
			return -EBADMSG; /* set_loc backwards */
		if (*loc < pc_end) {
			err = emit(b, cie, st, *loc);
			if (err)
				return err;
		}
		*loc = newloc;
	}
	return c.err ? -EBADMSG : 0;
}

static int read_fde(struct builder *b, struct rec *r, size_t cie_off)
{
	const struct cfi_sec *s = b->sec;
	struct cfa_state init = {0}, st;
	struct cur *c = &r->body;
	struct raw_row end = {.kinds = PROF_UNWIND_CFA_NONE};
	uint64_t pc, range, loc;
	struct cie cie;
	int err;

	err = rd_cie(s, cie_off, &cie);
	if (err)
		return err;
	pc = rd_encoded(c, cie.fde_enc, s);
	range = rd_encoded(c, cie.fde_enc & PE_FORMAT, s);
	if (cie.has_z) {
		uint64_t zlen;

		rd_block(c, &zlen);
	}
	if (c->err || pc + range < pc)
		return -EBADMSG;
	if (range == 0)
		return 0;
	b->fde_first = b->nr;
	b->stats.fdes++;
	/* The CFA before the CIE says anything: unknown (an FDE whose CIE defines none). */
	init.cfa_reg = ~0ULL;
	loc = pc;
	err = run_cfi(b, &cie, cie.insns, cie.insns_end, &init, NULL, false, &loc, pc + range);
	st = init;
	if (!err)
		err = run_cfi(b, &cie, c->p, c->end, &st, &init, true, &loc, pc + range);
	if (!err && loc < pc + range)
		err = emit(b, &cie, &st, loc);
	if (err == -EBADMSG) {
		/* Unreadable instructions: the whole function is unsupported, not a guess. */
		struct raw_row bad = {.pc = pc, .kinds = PROF_UNWIND_CFA_UNSUPPORTED};

		b->nr = b->fde_first;
		b->stats.bad_fdes++;
		err = push_raw(b, &bad);
	}
	if (err)
		return err;
	end.pc = pc + range;
	return push_raw(b, &end);
}

/* Every record of the section: FDEs become raw rows. */
static int scan(struct builder *b, const struct unwind_table_opts *o)
{
	const struct cfi_sec *s = b->sec;
	uint64_t deadline = (uint64_t)clock__mono_ms() + o->max_ms;
	size_t off = 0;
	uint32_t n = 0;
	int err;

	while (off < s->size) {
		struct rec r;

		if (++n % TIME_CHECK_FDES == 0 && (uint64_t)clock__mono_ms() > deadline)
			return -ETIME;
		err = rd_rec(s, off, &r);
		if (err < 0)
			return err;
		if (err == 1)
			break; /* terminator */
		if (!rec_is_cie(s, &r)) {
			size_t cie_off;

			if (s->eh) {
				if (r.id > r.id_off)
					return -EBADMSG;
				cie_off = r.id_off - (size_t)r.id;
			} else {
				if (r.id >= s->size)
					return -EBADMSG;
				cie_off = (size_t)r.id;
			}
			err = read_fde(b, &r, cie_off);
			if (err)
				return err;
		}
		off = r.end;
	}
	return 0;
}

static int cmp_raw(const void *pa, const void *pb)
{
	const struct raw_row *a = pa, *b = pb;
	bool ea = a->kinds == PROF_UNWIND_CFA_NONE, eb = b->kinds == PROF_UNWIND_CFA_NONE;

	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	if (ea != eb)
		return ea ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* A stretch of raw rows already in cmp_raw's order: one FDE's, or part of one. */
struct raw_run {
	size_t first, n;
};

static int cmp_run(const void *pa, const void *pb, void *raw)
{
	const struct raw_run *a = pa, *b = pb;
	const struct raw_row *r = raw;

	return cmp_raw(&r[a->first], &r[b->first]);
}

/*
 * The raw rows in order, one at a time: the runs (sorted by their first rows) merged.  A run
 * joins the merge when its first row is next; the heap holds the runs under way, which are
 * one or two but where an FDE spans others (libtorch_cpu has one over megabytes of code).
 */
struct raw_order {
	const struct raw_row *raw;
	struct raw_run *runs; /* each run's rows not yet read */
	size_t nruns, started;
	size_t *heap, nheap; /* runs under way, a min-heap by their next rows */
};

static bool run_before(const struct raw_order *o, size_t a, size_t b)
{
	return cmp_raw(&o->raw[o->runs[a].first], &o->raw[o->runs[b].first]) < 0;
}

static void heap_down(struct raw_order *o, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;

		if (l < o->nheap && run_before(o, o->heap[l], o->heap[m]))
			m = l;
		if (l + 1 < o->nheap && run_before(o, o->heap[l + 1], o->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = o->heap[i];
		o->heap[i] = o->heap[m];
		o->heap[m] = t;
		i = m;
	}
}

static void heap_push(struct raw_order *o, size_t run)
{
	size_t i = o->nheap++;

	o->heap[i] = run;
	while (i && run_before(o, o->heap[i], o->heap[(i - 1) / 2])) {
		size_t p = (i - 1) / 2, t = o->heap[i];

		o->heap[i] = o->heap[p];
		o->heap[p] = t;
		i = p;
	}
}

static const struct raw_row *order_next(struct raw_order *o)
{
	const struct raw_row *r;
	struct raw_run *run;

	while (o->started < o->nruns && (!o->nheap || !run_before(o, o->heap[0], o->started)))
		heap_push(o, o->started++);
	if (!o->nheap)
		return NULL;
	run = &o->runs[o->heap[0]];
	r = &o->raw[run->first++];
	if (--run->n == 0)
		o->heap[0] = o->heap[--o->nheap];
	heap_down(o, 0);
	return r;
}

/*
 * The table from the raw rows in o's order: the last row at each pc, equal neighbours merged.
 * -EAGAIN when two rows come out of order (never from a correct merge: the rows are then
 * sorted instead).
 */
static int emit_rows(struct unwind_table *t, struct builder *b, struct raw_order *o,
		     uint32_t max_rows)
{
	const struct raw_row *r = order_next(o), *next;
	struct prof_unwind_row *rows;
	size_t n = 0;

	while (r && r->kinds == PROF_UNWIND_CFA_NONE)
		r = order_next(o);
	if (!r)
		return -ENODATA;
	t->base = r->pc;
	rows = calloc(b->nr, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (; r; r = next) {
		struct prof_unwind_row row;

		next = order_next(o);
		if (next && cmp_raw(r, next) > 0) {
			free(rows);
			return -EAGAIN;
		}
		if (next && next->pc == r->pc)
			continue;
		if (r->pc - t->base > UINT32_MAX) {
			free(rows);
			return -E2BIG;
		}
		row = (struct prof_unwind_row){(uint32_t)(r->pc - t->base), r->kinds, r->rbp_off,
					       r->cfa_off};
		if (n && rows[n - 1].kinds == row.kinds && rows[n - 1].rbp_off == row.rbp_off &&
		    rows[n - 1].cfa_off == row.cfa_off)
			continue;
		rows[n++] = row;
	}
	if (n > max_rows) {
		free(rows);
		return -E2BIG;
	}
	for (size_t i = 0; i < n; i++)
		if (prof_unwind_row__cfa(&rows[i]) == PROF_UNWIND_CFA_UNSUPPORTED)
			b->stats.unsupported_rows++;
	t->rows = rows;
	t->nr = (uint32_t)n;
	t->stats = b->stats;
	return 0;
}

/*
 * The raw rows in cmp_raw's order → the table.  Rather than sorting the rows, the FDEs (runs in
 * order already) are sorted by their first rows and merged (libtorch_cpu: 1.5 M raw rows in
 * 220,000 FDEs; qsort of the rows was 40 % of its build); when the runs are too many to gain by
 * it (or there is no memory for them), the rows are sorted.
 */
static int finish(struct unwind_table *t, struct builder *b, uint32_t max_rows)
{
	struct raw_run *runs = NULL, whole = {0, b->nr};
	size_t nruns = 0, first = 0, *heap = NULL, one = 0;
	int err = -EAGAIN;

	if (b->nr == 0)
		return -ENODATA;
	for (size_t i = 1; i <= b->nr && runs != &whole; i++) {
		/* A run ends with its FDE (its end row), so that the merge holds only the FDEs that
		 * overlap the next: an object's hot and cold parts, in order, would make one run
		 * that spans every other. */
		if (i < b->nr && b->raw[i - 1].kinds != PROF_UNWIND_CFA_NONE &&
		    cmp_raw(&b->raw[i - 1], &b->raw[i]) <= 0)
			continue;
		if (nruns % 4096 == 0) {
			struct raw_run *more =
				nruns >= b->nr / 2 ? NULL
						   : realloc(runs, (nruns + 4096) * sizeof(*runs));

			if (!more) { /* too many runs (or no memory for them): sort the rows */
				free(runs);
				runs = &whole;
				break;
			}
			runs = more;
		}
		runs[nruns++] = (struct raw_run){first, i - first};
		first = i;
	}
	if (runs != &whole && (heap = malloc(nruns * sizeof(*heap)))) {
		qsort_r(runs, nruns, sizeof(*runs), cmp_run, b->raw);
		err = emit_rows(t, b,
				&(struct raw_order){
					.raw = b->raw, .runs = runs, .nruns = nruns, .heap = heap},
				max_rows);
	}
	free(heap);
	if (runs != &whole)
		free(runs);
	if (err != -EAGAIN)
		return err;
	qsort(b->raw, b->nr, sizeof(*b->raw), cmp_raw);
	whole = (struct raw_run){0, b->nr};
	return emit_rows(
		t, b, &(struct raw_order){.raw = b->raw, .runs = &whole, .nruns = 1, .heap = &one},
		max_rows);
}

static int build_sec(struct unwind_table *t, const struct cfi_sec *s,
		     const struct unwind_table_opts *o)
{
	struct builder b = {.sec = s};
	int err;

	/* Raw rows include one end row per FDE: allow twice the final cap. */
	b.max = (size_t)o->max_rows * 2 + 2;
	err = scan(&b, o);
	if (!err)
		err = finish(t, &b, o->max_rows);
	free(b.raw);
	return err;
}

/* opts with the defaults filled in. */
static void opts__fill(struct unwind_table_opts *o, const struct unwind_table_opts *opts)
{
	*o = opts ? *opts : (struct unwind_table_opts){0};
	if (!o->max_rows || o->max_rows > PROF_UNWIND_MAX_ROWS)
		o->max_rows = o->max_rows ? PROF_UNWIND_MAX_ROWS : UNWIND_TABLE_MAX_ROWS;
	if (!o->max_bytes)
		o->max_bytes = UNWIND_TABLE_MAX_BYTES;
	if (!o->max_ms)
		o->max_ms = UNWIND_TABLE_MAX_MS;
}

int unwind_table__build_cfi(struct unwind_table **out, const void *data, size_t size,
			    uint64_t vaddr, bool debug_frame, const struct unwind_table_opts *opts)
{
	struct unwind_table_opts o;
	struct cfi_sec s = {data, size, vaddr, !debug_frame};
	struct unwind_table *t = NULL;
	int err;

	*out = NULL;
	opts__fill(&o, opts);
	if (size == 0)
		return -ENODATA;
	if (size > o.max_bytes)
		return -EFBIG;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->source = debug_frame ? UNWIND_TABLE_DEBUG_FRAME : UNWIND_TABLE_EH_FRAME;
	err = build_sec(t, &s, &o);
	if (err)
		goto cleanup;
	*out = t;
	t = NULL;
cleanup:
	unwind_table__free(t);
	return err;
}

int unwind_table__eh_frame_ptr(uint64_t *out, const void *hdr, size_t size, uint64_t vaddr)
{
	struct cfi_sec h = {hdr, size, vaddr, true};
	struct cur c = {h.data, h.data + h.size, false};
	uint8_t enc;

	if (rd_u(&c, 1) != 1)
		return -ENODATA; /* version */
	enc = (uint8_t)rd_u(&c, 1);
	rd_u(&c, 2); /* fde_count_enc, table_enc: the table is not used, we scan */
	if (enc == PE_OMIT)
		return -ENODATA;
	*out = rd_encoded(&c, enc, &h);
	return c.err ? -EBADMSG : 0;
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

uint64_t unwind_table__base(const struct unwind_table *t)
{
	return t->base;
}

const struct prof_unwind_row *unwind_table__rows(const struct unwind_table *t, uint32_t *nr)
{
	*nr = t->nr;
	return t->rows;
}

enum unwind_table_source unwind_table__source(const struct unwind_table *t)
{
	return t->source;
}

const struct unwind_table_stats *unwind_table__stats(const struct unwind_table *t)
{
	return &t->stats;
}

int unwind_table__find(const struct unwind_table *t, struct prof_unwind_row *out, uint64_t vaddr)
{
	long i;

	memset(out, 0, sizeof(*out));
	if (vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return -ENOENT;
	i = prof_unwind__search(t->rows, t->nr, (uint32_t)(vaddr - t->base));
	if (i < 0 || prof_unwind_row__cfa(&t->rows[i]) == PROF_UNWIND_CFA_NONE)
		return -ENOENT;
	*out = t->rows[i];
	return 0;
}
