// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "util/protobuf.h"

static int setup(void **state)
{
	static struct pbuf b;

	pbuf__init(&b);
	*state = &b;
	return 0;
}

static int teardown(void **state)
{
	pbuf__release(*state);
	return 0;
}

#define assert_bytes(b, ...)                                          \
	do {                                                          \
		static const uint8_t want_[] = {__VA_ARGS__};         \
		assert_int_equal(pbuf__err(b), 0);                    \
		assert_int_equal((b)->len, sizeof(want_));            \
		assert_memory_equal((b)->data, want_, sizeof(want_)); \
	} while (0)

/* Expected bytes worked out by hand: 7 bits a byte, least significant group first, the high
 * bit set on every byte but the last. */
static void test_protobuf__varints(void **state)
{
	struct pbuf *b = *state;

	pb__varint(b, 0);
	assert_bytes(b, 0x00);
	pbuf__reset(b);
	pb__varint(b, 1);
	assert_bytes(b, 0x01);
	pbuf__reset(b);
	pb__varint(b, 127);
	assert_bytes(b, 0x7f);
	pbuf__reset(b);
	pb__varint(b, 128);
	assert_bytes(b, 0x80, 0x01);
	pbuf__reset(b);
	pb__varint(b, 300);
	assert_bytes(b, 0xac, 0x02);
	pbuf__reset(b);
	pb__varint(b, 16384);
	assert_bytes(b, 0x80, 0x80, 0x01);
	pbuf__reset(b);
	pb__varint(b, 1ULL << 63);
	assert_bytes(b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
	pbuf__reset(b);
	pb__varint(b, UINT64_MAX);
	assert_bytes(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
}

static void test_protobuf__negative_int64_is_ten_bytes(void **state)
{
	struct pbuf *b = *state;

	/* int64 fields are not zigzagged: -1 is 2^64 - 1 on the wire. */
	pb__varint(b, (uint64_t)(int64_t)-1);
	assert_bytes(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
	pbuf__reset(b);
	pb__field_packed_i64(b, 2, (const int64_t[]){-2, 5}, 2);
	assert_bytes(b, 0x12, 11, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x05);
}

static void test_protobuf__encode_varint_returns_length(void **state)
{
	uint8_t out[PB_VARINT_MAX];

	(void)state;
	assert_int_equal(pb__encode_varint(out, 0), 1);
	assert_int_equal(pb__encode_varint(out, 300), 2);
	assert_int_equal(pb__encode_varint(out, UINT64_MAX), 10);
}

static void test_protobuf__varint_field(void **state)
{
	struct pbuf *b = *state;

	/* field 1, wire type 0: tag (1 << 3) | 0 */
	pb__field_varint(b, 1, 150);
	assert_bytes(b, 0x08, 0x96, 0x01);
	pbuf__reset(b);
	/* field 16 needs a two-byte tag: (16 << 3) = 128 */
	pb__field_varint(b, 16, 1);
	assert_bytes(b, 0x80, 0x01, 0x01);
}

static void test_protobuf__length_delimited_string(void **state)
{
	struct pbuf *b = *state;

	pb__field_string(b, 2, "testing");
	assert_bytes(b, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g');
	pbuf__reset(b);
	pb__field_string(b, 6, ""); /* the string table's first entry */
	assert_bytes(b, 0x32, 0x00);
	pbuf__reset(b);
	pb__field_bytes(b, 3, "\x00\x01", 2);
	assert_bytes(b, 0x1a, 0x02, 0x00, 0x01);
}

static void test_protobuf__packed_field(void **state)
{
	struct pbuf *b = *state;

	/* 3 -> 03, 270 -> 8e 02, 86942 -> 9e a7 05: six payload bytes. */
	pb__field_packed_u64(b, 4, (const uint64_t[]){3, 270, 86942}, 3);
	assert_bytes(b, 0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05);
	pbuf__reset(b);
	pb__field_packed_u32(b, 1, (const uint32_t[]){1, 2, 300}, 3);
	assert_bytes(b, 0x0a, 0x04, 0x01, 0x02, 0xac, 0x02);
}

static void test_protobuf__empty_packed_field_writes_nothing(void **state)
{
	struct pbuf *b = *state;

	assert_int_equal(pb__field_packed_u64(b, 1, NULL, 0), 0);
	assert_int_equal(b->len, 0);
}

static void test_protobuf__nested_message(void **state)
{
	struct pbuf *b = *state, inner, innermost;

	pbuf__init(&inner);
	pbuf__init(&innermost);
	pb__field_varint(&innermost, 1, 150);
	pb__field_message(&inner, 4, &innermost);
	pb__field_string(&inner, 2, "ab");
	pb__field_message(b, 3, &inner);
	/* 1a 09 { 22 03 { 08 96 01 } 12 02 'a' 'b' } */
	assert_bytes(b, 0x1a, 0x09, 0x22, 0x03, 0x08, 0x96, 0x01, 0x12, 0x02, 'a', 'b');
	pbuf__release(&inner);
	pbuf__release(&innermost);
}

static void test_protobuf__grows_and_reset_keeps_capacity(void **state)
{
	struct pbuf *b = *state;
	size_t cap;

	for (int i = 0; i < 100000; i++)
		pb__field_varint(b, 1, 300);
	assert_int_equal(pbuf__err(b), 0);
	assert_int_equal(b->len, 300000);
	for (size_t i = 0; i < b->len; i += 3)
		assert_memory_equal(b->data + i, "\x08\xac\x02", 3);
	cap = b->cap;
	pbuf__reset(b);
	assert_int_equal(b->len, 0);
	assert_int_equal(b->cap, cap);
}

static void test_protobuf__error_is_sticky_and_propagates(void **state)
{
	struct pbuf *b = *state, sub;

	pbuf__init(&sub);
	sub.err = -ENOMEM; /* as if an allocation had failed while building it */
	assert_int_equal(pb__field_message(b, 1, &sub), -ENOMEM);
	assert_int_equal(pbuf__err(b), -ENOMEM);
	assert_int_equal(pb__field_varint(b, 1, 1), -ENOMEM);
	assert_int_equal(b->len, 0);
	pbuf__reset(b);
	assert_int_equal(pbuf__err(b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_protobuf__varints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protobuf__negative_int64_is_ten_bytes, setup,
						teardown),
		cmocka_unit_test(test_protobuf__encode_varint_returns_length),
		cmocka_unit_test_setup_teardown(test_protobuf__varint_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protobuf__length_delimited_string, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_protobuf__packed_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protobuf__empty_packed_field_writes_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_protobuf__nested_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protobuf__grows_and_reset_keeps_capacity,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_protobuf__error_is_sticky_and_propagates,
						setup, teardown),
	};

	return cmocka_run_group_tests_name("protobuf", tests, NULL, NULL);
}
