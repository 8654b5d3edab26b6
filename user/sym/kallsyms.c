// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/kallsyms.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strarena.h"

struct kallsyms {
	struct ksym *syms; /* by address; one per address */
	size_t count;
	struct strarena names; /* symbol and module names */
};

/* Offsets into names while the arena may still move; pointers once loaded. */
struct raw_ksym {
	uint64_t addr;
	size_t name_off, module_off; /* module_off is SIZE_MAX for the kernel image */
	bool global;
};

/* Several names at one address (_text, _stext, …): a global one, then fewest underscores. */
static int cmp_raw(const void *pa, const void *pb, void *arg)
{
	const struct raw_ksym *a = pa, *b = pb;
	const char *names = arg;
	size_t ua, ub;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->global != b->global)
		return a->global ? -1 : 1;
	ua = strspn(names + a->name_off, "_");
	ub = strspn(names + b->name_off, "_");
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(names + a->name_off, names + b->name_off);
}

/* "ffffffff81000000 T _text" or "ffffffffc0201000 t name\t[module]" */
static int parse_line(struct kallsyms *k, struct raw_ksym *out, char *line, size_t *last_mod)
{
	char *p = line, *end, *name, *mod;
	size_t len;
	int err;

	out->addr = strtoull(p, &end, 16);
	if (end == p || !isspace((unsigned char)*end))
		return -EINVAL;
	p = end + strspn(end, " \t");
	if (!*p || !strchr("tTwW", *p)) {
		out->name_off = SIZE_MAX; /* not text: skipped */
		return 0;
	}
	out->global = isupper((unsigned char)*p);
	p++;
	p += strspn(p, " \t");
	name = p;
	len = strcspn(p, " \t\r\n");
	if (!len)
		return -EINVAL;
	mod = name + len;
	err = strarena__add(&k->names, &out->name_off, name, len);
	if (err)
		return err;
	out->module_off = SIZE_MAX;
	mod += strspn(mod, " \t");
	if (*mod == '[') {
		size_t mlen = strcspn(mod + 1, "]\r\n");

		/* Consecutive lines name the same module: store it once. */
		if (*last_mod != SIZE_MAX && strlen(k->names.buf + *last_mod) == mlen &&
		    strncmp(k->names.buf + *last_mod, mod + 1, mlen) == 0) {
			out->module_off = *last_mod;
			return 0;
		}
		err = strarena__add(&k->names, &out->module_off, mod + 1, mlen);
		if (err)
			return err;
		*last_mod = out->module_off;
	}
	return 0;
}

static int read_raw(struct kallsyms *k, FILE *f, struct raw_ksym **out, size_t *count)
{
	struct raw_ksym *raw = NULL;
	size_t n = 0, cap = 0, linecap = 0, last_mod = SIZE_MAX;
	char *line = NULL;
	int err = 0;

	while (getline(&line, &linecap, f) >= 0) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			struct raw_ksym *nr = realloc(raw, ncap * sizeof(*nr));

			if (!nr) {
				err = -ENOMEM;
				goto cleanup;
			}
			raw = nr;
			cap = ncap;
		}
		err = parse_line(k, &raw[n], line, &last_mod);
		if (err)
			goto cleanup;
		if (raw[n].name_off != SIZE_MAX)
			n++;
	}
	if (ferror(f)) {
		err = -EIO;
		goto cleanup;
	}
	*out = raw;
	*count = n;
	raw = NULL;
cleanup:
	free(line);
	free(raw);
	return err;
}

int kallsyms__parse(struct kallsyms **out, FILE *f)
{
	struct kallsyms *k = calloc(1, sizeof(*k));
	struct raw_ksym *raw = NULL;
	size_t n = 0;
	bool any_addr = false;
	int err;

	if (!k)
		return -ENOMEM;
	k->names.first_cap = 1 << 20; /* a kernel's names take megabytes: few reallocs */
	err = read_raw(k, f, &raw, &n);
	if (err)
		goto cleanup;
	for (size_t i = 0; i < n && !any_addr; i++)
		any_addr = raw[i].addr != 0;
	if (!any_addr) {
		err = -EACCES;
		goto cleanup;
	}
	qsort_r(raw, n, sizeof(*raw), cmp_raw, k->names.buf);
	k->syms = malloc(n * sizeof(*k->syms));
	if (!k->syms) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		const struct raw_ksym *r = &raw[i];

		if (i && r->addr == raw[i - 1].addr)
			continue;
		k->syms[k->count++] = (struct ksym){
			.addr = r->addr,
			.name = k->names.buf + r->name_off,
			.module = r->module_off == SIZE_MAX ? NULL : k->names.buf + r->module_off,
		};
	}
	*out = k;
	k = NULL;
cleanup:
	free(raw);
	kallsyms__free(k);
	return err;
}

int kallsyms__load(struct kallsyms **out, const char *path)
{
	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");
	int err;

	if (!f)
		return -errno;
	err = kallsyms__parse(out, f);
	fclose(f);
	return err;
}

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	strarena__release(&k->names);
	free(k);
}

size_t kallsyms__count(const struct kallsyms *k)
{
	return k->count;
}

const struct ksym *kallsyms__resolve(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &k->syms[lo - 1] : NULL;
}
