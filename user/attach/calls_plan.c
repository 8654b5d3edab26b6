// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/calls_plan.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/maps.h"
#include "proc/safe_open.h"

/* "3.11…" -> 3, 11; "8" -> 8, -1.  false when s does not start with a digit. */
static bool parse_version(const char *s, int *major, int *minor)
{
	char *end;

	*major = *minor = -1;
	if (!isdigit((unsigned char)*s))
		return false;
	*major = (int)strtol(s, &end, 10);
	if (*end == '.' && isdigit((unsigned char)end[1]))
		*minor = (int)strtol(end + 1, NULL, 10);
	return true;
}

const char *calls_plan__base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

bool calls_plan__classify(const char *path, struct calls_runtime_file *out)
{
	const char *b = calls_plan__base_name(path), *rest;
	int major = -1, minor = -1;
	enum prof_runtime rt;

	if (starts_with(b, "libpython") || starts_with(b, "python")) {
		/* python3.11, python3.11d, libpython3.11.so.1.0 — not python-config scripts */
		rest = b + (b[0] == 'l' ? strlen("libpython") : strlen("python"));
		if (!parse_version(rest, &major, &minor) || strchr(rest, '-'))
			return false;
		rt = PROF_RT_PYTHON;
	} else if (starts_with(b, "libruby")) {
		/* libruby-3.1.so.3.1.2 (Debian), libruby.so.3.1 (upstream) */
		rest = b + strlen("libruby");
		while (*rest && !isdigit((unsigned char)*rest))
			rest++;
		parse_version(rest, &major, &minor);
		rt = PROF_RT_RUBY;
	} else if (!strcmp(b, "ruby") || (starts_with(b, "ruby") && isdigit((unsigned char)b[4]))) {
		parse_version(b + 4, &major, &minor); /* a ruby built without libruby */
		rt = PROF_RT_RUBY;
	} else if (starts_with(b, "libphp") ||
		   (starts_with(b, "php") &&
		    (!b[3] || isdigit((unsigned char)b[3]) || b[3] == '-'))) {
		/* php, php8.2, php-fpm8.2, php-cgi8.2, libphp8.2.so, libphp.so */
		rest = b + 3;
		while (*rest && !isdigit((unsigned char)*rest))
			rest++;
		parse_version(rest, &major, &minor);
		rt = PROF_RT_PHP;
	} else if (!strcmp(b, "libjvm.so")) {
		rt = PROF_RT_JAVA;
	} else {
		return false;
	}
	if (out) {
		out->runtime = rt;
		out->major = major;
		out->minor = minor;
		snprintf(out->path, sizeof(out->path), "%s", path);
	}
	return true;
}

size_t calls_plan__detect(const struct maps *m, struct calls_runtime_file *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->count && n < max; i++) {
		const struct maps_entry *e = &m->entries[i];
		bool seen = false;

		if (!e->exec || !maps_entry__is_file(e) || !calls_plan__classify(e->path, &out[n]))
			continue;
		for (size_t j = 0; j < n && !seen; j++)
			seen = !strcmp(out[j].path, e->path);
		if (!seen)
			n++;
	}
	return n;
}

int calls_plan__java_release_major(const char *text, size_t len)
{
	static const char key[] = "JAVA_VERSION=\"";
	const size_t klen = sizeof(key) - 1;
	size_t i = 0;

	/* Bounded: the text is the target's file, not a C string. */
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;

		if (end - i > klen && !memcmp(text + i, key, klen)) {
			char v[16];
			int major, minor;

			snprintf(v, sizeof(v), "%.*s", (int)(end - i - klen), text + i + klen);
			if (!parse_version(v, &major, &minor))
				return -1;
			return major == 1 ? minor : major; /* "1.8.0_392" is Java 8 */
		}
		i = end + 1;
	}
	return -1;
}

int calls_plan__java_release_read(int *out, int root_fd, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t n = 0;
	int fd, err;

	/* The target's file: inside its root, never through a final symlink, never waiting on a
	 * FIFO, never more than a release file holds (a link to /dev/zero must not fill memory). */
	err = safe_open__at(&fd, root_fd, path, SAFE_OPEN_NOFOLLOW, 0, NULL);
	if (err)
		return err;
	buf = malloc(CALLS_RELEASE_MAX);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (len < CALLS_RELEASE_MAX && (n = read(fd, buf + len, CALLS_RELEASE_MAX - len)) > 0)
		len += (size_t)n;
	if (n < 0) {
		err = -errno;
		goto cleanup;
	}
	*out = calls_plan__java_release_major(buf, len);
cleanup:
	free(buf);
	close(fd);
	return err;
}

static void add_probe(struct calls_plan *out, const char *provider, const char *name, bool ret,
		      uint8_t flags)
{
	out->probes[out->nprobes++] = (struct calls_probe){
		.provider = provider, .name = name, .ret = ret, .flags = flags};
}

