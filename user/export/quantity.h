/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A sample value in human units: bytes as KiB/MiB/…, nanoseconds as s/ms/us, counts as is. */
#ifndef PROF_QUANTITY_H
#define PROF_QUANTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest text quantity__format writes, with its NUL. */
#define QUANTITY_MAX 64

/*
 * Writes v (of unit "bytes", "nanoseconds", "count", "" or any other) into buf:
 * "3.91 MiB", "1.50 s"; with exact the integer follows, "3.91 MiB (4096000 bytes)",
 * "1.50 s (1500000000 ns)", so scripts can read it.  Returns buf.
 */
const char *quantity__format(char *buf, size_t len, int64_t v, const char *unit, bool exact);

#endif /* PROF_QUANTITY_H */
