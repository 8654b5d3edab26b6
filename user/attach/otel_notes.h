/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Does an ELF file carry the otel_memory USDT probes (an in-process heap sampler: the
 * OpenTelemetry eBPF profiler's memory contract, docs/how-it-works.md)?  Its .note.stapsdt
 * notes are read with bounded reads through a callback, so the same code reads a mapped file
 * (pread) and a fuzzer's bytes.
 */
#ifndef PROF_OTEL_NOTES_H
#define PROF_OTEL_NOTES_H

#include <stddef.h>
#include <stdint.h>

/* Which otel_memory probes (and our sampler's loss probe) were found. */
enum otel_notes_probe {
	OTEL_NOTES_ALLOC = 1, /* otel_memory:alloc(ptr, size, weight) */
	OTEL_NOTES_FREE = 2,  /* otel_memory:free(ptr) */
	OTEL_NOTES_BOTH = OTEL_NOTES_ALLOC | OTEL_NOTES_FREE,
	/* One of their sites is a 5-byte nop, which Linux 6.18 optimizes into a call that
	 * corrupts a leaf's red zone and crashes children forked after it: not attached. */
	OTEL_NOTES_NOP5 = 4,
	/* bpftrace_prof:sampler_lost(size): our preloaded sampler's samples lost to its full set.
	 */
	OTEL_NOTES_LOST = 8,
};

/* Limits on what a foreign file makes us read. */
#define OTEL_NOTES_MAX_SECTIONS 4096
#define OTEL_NOTES_MAX_BYTES	(1u << 20) /* .note.stapsdt larger than this: not read */
#define OTEL_NOTES_MAX_SITES	64	   /* sites whose bytes are checked (of the probes above) */

/* Read len bytes at off into buf: 0, or -errno (short read: -EIO). */
typedef int (*otel_notes_read_fn)(void *ctx, void *buf, size_t len, uint64_t off);

/* The probes (enum otel_notes_probe) named in a .note.stapsdt section's bytes. */
unsigned otel_notes__scan(const uint8_t *data, size_t len);

/*
 * The probes named in the .note.stapsdt section of an ELF64 little-endian file of size bytes
 * read through read(ctx, ...), with OTEL_NOTES_NOP5 when one of their first 64 sites is a 5-byte
 * nop: *out (0: none, or no such section).  0, -ENOEXEC (not such an
 * ELF file, or malformed), -EFBIG (the section over OTEL_NOTES_MAX_BYTES), -ENOMEM, or a read's
 * -errno.
 */
int otel_notes__read(unsigned *out, otel_notes_read_fn read, void *ctx, uint64_t size);
/* The same for the file open as fd. */
int otel_notes__fd(unsigned *out, int fd);

#endif /* PROF_OTEL_NOTES_H */
