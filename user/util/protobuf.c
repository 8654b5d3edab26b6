// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/protobuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void pbuf__init(struct pbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void pbuf__release(struct pbuf *b)
{
	free(b->data);
	pbuf__init(b);
}

void pbuf__reset(struct pbuf *b)
{
	b->len = 0;
	b->err = 0;
}

int pbuf__err(const struct pbuf *b)
{
	return b->err;
}

/* Room for n more bytes; records the failure so later calls are no-ops. */
static int reserve(struct pbuf *b, size_t n)
{
	size_t cap;
	uint8_t *tmp;

	if (b->err)
		return b->err;
	if (b->cap - b->len >= n)
		return 0;
	if (n > SIZE_MAX / 2 - b->len) {
		b->err = -E2BIG;
		return b->err;
	}
	cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	tmp = realloc(b->data, cap);
	if (!tmp) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->data = tmp;
	b->cap = cap;
	return 0;
}

int pbuf__append(struct pbuf *b, const void *data, size_t len)
{
	int err = reserve(b, len);

	if (err)
		return err;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	return 0;
}

size_t pb__encode_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int pb__varint(struct pbuf *b, uint64_t v)
{
	int err = reserve(b, PB_VARINT_MAX);

	if (err)
		return err;
	b->len += pb__encode_varint(b->data + b->len, v);
	return 0;
}

int pb__tag(struct pbuf *b, uint32_t field, enum pb_wire_type wt)
{
	return pb__varint(b, ((uint64_t)field << 3) | wt);
}

int pb__field_varint(struct pbuf *b, uint32_t field, uint64_t v)
{
	int err = pb__tag(b, field, PB_WIRE_VARINT);

	return err ? err : pb__varint(b, v);
}

int pb__field_fixed64(struct pbuf *b, uint32_t field, uint64_t v)
{
	uint8_t le[8];
	int err = pb__tag(b, field, PB_WIRE_I64);

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	return err ? err : pbuf__append(b, le, sizeof(le));
}

int pb__field_bytes(struct pbuf *b, uint32_t field, const void *data, size_t len)
{
	int err;

	err = pb__tag(b, field, PB_WIRE_LEN);
	if (err)
		return err;
	err = pb__varint(b, len);
	if (err)
		return err;
	return pbuf__append(b, data, len);
}

int pb__field_string(struct pbuf *b, uint32_t field, const char *s)
{
	return pb__field_bytes(b, field, s, s ? strlen(s) : 0);
}

int pb__field_message(struct pbuf *b, uint32_t field, const struct pbuf *msg)
{
	if (msg->err && !b->err)
		b->err = msg->err;
	return pb__field_bytes(b, field, msg->data, msg->len);
}

enum packed_kind { PACKED_U64, PACKED_I64, PACKED_U32 };

static uint64_t packed_get(const void *v, size_t i, enum packed_kind kind)
{
	switch (kind) {
	case PACKED_I64:
		return (uint64_t)((const int64_t *)v)[i];
	case PACKED_U32:
		return ((const uint32_t *)v)[i];
	default:
		return ((const uint64_t *)v)[i];
	}
}

/* The length prefix comes first, so size the payload before writing it. */
static int packed(struct pbuf *b, uint32_t field, const void *v, size_t n, enum packed_kind kind)
{
	size_t len = 0;
	int err;

	if (!n)
		return b->err;
	for (size_t i = 0; i < n; i++)
		len += varint_len(packed_get(v, i, kind));
	err = pb__tag(b, field, PB_WIRE_LEN);
	if (err)
		return err;
	err = pb__varint(b, len);
	if (err)
		return err;
	err = reserve(b, len);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		b->len += pb__encode_varint(b->data + b->len, packed_get(v, i, kind));
	return 0;
}

int pb__field_packed_u64(struct pbuf *b, uint32_t field, const uint64_t *v, size_t n)
{
	return packed(b, field, v, n, PACKED_U64);
}

int pb__field_packed_i64(struct pbuf *b, uint32_t field, const int64_t *v, size_t n)
{
	return packed(b, field, v, n, PACKED_I64);
}

int pb__field_packed_u32(struct pbuf *b, uint32_t field, const uint32_t *v, size_t n)
{
	return packed(b, field, v, n, PACKED_U32);
}
