/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where to put an entry uprobe so the kernel emulates the probed instruction instead of
 * single-stepping it out of line (≈ 0.8 µs instead of ≈ 15 µs a hit on our machines,
 * DESIGN.md §7).  glibc's free begins with `test %rdi,%rdi; je`, posix_memalign & co with
 * `cmpb $0,rip-rel; …`, libstdc++'s operator new with `endbr64; test; mov $1,%eax`: those
 * are skipped and the probe lands on the first emulated instruction (jcc, jmp, push, nop),
 * before any argument register or the stack pointer changes.
 */
#ifndef PROF_PROLOGUE_H
#define PROF_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>

/* Byte offset into the function for its entry probe; 0 when no better place is proven. */
size_t prologue__probe_offset(const uint8_t *code, size_t len);

#endif /* PROF_PROLOGUE_H */