void calls_plan__init(struct calls_plan *out, enum prof_runtime rt, int major, int minor)
{
	memset(out, 0, sizeof(*out));
	switch (rt) {
	case PROF_RT_PYTHON:
		if (major == 3 && minor == 11) {
			add_probe(out, "python", "function__return", true, PROF_CALL_F_RETURN_ONLY);
			out->limit =
				"CPython 3.11 fires python:function__return for every Python "
				"function but function__entry never (CPython gh-98894): calls "
				"are counted exactly from their returns, each on a stack of the "
				"function alone (partial), without wall time";
		} else if (major == 3 && minor >= 12 && minor <= 14) {
			out->limit = "CPython 3.12-3.14 removed the python:function__entry/return "
				     "probes (CPython gh-98894): no Python calls can be seen";
		} else {
			add_probe(out, "python", "function__entry", false, 0);
			add_probe(out, "python", "function__return", true, 0);
		}
		break;
	case PROF_RT_RUBY:
		add_probe(out, "ruby", "cmethod__entry", false, 0);
		add_probe(out, "ruby", "cmethod__return", true, 0);
		if (major == 1 || (major == 2 && minor >= 0 && minor < 5)) {
			add_probe(out, "ruby", "method__entry", false, 0);
			add_probe(out, "ruby", "method__return", true, 0);
		} else {
			/* Measured on 3.1: neither method__entry nor method__return fires for
			 * Ruby methods.  Left off, so a build firing only one cannot unbalance
			 * the stacks. */
			out->limit =
				"Ruby >= 2.5 fires ruby:cmethod__entry/return (methods written "
				"in C) but never method__entry (ruby bug 16084): only calls of C "
				"methods are counted, Ruby-level methods are invisible";
		}
		break;
	case PROF_RT_PHP:
		add_probe(out, "php", "function__entry", false, 0);
		add_probe(out, "php", "function__return", true, 0);
		break;
	case PROF_RT_JAVA:
		add_probe(out, "hotspot", "method__entry", false, 0);
		add_probe(out, "hotspot", "method__return", true, 0);
		break;
	default:
		break;
	}
}

int calls_plan__markers(struct calls_marker_probe *out, enum prof_runtime rt)
{
	int n = 0;

	switch (rt) {
	case PROF_RT_PHP:
		/* Fire whenever attached (their semaphores are set), USE_ZEND_DTRACE or not. */
		out[n++] = (struct calls_marker_probe){"php", "exception__thrown",
						       PROF_MARK_EXC_THROWN};
		out[n++] = (struct calls_marker_probe){"php", "exception__caught",
						       PROF_MARK_EXC_CAUGHT};
		out[n++] = (struct calls_marker_probe){"php", "error", PROF_MARK_ERROR};
		break;
	case PROF_RT_PYTHON:
		out[n++] = (struct calls_marker_probe){"python", "import__find__load__start",
						       PROF_MARK_IMPORT_START};
		out[n++] = (struct calls_marker_probe){"python", "import__find__load__done",
						       PROF_MARK_IMPORT_DONE};
		break;
	case PROF_RT_JAVA:
		/* HotSpot has no exception probe (only JNI's Throw): class loads are Java's
		 * imports. */
		out[n++] = (struct calls_marker_probe){"hotspot", "class__loaded",
						       PROF_MARK_CLASS_LOAD};
		break;
	default:
		break;
	}
	return n;
}

/* Calls fn on each NUL-separated string of list until it returns true. */
static bool list_any(const char *list, size_t len,
		     bool (*fn)(const char *s, size_t n, const void *arg), const void *arg)
{
	size_t i = 0;

	while (i < len) {
		size_t n = strnlen(list + i, len - i);

		if (fn(list + i, n, arg))
			return true;
		i += n + 1;
	}
	return false;
}

static bool env_is_enabled(const char *s, size_t n, const void *arg)
{
	const char *name = arg;
	size_t nl = strlen(name);
	char val[32];

	if (n <= nl || strncmp(s, name, nl) || s[nl] != '=')
		return false;
	snprintf(val, sizeof(val), "%.*s", (int)(n - nl - 1), s + nl + 1);
	return strtol(val, NULL, 0) != 0; /* PHP: getenv() && atol() */
}

bool calls_plan__env_enabled(const char *list, size_t len, const char *name)
{
	return list_any(list, len, env_is_enabled, name);
}

static bool is_string(const char *s, size_t n, const void *arg)
{
	return n == strlen(arg) && !memcmp(s, arg, n);
}

bool calls_plan__list_has(const char *list, size_t len, const char *s)
{
	return list_any(list, len, is_string, s);
}

static bool java_flag_in(const char *s, size_t n, const void *arg)
{
	static const char *const vars[] = {
		"JAVA_TOOL_OPTIONS=", "JDK_JAVA_OPTIONS=", "_JAVA_OPTIONS="};
	char buf[4096];

	(void)arg;
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if (n < strlen(vars[i]) || strncmp(s, vars[i], strlen(vars[i])))
			continue;
		snprintf(buf, sizeof(buf), "%.*s", (int)n, s);
		return strstr(buf, "-XX:+ExtendedDTraceProbes") ||
		       strstr(buf, "-XX:+DTraceMethodProbes");
	}
	return false;
}

bool calls_plan__java_probes_enabled(const char *cmdline, size_t cmdline_len, const char *environ,
				     size_t environ_len)
{
	/* The last occurrence wins in HotSpot, but "-XX:-…" after "+" is not worth parsing. */
	/* javac, jshell, jar…: the launcher runs the JVM in process with its -J options. */
	return calls_plan__list_has(cmdline, cmdline_len, "-XX:+ExtendedDTraceProbes") ||
	       calls_plan__list_has(cmdline, cmdline_len, "-XX:+DTraceMethodProbes") ||
	       calls_plan__list_has(cmdline, cmdline_len, "-J-XX:+ExtendedDTraceProbes") ||
	       calls_plan__list_has(cmdline, cmdline_len, "-J-XX:+DTraceMethodProbes") ||
	       list_any(environ, environ_len, java_flag_in, NULL);
}
