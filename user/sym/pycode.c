// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython code objects read from another process: name, file name, first line and line table,
 * and the three line-table formats decoded.  The formats follow CPython's own descriptions:
 * Objects/lnotab_notes.txt (3.8–3.10) and InternalDocs/locations.md (3.11+).  Every byte comes
 * from a process we do not trust: lengths are capped, kinds checked, arithmetic bounded.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "sym/pycode.h"

/* Object layouts shared by 3.8–3.13 (x86-64): PyObject's ob_type; PyUnicode's length and state
 * bit field; PyBytes' ob_size and first byte. */
#define PY_OB_TYPE    8
#define PY_STR_LENGTH 16
#define PY_STR_STATE  32
#define PY_BYTES_SIZE 16
#define PY_BYTES_DATA 32
#define PY_STR_HEAD   (PY_STR_STATE + 4)
#define PY_BYTES_HEAD PY_BYTES_DATA

/* The fields we read all lie in the first bytes of PyCodeObject (at most ~140 in 3.8–3.13); an
 * offset beyond this is a broken version entry, not a bigger read. */
#define PYCODE_HEAD_MAX 512

/* Lines beyond this are garbage; keeping sums below it keeps the arithmetic defined. */
#define PYCODE_LINE_LIMIT (1LL << 40)

