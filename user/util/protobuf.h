/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Protocol buffers wire-format encoder, just what profile.proto needs: varints (wire type 0),
 * length-delimited fields (wire type 2: strings, bytes, embedded messages) and packed repeated
 * integers.  Messages are built bottom-up: encode a submessage into its own pbuf, then embed it.
 *
 * Errors are sticky: after a failed allocation every later call on the buffer appends nothing
 * and returns the same negative errno, so an encoder may check once, with pbuf__err(), at the
 * end of a message.
 */
#ifndef PROF_PROTOBUF_H
#define PROF_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

struct pbuf {
	uint8_t *data;
	size_t len, cap;
	int err; /* 0 or the first negative errno */
};

enum pb_wire_type {
	PB_WIRE_VARINT = 0,
	PB_WIRE_I64 = 1,
	PB_WIRE_LEN = 2,
};

/* Longest varint: 64 bits in 7-bit groups. */
#define PB_VARINT_MAX 10

void pbuf__init(struct pbuf *b);
/* Frees the bytes; the buffer can be reused after pbuf__init. */
void pbuf__release(struct pbuf *b);
/* Empties the buffer, keeping its allocation (and clearing a sticky error). */
void pbuf__reset(struct pbuf *b);
int pbuf__err(const struct pbuf *b);
/* Raw bytes, no tag. */
int pbuf__append(struct pbuf *b, const void *data, size_t len);

/* Encodes v into out (at least PB_VARINT_MAX bytes); returns the number of bytes. */
size_t pb__encode_varint(uint8_t *out, uint64_t v);
/* Raw varint, no tag.  int64 fields pass their value cast to uint64_t (negative = 10 bytes). */
int pb__varint(struct pbuf *b, uint64_t v);
int pb__tag(struct pbuf *b, uint32_t field, enum pb_wire_type wt);

/* Field encoders: tag + payload.  They always write, even a zero (callers skip defaults). */
int pb__field_varint(struct pbuf *b, uint32_t field, uint64_t v);
/* fixed64: eight bytes, little-endian (OTLP's timestamps). */
int pb__field_fixed64(struct pbuf *b, uint32_t field, uint64_t v);
int pb__field_bytes(struct pbuf *b, uint32_t field, const void *data, size_t len);
int pb__field_string(struct pbuf *b, uint32_t field, const char *s);
/* Embeds msg (its error, if any, becomes b's). */
int pb__field_message(struct pbuf *b, uint32_t field, const struct pbuf *msg);
/* Packed repeated fields; nothing is written when n == 0, as proto3 encoders do. */
int pb__field_packed_u64(struct pbuf *b, uint32_t field, const uint64_t *v, size_t n);
int pb__field_packed_i64(struct pbuf *b, uint32_t field, const int64_t *v, size_t n);
int pb__field_packed_u32(struct pbuf *b, uint32_t field, const uint32_t *v, size_t n);

#endif /* PROF_PROTOBUF_H */
