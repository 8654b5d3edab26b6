// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/suppress.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/stackres.h"

const char *const suppress__defaults[] = {
	/* The C library's caches, kept for the life of the process. */
	"leak:setlocale",
	"leak:textdomain",
	"leak:bindtextdomain",
	"leak:__nss_database_get",
	"leak:getpwuid",
	"leak:getpwnam",
	"leak:getgrgid",
	"leak:getgrnam",
	"leak:tzset*",
	"leak:__tz_convert",
	"leak:__gconv_*",
	"leak:__wcsmbs_load_conv",
	"leak:_IO_file_doallocate",
	"leak:__libc_allocate_once_slow",
	/* The dynamic loader: TLS, dlopen's records, libraries' constructors. */
	"leak:_dl_*",
	"leaf:ld-linux*.so*",
	/* Interpreters keep their own heap until exit. */
	"leaf:python3*",
	"leaf:libpython3*",
	/* The sqlite3 shell exits without closing its database. */
	"leak:sqlite3",
	NULL,
};

struct rule {
	char *pattern;
	bool leaf; /* the allocator's caller only */
};

struct suppress {
	struct rule *rules;
	unsigned n, cap;
};

static int add(struct suppress *s, const char *line, size_t len)
{
	bool leaf = len > 5 && !memcmp(line, "leaf:", 5);
	struct rule *r;

	if (s->n == s->cap) {
		unsigned cap = s->cap ? 2 * s->cap : 32;

		r = realloc(s->rules, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		s->rules = r;
		s->cap = cap;
	}
	r = &s->rules[s->n];
	r->leaf = leaf;
	r->pattern = strndup(line + 5, len - 5);
	if (!r->pattern)
		return -ENOMEM;
	s->n++;
	return 0;
}

int suppress__new(struct suppress **out)
{
	struct suppress *s = calloc(1, sizeof(*s));
	int err = s ? 0 : -ENOMEM;

	for (size_t i = 0; !err && suppress__defaults[i]; i++)
		err = add(s, suppress__defaults[i], strlen(suppress__defaults[i]));
	if (err) {
		suppress__free(s);
		return err;
	}
	*out = s;
	return 0;
}

void suppress__free(struct suppress *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n; i++)
		free(s->rules[i].pattern);
	free(s->rules);
	free(s);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

int suppress__parse(struct suppress *s, const char *text, size_t len, char *err, size_t errlen)
{
	size_t pos = 0;
	unsigned lineno = 0;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len, a = pos, b = end, start = pos;
		int e;

		lineno++;
		pos = end + 1;
		while (a < b && blank(text[a]))
			a++;
		while (b > a && blank(text[b - 1]))
			b--;
		if (a == b || text[a] == '#')
			continue;
		if (end - start > SUPPRESS_MAX_LINE) {
			snprintf(err, errlen, "line %u: longer than %d bytes", lineno,
				 SUPPRESS_MAX_LINE);
			return -EINVAL;
		}
		if (b - a <= 5 || (memcmp(text + a, "leak:", 5) && memcmp(text + a, "leaf:", 5))) {
			snprintf(err, errlen, "line %u: not leak:PATTERN or leaf:PATTERN", lineno);
			return -EINVAL;
		}
		if (memchr(text + a, '\0', b - a)) {
			snprintf(err, errlen, "line %u: a NUL byte", lineno);
			return -EINVAL;
		}
		if (s->n >= SUPPRESS_MAX_RULES) {
			snprintf(err, errlen, "line %u: more than %d rules", lineno,
				 SUPPRESS_MAX_RULES);
			return -EINVAL;
		}
		e = add(s, text + a, b - a);
		if (e)
			return e;
	}
	return 0;
}

int suppress__load(struct suppress *s, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), e = 0;
	struct stat st;
	char *buf = NULL;
	ssize_t got = 0;

	if (fd < 0 || fstat(fd, &st)) {
		e = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		e = -EINVAL;
	} else if (st.st_size > SUPPRESS_MAX_FILE) {
		e = -EFBIG;
	} else if (!(buf = malloc((size_t)st.st_size + 1))) {
		e = -ENOMEM;
	} else {
		/* One read of what fstat said; a file that grew meanwhile is read to that size. */
		got = read(fd, buf, (size_t)st.st_size + 1);
		if (got < 0)
			e = -errno;
		else if (got > st.st_size)
			e = -EFBIG;
	}
	if (fd >= 0)
		close(fd);
	if (e) {
		snprintf(err, errlen, "%s",
			 e == -EINVAL  ? "not a regular file"
			 : e == -EFBIG ? "larger than 1 MiB"
				       : strerror(-e));
		free(buf);
		return e;
	}
	e = suppress__parse(s, buf, (size_t)got, err, errlen);
	free(buf);
	return e;
}

static bool frame_matches(const struct rule *r, const struct stackres_frame *f)
{
	const char *path = f->sym.map ? f->sym.map->path : NULL, *base;

	if (f->sym.name && !fnmatch(r->pattern, f->sym.name, 0))
		return true;
	if (f->sym.system_name && !fnmatch(r->pattern, f->sym.system_name, 0))
		return true;
	if (!path)
		return false;
	base = strrchr(path, '/');
	return !fnmatch(r->pattern, base ? base + 1 : path, 0);
}

unsigned suppress__match(const struct suppress *s, const struct stackres_frame *frames, unsigned n)
{
	for (unsigned i = 0; s && i < s->n; i++)
		for (unsigned k = 0; k < n && (k == 0 || !s->rules[i].leaf); k++)
			if (frame_matches(&s->rules[i], &frames[k]))
				return i + 1;
	return 0;
}