int pycode__read_pid(void *ctx, uint64_t addr, void *buf, size_t len)
{
	pid_t pid = (pid_t)(uintptr_t)ctx;
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (!len)
		return 0;
	if (addr + len < addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	/* A read that stops at an unmapped page is as good as none. */
	if ((size_t)n != len)
		return -EFAULT;
	return 0;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Reads go through here so a reader's failure is always -EFAULT and addr + len never wraps. */
static int read_at(pycode_read_fn read, void *ctx, uint64_t addr, uint64_t off, void *buf,
		   size_t len)
{
	if (addr + off < addr || addr + off + len < addr + off)
		return -EFAULT;
	if (read(ctx, addr + off, buf, len))
		return -EFAULT;
	return 0;
}

/* Append code point cp as UTF-8 if it fits in PYCODE_MAX_STR bytes: false when it does not. */
static bool put_utf8(char *out, size_t *pos, uint32_t cp)
{
	uint8_t b[4];
	size_t n;

	/* NUL would end the C string early; surrogates and values past U+10FFFF have no UTF-8. */
	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = '?';
	if (cp < 0x80) {
		b[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = 0xc0 | (cp >> 6);
		b[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = 0xe0 | (cp >> 12);
		b[1] = 0x80 | ((cp >> 6) & 0x3f);
		b[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		b[0] = 0xf0 | (cp >> 18);
		b[1] = 0x80 | ((cp >> 12) & 0x3f);
		b[2] = 0x80 | ((cp >> 6) & 0x3f);
		b[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	if (*pos + n > PYCODE_MAX_STR)
		return false;
	memcpy(out + *pos, b, n);
	*pos += n;
	return true;
}

/*
 * A compact str at addr as UTF-8, cut to PYCODE_MAX_STR bytes.  Compact strings keep their
 * characters right after the header (ascii_size or compact_size bytes in); legacy (non-compact)
 * strings, which code objects never hold, are refused.
 */
int pycode__read_str(const struct py_version *v, pycode_read_fn read, void *ctx, uint64_t addr,
		     char **out)
{
	uint8_t head[PY_STR_HEAD];
	uint8_t *raw = NULL;
	char *s = NULL;
	uint32_t state, kind;
	uint64_t length, n, data;
	bool ascii;
	size_t pos = 0;
	int err;

	*out = NULL;
	if (!addr)
		return -EINVAL;
	err = read_at(read, ctx, addr, 0, head, sizeof(head));
	if (err)
		return err;
	length = get_u64(head + PY_STR_LENGTH);
	state = get_u32(head + PY_STR_STATE);
	kind = (state >> 2) & 7;
	ascii = (state >> 6) & 1;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
		return -EINVAL;
	/* Py_ssize_t: a negative length is no string. */
	if (length >> 63)
		return -EINVAL;
	data = ascii ? v->ascii_size : v->compact_size;
	if (data < PY_STR_HEAD)
		return -EINVAL;
	/* Each code point takes at least one UTF-8 byte: more than the cap is never needed. */
	n = length < PYCODE_MAX_STR ? length : PYCODE_MAX_STR;
	raw = malloc(n * kind + 1);
	s = malloc(PYCODE_MAX_STR + 1);
	if (!raw || !s) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = read_at(read, ctx, addr, data, raw, n * kind);
	if (err)
		goto cleanup;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t cp;

		if (kind == 1) {
			cp = raw[i];
			/* An "ASCII" string with a high byte is corrupt: keep the output UTF-8. */
			if (ascii && cp >= 0x80)
				cp = '?';
		} else if (kind == 2) {
			cp = raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
		} else {
			cp = get_u32(raw + 4 * i);
		}
		if (!put_utf8(s, &pos, cp))
			break;
	}
	s[pos] = '\0';
	*out = s;
	s = NULL;
cleanup:
	free(raw);
	free(s);
	return err;
}

/* The bytes object at addr (a line table), refused over PYCODE_MAX_TABLE. */
static int read_bytes(pycode_read_fn read, void *ctx, uint64_t addr, uint8_t **out,
		      uint32_t *out_len)
{
	uint8_t head[PY_BYTES_HEAD];
	uint8_t *buf;
	uint64_t size;
	int err;

	*out = NULL;
	*out_len = 0;
	if (!addr)
		return -EINVAL;
	err = read_at(read, ctx, addr, 0, head, sizeof(head));
	if (err)
		return err;
	size = get_u64(head + PY_BYTES_SIZE);
	if (size >> 63)
		return -EINVAL;
	if (size > PYCODE_MAX_TABLE)
		return -E2BIG;
	buf = malloc(size + 1);
	if (!buf)
		return -ENOMEM;
	err = read_at(read, ctx, addr, PY_BYTES_DATA, buf, size);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = size;
	return 0;
}

static size_t field_end(size_t end, uint16_t off, size_t size)
{
	return off + size > end ? off + size : end;
}

int pycode__read(const struct py_version *v, pycode_read_fn read, void *ctx, uint64_t addr,
		 uint64_t code_type, struct pycode *out)
{
	uint8_t head[PYCODE_HEAD_MAX], again[PYCODE_HEAD_MAX];
	uint16_t name_off;
	size_t len = PY_OB_TYPE + 8;
	int err;

	memset(out, 0, sizeof(*out));
	if (!v || !read)
		return -EINVAL;
	name_off = v->co_qualname ? v->co_qualname : v->co_name;
	len = field_end(len, v->co_firstlineno, 4);
	len = field_end(len, v->co_filename, 16);
	len = field_end(len, name_off, 8);
	len = field_end(len, v->co_linetable, 8);
	if (len > sizeof(head) || !v->co_filename || !name_off || !v->co_linetable)
		return -EINVAL;
	err = read_at(read, ctx, addr, 0, head, len);
	if (err)
		goto cleanup;
	if (code_type && get_u64(head + PY_OB_TYPE) != code_type) {
		err = -EINVAL;
		goto cleanup;
	}
	out->firstlineno = (int32_t)get_u32(head + v->co_firstlineno);
	out->names[0] = get_u64(head + v->co_filename);
	out->names[1] = get_u64(head + v->co_filename + 8);
	err = pycode__read_str(v, read, ctx, get_u64(head + name_off), &out->name);
	if (err)
		goto cleanup;
	err = pycode__read_str(v, read, ctx, get_u64(head + v->co_filename), &out->filename);
	if (err)
		goto cleanup;
	err = read_bytes(read, ctx, get_u64(head + v->co_linetable), &out->table, &out->table_len);
	if (err)
		goto cleanup;
	/* The same object still: the fields read through and those a frame's fingerprint holds
	 * (not the whole head: its reference count moves with every frame that runs it). */
	err = read_at(read, ctx, addr, 0, again, len);
	if (!err && (get_u64(again + PY_OB_TYPE) != get_u64(head + PY_OB_TYPE) ||
		     get_u32(again + v->co_firstlineno) != get_u32(head + v->co_firstlineno) ||
		     memcmp(again + v->co_filename, head + v->co_filename, 16) ||
		     get_u64(again + name_off) != get_u64(head + name_off) ||
		     get_u64(again + v->co_linetable) != get_u64(head + v->co_linetable)))
		err = -EAGAIN;
cleanup:
	if (err)
		pycode__free(out);
	return err;
}

void pycode__free(struct pycode *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->filename);
	free(c->table);
	memset(c, 0, sizeof(*c));
}

static int64_t add_line(int64_t line, int64_t delta)
{
	line += delta;
	if (line > PYCODE_LINE_LIMIT)
		return PYCODE_LINE_LIMIT;
	if (line < -PYCODE_LINE_LIMIT)
		return -PYCODE_LINE_LIMIT;
	return line;
}

static int32_t as_line(int64_t line)
{
	return line >= 0 && line <= INT32_MAX ? (int32_t)line : 0;
}

/*
 * 3.8/3.9 co_lnotab: (byte-offset increment, signed line increment) pairs.  An instruction's
 * line is the sum of the line increments of every pair whose offset is at or before it.
 */
static int32_t line_lnotab(const uint8_t *t, uint32_t len, int32_t first, uint64_t offset)
{
	int64_t line = first;
	uint64_t addr = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2) {
		addr += t[i];
		if (addr > offset)
			break;
		line = add_line(line, (int8_t)t[i + 1]);
	}
	return as_line(line);
}

/*
 * 3.10 co_linetable (PEP 626): each pair (byte length, signed line delta) covers the next bytes
 * of code; a delta of -128 says they have no line (the running line is kept for later entries).
 */
static int32_t line_310(const uint8_t *t, uint32_t len, int32_t first, uint64_t offset)
{
	int64_t line = first;
	uint64_t start = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2) {
		uint64_t end = start + t[i];
		int8_t delta = (int8_t)t[i + 1];

		if (delta != -128)
			line = add_line(line, delta);
		if (offset >= start && offset < end)
			return delta == -128 ? 0 : as_line(line);
		start = end;
	}
	return 0;
}

/* A varint of the 3.11+ table: 6-bit chunks, least significant first, bit 6 = more follow.  It
 * never runs into the next entry (a byte with bit 7) nor past the table; bits beyond 32 are
 * dropped. */
static uint32_t varint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (*i < len && !(t[*i] & 0x80)) {
		uint8_t b = t[(*i)++];

		if (shift < 32)
			v |= (uint64_t)(b & 0x3f) << shift;
		shift += 6;
		if (!(b & 0x40))
			break;
	}
	return (uint32_t)v;
}

static int64_t svarint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t u = varint(t, len, i);

	return u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

enum {
	LOC_ONE_LINE0 = 10, /* 10–12: the line moves by code - 10, columns in two bytes */
	LOC_NO_COLUMNS = 13,
	LOC_LONG = 14,
	LOC_NONE = 15,
};

/*
 * 3.11+ location table: entries of 1–8 code units, each a first byte (bit 7 set, code in bits
 * 3–6, length - 1 in bits 0–2) then bytes with bit 7 clear.  Only the start line matters here:
 * it moves by an svarint (long form, no-columns form) or by code - 10 (one-line forms); short
 * forms keep it; "no location" entries have none and keep it too.
 */
static int32_t line_locations(const uint8_t *t, uint32_t len, int32_t first, uint64_t unit)
{
	int64_t line = first;
	uint64_t start = 0;
	uint32_t i = 0;

	while (i < len) {
		uint8_t b = t[i++];
		unsigned code = (b >> 3) & 15;
		uint64_t end = start + (b & 7) + 1;

		if (!(b & 0x80))
			return 0; /* not an entry's first byte: malformed */
		if (code == LOC_LONG || code == LOC_NO_COLUMNS)
			line = add_line(line, svarint(t, len, &i));
		else if (code >= LOC_ONE_LINE0 && code < LOC_NO_COLUMNS)
			line = add_line(line, code - LOC_ONE_LINE0);
		/* The rest of the entry (end line, columns) is not needed. */
		while (i < len && !(t[i] & 0x80))
			i++;
		if (unit >= start && unit < end)
			return code == LOC_NONE ? 0 : as_line(line);
		start = end;
	}
	return 0;
}

int32_t pycode__line(const struct py_version *v, const struct pycode *c, uint32_t instr)
{
	uint32_t len;

	if (!v || !c)
		return 0;
	/* No table: an empty one (3.8/3.9: every instruction on the first line). */
	len = c->table ? c->table_len : 0;
	switch (v->line_table) {
	case PY_LNOTAB:
		return line_lnotab(c->table, len, c->firstlineno, instr);
	case PY_LINETABLE_310:
		return line_310(c->table, len, c->firstlineno, (uint64_t)instr * 2);
	case PY_LOCATIONS:
		return line_locations(c->table, len, c->firstlineno, instr);
	default:
		return 0;
	}
}
