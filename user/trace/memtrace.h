/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Jane Street memtrace's trace format (shared/notes/formats.md): little-endian CTF packets of at
 * most 32 KiB, a trace_info packet first, then location, alloc and collect events.  This module
 * owns the byte-level pieces (vint, packet header, location packing, the move-to-front string
 * tables) and a streaming writer; user/trace/memtrace_read.c parses traces back.
 *
 * The writer keeps one packet in memory and the location codes it has written; packets go to
 * the FILE as they fill, so a long trace costs no more RAM than a short one.
 */
#ifndef PROF_MEMTRACE_H
#define PROF_MEMTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MEMTRACE_MAGIC	     0xC1FC1FC1u
#define MEMTRACE_VERSION     3
#define MEMTRACE_MAX_PACKET  32768 /* bytes, header included */
#define MEMTRACE_HEADER_SIZE 68	   /* version 3 (version 1 and 2: 66, no domain) */
#define MEMTRACE_MTF_LEN     31	   /* entries of a move-to-front table; code 31 = a new string */
#define MEMTRACE_NO_VERIFIER 0xFFFF
#define MEMTRACE_CACHE_SIZE  (1u << 14) /* backtrace cache buckets */
#define MEMTRACE_TIME_BITS   25		/* µs in an event header */
/* A packet spans less than 2^25 µs so that event times fit their 25 bits. */
#define MEMTRACE_PACKET_SPAN 30000000ull
/* A location record whose strings would make it longer is written as "unknown". */
#define MEMTRACE_LOC_MAX     4096
#define MEMTRACE_CODE_MASK   ((1ull << 62) - 1) /* location codes stay OCaml ints */

enum memtrace_ev {
	MEMTRACE_EV_TRACE_INFO = 0,
	MEMTRACE_EV_LOCATION = 1,
	MEMTRACE_EV_ALLOC = 2,
	MEMTRACE_EV_PROMOTE = 3,
	MEMTRACE_EV_COLLECT = 4,
	MEMTRACE_EV_SHORT_ALLOC = 100, /* 101..116: length 1..16 words, one sample, minor */
};

enum memtrace_source {
	MEMTRACE_SRC_MINOR = 0,
	MEMTRACE_SRC_MAJOR = 1,
	MEMTRACE_SRC_EXTERNAL = 2,
};

struct memtrace_header {
	uint32_t packet_bits;	   /* packet size in bits, header included */
	uint64_t ts_begin, ts_end; /* µs since the epoch */
	uint32_t flush_duration;
	uint16_t version;
	uint64_t pid;
	uint16_t domain;
	uint16_t verify_ix, verify_pred; /* MEMTRACE_NO_VERIFIER: no check */
	uint64_t verify_val;
	uint64_t alloc_id_begin, alloc_id_end;
};

/* v as a vint into buf (at least 9 bytes): its length. */
size_t memtrace__put_vint(uint8_t *buf, uint64_t v);
/* A vint from buf[0..len): 0 and *used bytes, or -EBADMSG when cut short. */
int memtrace__get_vint(uint64_t *out, size_t *used, const uint8_t *buf, size_t len);

/* The 68-byte version-3 header. */
void memtrace__put_header(uint8_t out[MEMTRACE_HEADER_SIZE], const struct memtrace_header *h);
/* A header of any version 1..3 from buf[0..len): 0 and its length in *used, -EBADMSG (cut
 * short, bad magic, times or ids out of order, size smaller than the header), -ENOTSUP (a
 * later version). */
int memtrace__get_header(struct memtrace_header *out, size_t *used, const uint8_t *buf, size_t len);

/* One location's 48 bits: line 0-19, start_char 20-27, end_char 28-37, filename code 38-42,
 * defname code 43-47 (values clamped to their widths). */
uint64_t memtrace__pack_loc(uint32_t line, uint32_t start_char, uint32_t end_char,
			    unsigned file_code, unsigned def_code);
