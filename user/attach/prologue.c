// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/prologue.h"

#include <stdbool.h>

/* Length of an instruction that only writes flags (test/cmp), or 0. */
static size_t flag_only_len(const uint8_t *c, size_t len)
{
	size_t rex = 0;

	if (len >= 1 && (c[0] & 0xf0) == 0x40)
		rex = 1; /* REX prefix */
	if (len < rex + 2)
		return 0;
	switch (c[rex]) {
	case 0x84: /* test r/m8, r8 */
	case 0x85: /* test r/m, r */
	case 0x38: /* cmp r/m8, r8 */
	case 0x39: /* cmp r/m, r */
	case 0x3a: /* cmp r8, r/m8 */
	case 0x3b: /* cmp r, r/m */
		/* register-register form only: a memory operand needs a full decoder */
		return (c[rex + 1] >> 6) == 3 ? rex + 2 : 0;
	case 0x80: /* cmpb $imm8, r/m8 (reg field 7) */
		if (((c[rex + 1] >> 3) & 7) != 7)
			return 0;
		if ((c[rex + 1] >> 6) == 3)
			return len >= rex + 3 ? rex + 3 : 0;
		/* mod=00 rm=101: disp32(%rip) */
		if ((c[rex + 1] & 0xc7) == 0x05)
			return len >= rex + 7 ? rex + 7 : 0;
		return 0;
	case 0x83: /* cmp $imm8, r/m (reg field 7), register form */
		if (((c[rex + 1] >> 3) & 7) == 7 && (c[rex + 1] >> 6) == 3)
			return len >= rex + 3 ? rex + 3 : 0;
		return 0;
	default:
		return 0;
	}
}

/* Instructions the x86 uprobe code emulates rather than single-steps. */
static bool emulated(const uint8_t *c, size_t len)
{
	if (len < 1)
		return false;
	if (c[0] >= 0x50 && c[0] <= 0x57) /* push r64 */
		return true;
	if (c[0] == 0x41 && len >= 2 && c[1] >= 0x50 && c[1] <= 0x57) /* push r8..r15 */
		return true;
	if (c[0] >= 0x70 && c[0] <= 0x7f) /* jcc rel8 */
		return true;
	if (c[0] == 0x0f && len >= 2 && c[1] >= 0x80 && c[1] <= 0x8f) /* jcc rel32 */
		return true;
	if (c[0] == 0xeb || c[0] == 0xe9 || c[0] == 0xe8) /* jmp rel8/rel32, call rel32 */
		return true;
	if (c[0] == 0x90) /* nop */
		return true;
	return false;
}

/*
 * Length of an instruction that changes neither the stack pointer nor an argument register
 * nor control flow, so an entry probe after it sees the function's arguments: endbr64, a
 * flag-only test/cmp, `mov $imm32,%eax` (eax is not an argument register).  0 otherwise.
 */
static size_t skippable_len(const uint8_t *c, size_t len)
{
	if (len >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
		return 4; /* endbr64: single-stepped by the kernel, a no-op for us */
	if (len >= 5 && c[0] == 0xb8)
		return 5; /* mov $imm32,%eax */
	return flag_only_len(c, len);
}

size_t prologue__probe_offset(const uint8_t *code, size_t len)
{
	size_t off = 0;

	if (emulated(code, len))
		return 0;
	/* A few skippable instructions at most: anything else could move an argument register. */
	for (int i = 0; i < 4; i++) {
		size_t n = skippable_len(code + off, len - off);

		if (!n)
			return 0;
		off += n;
		if (emulated(code + off, len - off))
			return off;
	}
	return 0;
}
