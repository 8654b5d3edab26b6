// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python thread names read out of a fake process: the input is a sparse memory image.  Byte 0
 * picks the version's layout (bits 0–2: 3.8 + n mod 6) and bit 3 drops native_thread_id (so
 * 3.11+ take the pre-3.11 path through Thread._native_id); then _PyRuntime's address (u64, little
 * endian); then records {u64 address, u32 length, length bytes}: a read is served when one record
 * holds all of it.  Seeds (tests/fuzz/corpus/pythreads/): every read a successful pythreads__read
 * made of a live interpreter, recorded by tests/unit/test_pythreads.c (PYTHREADS_SEEDS=dir).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sym/pythreads.h"

#define HEAD 9
#define REC  12
#define MAX  8

struct image {
	const uint8_t *mem;
	size_t size;
};

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	for (size_t at = HEAD; at + REC <= im->size;) {
		uint64_t start;
		uint32_t n;

		memcpy(&start, im->mem + at, 8);
		memcpy(&n, im->mem + at + 8, 4);
		at += REC;
		if (n > im->size - at)
			break;
		if (addr >= start && addr - start <= n && len <= n - (addr - start)) {
			memcpy(buf, im->mem + at + (addr - start), len);
			return 0;
		}
		at += n;
	}
	return -1;
}

/* A name handed out is NUL-terminated UTF-8 within its array. */
static void check_name(const char *s)
{
	size_t n = strnlen(s, PYTHREADS_NAME_MAX);

	if (n >= PYTHREADS_NAME_MAX)
		__builtin_trap();
	for (size_t i = 0; i < n;) {
		uint8_t b = s[i];
		size_t k = b < 0x80	    ? 1
			   : (b >> 5) == 6  ? 2
			   : (b >> 4) == 14 ? 3
			   : (b >> 3) == 30 ? 4
					    : 0;

		if (!k || i + k > n)
			__builtin_trap();
		for (size_t j = 1; j < k; j++)
			if (((uint8_t)s[i + j] & 0xc0) != 0x80)
				__builtin_trap();
		i += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pythread_name out[MAX + 1];
	const struct py_version *t;
	struct py_version v;
	struct image im = {.mem = data, .size = size};
	uint64_t runtime;
	size_t n = 0;
	int err;

	if (size < HEAD)
		return 0;
	t = py_version__find(3, 8 + (data[0] & 7) % 6);
	if (!t)
		__builtin_trap();
	v = *t;
	if (data[0] & 8)
		v.ts_native_id = 0;
	memcpy(&runtime, data + 1, 8);
	/* A canary past max: never written. */
	memset(out, 0x5a, sizeof(out));
	err = pythreads__read(out, MAX, &n, &v, image_read, &im, runtime);
	if (err > 0 || n > MAX || (err && n))
		__builtin_trap();
	for (size_t i = 0; i < sizeof(out[MAX]); i++)
		if (((const uint8_t *)&out[MAX])[i] != 0x5a)
			__builtin_trap();
	for (size_t i = 0; i < n; i++) {
		if (!out[i].tid || out[i].tid > (1u << 22))
			__builtin_trap();
		check_name(out[i].name);
		for (size_t j = 0; j < i; j++)
			if (out[j].tid == out[i].tid)
				__builtin_trap();
	}
	return 0;
}
