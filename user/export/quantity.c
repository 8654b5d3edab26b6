// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/quantity.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Two decimals: a value that would print as 1024.00 KiB or 1000.00 ms takes the next unit. */
#define ROUND_UP 0.005

const char *quantity__format(char *buf, size_t len, int64_t v, const char *unit, bool exact)
{
	static const char *const bin[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	static const struct {
		double scale;
		const char *name;
	} times[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}};
	double d = (double)v, mag = d < 0 ? -d : d;

	if (!unit)
		unit = "";
	if (!strcmp(unit, "bytes")) {
		unsigned i = 0;

		if (mag < 1024) {
			snprintf(buf, len, "%" PRId64 " bytes", v);
			return buf;
		}
		d /= 1024;
		mag /= 1024;
		while (mag >= 1024 - ROUND_UP && i + 1 < sizeof(bin) / sizeof(bin[0])) {
			d /= 1024;
			mag /= 1024;
			i++;
		}
		if (exact)
			snprintf(buf, len, "%.2f %s (%" PRId64 " bytes)", d, bin[i], v);
		else
			snprintf(buf, len, "%.2f %s", d, bin[i]);
		return buf;
	}
	if (!strcmp(unit, "nanoseconds")) {
		for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
			if (mag < times[i].scale * (1 - ROUND_UP / 1000))
				continue;
			if (exact)
				snprintf(buf, len, "%.2f %s (%" PRId64 " ns)", d / times[i].scale,
					 times[i].name, v);
			else
				snprintf(buf, len, "%.2f %s", d / times[i].scale, times[i].name);
			return buf;
		}
		snprintf(buf, len, "%" PRId64 " ns", v);
		return buf;
	}
	if (!strcmp(unit, "count") || !*unit)
		snprintf(buf, len, "%" PRId64, v);
	else
		snprintf(buf, len, "%" PRId64 " %s", v, unit);
	return buf;
}