void memtrace__unpack_loc(uint64_t bits, uint32_t *line, uint32_t *start_char, uint32_t *end_char,
			  unsigned *file_code, unsigned *def_code);

/*
 * A move-to-front table of strings.  For file names each entry carries the table of function
 * names seen with that file.  Both the writer and the reader keep one for the whole trace.
 */
struct memtrace_mtf {
	char *name[MEMTRACE_MTF_LEN];
	struct memtrace_mtf *sub[MEMTRACE_MTF_LEN];
	unsigned n;
};
void memtrace_mtf__free(struct memtrace_mtf *t);
/* Writer side: s's index (moved to the front), or MEMTRACE_MTF_LEN after pushing s in front
 * (the entry pushed off, if any, is freed).  -ENOMEM. */
int memtrace_mtf__encode(struct memtrace_mtf *t, const char *s, bool with_sub);
/* Reader side: the string of code (moved to the front), or for code MEMTRACE_MTF_LEN the new
 * string s pushed in front; its sub-table is the one pushed off when the table was full (as
 * memtrace's reader does), else a new one.  NULL with -EBADMSG (an empty slot) or -ENOMEM in
 * *err. */
struct memtrace_mtf_entry_ref {
	const char *name;
	struct memtrace_mtf *sub;
};
int memtrace_mtf__decode(struct memtrace_mtf_entry_ref *out, struct memtrace_mtf *t, unsigned code,
			 const char *s, bool with_sub);

/* A stable 62-bit code of a location: FNV-1a of file, function and line. */
uint64_t memtrace__loc_code(const char *file, const char *function, uint32_t line);

struct memtrace_loc {
	const char *file;
	const char *defname;
	uint32_t line;
};

struct memtrace_writer_opts {
	double sample_rate; /* per word */
	uint8_t word_size;
	const char *executable, *host, *runtime_params;
	uint64_t pid;
	uint64_t start_us; /* the trace's start (µs since the epoch) */
	/* Bytes reserved for the context string: memtrace_writer__finish rewrites it in place
	 * (padded with spaces) when the FILE can seek. */
	size_t context_room;
	const char *context; /* initial context */
};

struct memtrace_writer;

/* Writes the trace_info packet to f (not closed by the writer).  0 or -errno. */
int memtrace_writer__new(struct memtrace_writer **out, FILE *f,
			 const struct memtrace_writer_opts *o);
void memtrace_writer__free(struct memtrace_writer *w);
/* Whether location code was given to memtrace_writer__location already. */
bool memtrace_writer__has_location(const struct memtrace_writer *w, uint64_t code);
/* Queue the location record of code (locs outermost first): written before the packet that
 * next flushes.  A code already given is ignored.  0 or -errno. */
int memtrace_writer__location(struct memtrace_writer *w, uint64_t code,
			      const struct memtrace_loc *locs, unsigned n);
/* An allocation at ts_us (raised to the last event's time if earlier) with its backtrace as
 * location codes, root first, each written as a cache miss.  *id gets its object id. */
int memtrace_writer__alloc(struct memtrace_writer *w, uint64_t *id, uint64_t ts_us, uint64_t length,
			   uint64_t nsamples, enum memtrace_source src, const uint64_t *codes,
			   unsigned ncodes);
/* Object id (of an earlier alloc) is collected. */
int memtrace_writer__collect(struct memtrace_writer *w, uint64_t ts_us, uint64_t id);
/* Writes what is pending (location packets, then the event packet).  0 or -errno. */
int memtrace_writer__flush(struct memtrace_writer *w);
/* Flush, then put context (NULL: keep it) into the reserved room when the FILE seeks. */
int memtrace_writer__finish(struct memtrace_writer *w, const char *context);
/* Allocations written so far. */
uint64_t memtrace_writer__allocs(const struct memtrace_writer *w);

#endif /* PROF_MEMTRACE_H */
