// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/calls_attach.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "proc/cmdpath.h"
#include "sym/elf_file.h"
#include "sym/elf_needed.h"
#include "util/hashmap.h"
#include "attach/loader.h"
#include "util/clock.h"
#include "util/log.h"
#include "proc/safe_open.h"
#include "proc/maps.h"

#define MAX_RUNTIME_FILES 16
#define MAX_NOTES	  32

static const char *const runtime_names[PROF_RT__COUNT] = {
	[PROF_RT_NONE] = "none", [PROF_RT_PYTHON] = "python", [PROF_RT_RUBY] = "ruby",
	[PROF_RT_PHP] = "php",	 [PROF_RT_JAVA] = "java",
};

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

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

bool calls_attach__classify(const char *path, struct calls_runtime_file *out)
{
	const char *b = base_name(path), *rest;
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

size_t calls_attach__detect(const struct maps *m, struct calls_runtime_file *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->count && n < max; i++) {
		const struct maps_entry *e = &m->entries[i];
		bool seen = false;

		if (!e->exec || !maps_entry__is_file(e) ||
		    !calls_attach__classify(e->path, &out[n]))
			continue;
		for (size_t j = 0; j < n && !seen; j++)
			seen = !strcmp(out[j].path, e->path);
		if (!seen)
			n++;
	}
	return n;
}

int calls_attach__java_release_major(const char *text, size_t len)
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

int calls_attach__java_release_read(int *out, int root_fd, const char *path)
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
	*out = calls_attach__java_release_major(buf, len);
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

void calls_attach__plan(struct calls_plan *out, enum prof_runtime rt, int major, int minor)
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

int calls_attach__marker_plan(struct calls_marker_probe *out, enum prof_runtime rt)
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

bool calls_attach__env_enabled(const char *list, size_t len, const char *name)
{
	return list_any(list, len, env_is_enabled, name);
}

static bool is_string(const char *s, size_t n, const void *arg)
{
	return n == strlen(arg) && !memcmp(s, arg, n);
}

bool calls_attach__list_has(const char *list, size_t len, const char *s)
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

bool calls_attach__java_probes_enabled(const char *cmdline, size_t cmdline_len, const char *environ,
				       size_t environ_len)
{
	/* The last occurrence wins in HotSpot, but "-XX:-…" after "+" is not worth parsing. */
	/* javac, jshell, jar…: the launcher runs the JVM in process with its -J options. */
	return calls_attach__list_has(cmdline, cmdline_len, "-XX:+ExtendedDTraceProbes") ||
	       calls_attach__list_has(cmdline, cmdline_len, "-XX:+DTraceMethodProbes") ||
	       calls_attach__list_has(cmdline, cmdline_len, "-J-XX:+ExtendedDTraceProbes") ||
	       calls_attach__list_has(cmdline, cmdline_len, "-J-XX:+DTraceMethodProbes") ||
	       list_any(environ, environ_len, java_flag_in, NULL);
}

/* ---- attaching ---------------------------------------------------------------------- */

struct calls_attach {
	struct loader *l;
	calls_thread_fn on_thread;
	void *on_thread_ctx;
	char *notes[MAX_NOTES]; /* limits met, for the profile comments */
	size_t nnotes;
	char *why[MAX_NOTES]; /* runtimes found but not attachable, for explain_none */
	size_t nwhy;
	int total;	 /* probes attached so far, over every file */
	bool exec_stops; /* `-- CMD`'s tree is traced: flags are checked at each exec */
	bool markers;	 /* also the marker probes (calls_attach__set_markers) */
};

int calls_attach__new(struct calls_attach **out, struct loader *l, calls_thread_fn on_thread,
		      void *ctx)
{
	struct calls_attach *ca = calloc(1, sizeof(*ca));

	if (!ca)
		return -ENOMEM;
	ca->l = l;
	ca->on_thread = on_thread;
	ca->on_thread_ctx = ctx;
	*out = ca;
	return 0;
}

void calls_attach__free(struct calls_attach *ca)
{
	if (!ca)
		return;
	for (size_t i = 0; i < ca->nnotes; i++)
		free(ca->notes[i]);
	for (size_t i = 0; i < ca->nwhy; i++)
		free(ca->why[i]);
	free(ca);
}

/* Keep msg once in list; true when it is new. */
static bool remember(char **list, size_t *n, const char *msg)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(list[i], msg))
			return false;
	if (*n == MAX_NOTES)
		return false;
	list[*n] = strdup(msg);
	if (!list[*n])
		return false;
	(*n)++;
	return true;
}

/* A limit of what will be seen: warned once, and written into the profile. */
static void note(struct calls_attach *ca, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct calls_attach *ca, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (remember(ca->notes, &ca->nnotes, msg))
		pr_warn("--calls: %s\n", msg);
}

static void why_not(struct calls_attach *ca, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void why_not(struct calls_attach *ca, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (remember(ca->why, &ca->nwhy, msg))
		pr_debug("--calls: %s\n", msg);
}

static void describe(char *buf, size_t len, const struct calls_runtime_file *rf)
{
	if (rf->major >= 0 && rf->minor >= 0)
		snprintf(buf, len, "%s %d.%d (%s)", runtime_names[rf->runtime], rf->major,
			 rf->minor, rf->path);
	else if (rf->major >= 0)
		snprintf(buf, len, "%s %d (%s)", runtime_names[rf->runtime], rf->major, rf->path);
	else
		snprintf(buf, len, "%s (%s)", runtime_names[rf->runtime], rf->path);
}

/*
 * HotSpot's entry probe sits in SharedRuntime::dtrace_method_entry, called from the Java
 * frame.  The unwound-frame detection (PROF_CALL_F_FRAME) finds that frame through the
 * function's frame pointer: only when its prologue sets one (x86-64 "push %rbp; mov
 * %rsp,%rbp", after an optional endbr64), as OpenJDK 17 and 25 builds do.
 */
static bool java_entry_keeps_frame_pointer(const char *path)
{
#if defined(__x86_64__)
	static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
	static const unsigned char push_mov[] = {0x55, 0x48, 0x89, 0xe5};
	struct elf_file_opts opts = {.debug_dir = ""};
	struct elf_file *ef = NULL;
	unsigned char code[8];
	struct elf_func fn;
	bool ok = false;

	if (elf_file__open(&ef, path, &opts))
		return false;
	if (!elf_file__find_symbol(
		    ef, &fn, "_ZN13SharedRuntime19dtrace_method_entryEP10JavaThreadP6Method") &&
	    !elf_file__read_at(ef, code, sizeof(code), fn.file_offset)) {
		size_t off = memcmp(code, endbr64, sizeof(endbr64)) ? 0 : sizeof(endbr64);

		ok = !memcmp(code + off, push_mov, sizeof(push_mov));
	}
	elf_file__free(ef);
	return ok;
#else
	(void)path;
	return false;
#endif
}

/* The runtime's marker probes on the file whose call probes are in (key's entry): each on its
 * own, a missing one skipped.  0 or -errno (out of memory). */
static int attach_markers(struct calls_attach *ca, const struct calls_runtime_file *rf, int pid,
			  const char *at_path, const struct loader_attach_key *key)
{
	struct calls_marker_probe mp[CALLS_MAX_MARKERS];
	int n = calls_attach__marker_plan(mp, rf->runtime), err = 0;

	for (int i = 0; i < n && !err; i++) {
		struct bpf_program *prog = loader__marker_prog(ca->l, mp[i].kind);
		struct bpf_link *link;

		if (!prog)
			return -EINVAL;
		link = bpf_program__attach_usdt(prog, pid, at_path, mp[i].provider, mp[i].name,
						NULL);
		if (!link) {
			err = -errno;
			pr_debug("--calls: no %s:%s marker probe in %s: %s\n", mp[i].provider,
				 mp[i].name, rf->path, strerror(-err));
			err = err == -ENOMEM ? err : 0;
			continue;
		}
		err = loader__attached_link(ca->l, key, link);
		if (!err)
			pr_debug("--calls: attached marker probe %s:%s to %s\n", mp[i].provider,
				 mp[i].name, rf->path);
	}
	return err;
}

/*
 * Attach the plan's probes to one file: all or none (entries without their returns would
 * grow stacks forever).  pid -1 = every process mapping the file.  at_path is where we open
 * it: /proc/self/fd/N of the verified mapped file (safe_open.h).
 * Returns probes attached, 0 when the file has none usable, or -errno.
 */
static int attach_file(struct calls_attach *ca, const struct calls_runtime_file *rf, int pid,
		       const char *at_path)
{
	struct loader_attach_key key = {.pid = pid, .kind = LOADER_ATTACH_CALLS};
	struct bpf_link *links[CALLS_MAX_PROBES] = {};
	struct calls_plan plan;
	char what[4200];
	int32_t *done;
	struct stat st;
	bool created;
	int err = 0, i;

	if (stat(at_path, &st))
		return -errno;
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	err = loader__attached(ca->l, &key, &done, &created);
	if (err)
		return err;
	if (!created)
		return *done;
	describe(what, sizeof(what), rf);
	calls_attach__plan(&plan, rf->runtime, rf->major, rf->minor);
	if (plan.limit)
		note(ca, "%s", plan.limit);
	if (!plan.nprobes) {
		why_not(ca, "%s: no call probes in this version", what);
		return 0;
	}
	if (rf->runtime == PROF_RT_JAVA) {
		if (java_entry_keeps_frame_pointer(at_path))
			plan.probes[0].flags |= PROF_CALL_F_FRAME;
		else
			note(ca,
			     "%s: JIT-compiled Java code fires no method__return for frames an "
			     "exception unwinds, and this libjvm keeps no frame pointer to detect "
			     "them: with exceptions, stacks and counts go wrong (-Xint avoids it)",
			     rf->path);
	}
	for (i = 0; i < plan.nprobes; i++) {
		struct bpf_usdt_opts opts = {.sz = sizeof(opts),
					     .usdt_cookie = plan.probes[i].flags};
		struct bpf_program *prog =
			loader__calls_prog(ca->l, rf->runtime, plan.probes[i].ret);

		if (!prog) {
			err = -EINVAL;
			break;
		}
		links[i] = bpf_program__attach_usdt(prog, pid, at_path, plan.probes[i].provider,
						    plan.probes[i].name, &opts);
		if (!links[i]) {
			err = -errno;
			break;
		}
	}
	if (err) {
		for (int j = 0; j < i; j++)
			bpf_link__destroy(links[j]);
		if (err == -ENOENT) {
			/* Not an error: e.g. /usr/bin/ruby3.1 next to the libruby that has them,
			 * or a python built without --with-dtrace. */
			why_not(ca, "%s has no %s:%s probe (built without USDT/dtrace support?)",
				what, plan.probes[i].provider, plan.probes[i].name);
			return 0;
		}
		pr_warn("--calls: attaching %s:%s in %s failed: %s\n", plan.probes[i].provider,
			plan.probes[i].name, rf->path, strerror(-err));
		loader__attached_drop(ca->l, &key);
		return err;
	}
	for (i = 0; i < plan.nprobes; i++) {
		err = loader__attached_link(ca->l, &key, links[i]);
		if (err) {
			for (int j = i + 1; j < plan.nprobes; j++)
				bpf_link__destroy(links[j]);
			return err;
		}
	}
	if (ca->markers) {
		err = attach_markers(ca, rf, pid, at_path, &key);
		if (err)
			return err;
	}
	pr_info("--calls: attached %d %s probes to %s%s\n", plan.nprobes,
		runtime_names[rf->runtime], rf->path, pid < 0 ? " (all processes, filtered)" : "");
	if (!loader__attached(ca->l, &key, &done, &created))
		*done = plan.nprobes;
	ca->total += plan.nprobes;
	return plan.nprobes;
}

/* Whole file into a malloc'd buffer (NUL-terminated too). */
static int slurp(const char *path, char **out, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t r;
	int fd, err = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	while ((r = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			char *b = realloc(buf, (cap *= 2) + 1);

			if (!b) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = b;
		}
	}
	if (r < 0)
		err = -errno;
cleanup:
	if (fd >= 0)
		close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

/* Java's version, when the file name does not carry it: <home>/lib/server/libjvm.so next to
 * <home>/release. */
static void java_version(struct calls_runtime_file *rf, int root_fd)
{
	char path[PATH_MAX + 32], *cut;
	int major;

	snprintf(path, sizeof(path), "%s", rf->path);
	for (int up = 0; up < 3; up++) {
		cut = strrchr(path, '/');
		if (!cut)
			return;
		*cut = 0;
	}
	strncat(path, "/release", sizeof(path) - strlen(path) - 1);
	if (!calls_attach__java_release_read(&major, root_fd, path))
		rf->major = major;
}

/* What each runtime needs from the process to fire its probes. */
static void check_runtime_env(struct calls_attach *ca, const struct calls_runtime_file *rf,
			      const char *who, const char *cmdline, size_t cmdline_len,
			      const char *environ, size_t environ_len)
{
	if (rf->runtime == PROF_RT_PHP &&
	    !calls_attach__env_enabled(environ, environ_len, "USE_ZEND_DTRACE"))
		note(ca,
		     "%s runs PHP without USE_ZEND_DTRACE=1 in its environment: PHP fires "
		     "php:function__entry/return only when started with it, so no PHP calls "
		     "will be seen",
		     who);
	if (rf->runtime == PROF_RT_JAVA &&
	    !calls_attach__java_probes_enabled(cmdline, cmdline_len, environ, environ_len))
		note(ca,
		     "%s runs HotSpot without %s: hotspot:method__entry/return fire only with "
		     "it, so no Java calls will be seen",
		     who,
		     rf->major >= 20 ? "-XX:+DTraceMethodProbes"
		     : rf->major > 0
			     ? "-XX:+ExtendedDTraceProbes"
			     : "-XX:+ExtendedDTraceProbes (JDK <= 19) or -XX:+DTraceMethodProbes "
			       "(JDK 20+)");
}

static int mark_threads(struct calls_attach *ca, uint32_t pid, uint64_t ts)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while (!err && (d = readdir(dir))) {
		char *end;
		unsigned long tid = strtoul(d->d_name, &end, 10);

		if (*end || !tid)
			continue;
		err = ca->on_thread(ca->on_thread_ctx, pid, (uint32_t)tid, ts);
	}
	closedir(dir);
	return err;
}

/* m: pid's mappings as the tracker read them at the event, or NULL: read now. */
static int attach_maps(struct calls_attach *ca, uint32_t pid, const struct maps *given,
		       int probe_pid, bool check_env)
{
	struct calls_runtime_file files[MAX_RUNTIME_FILES];
	char path[64], at[PATH_MAX + 64], who[64];
	char *cmdline = NULL, *environ = NULL;
	size_t n, cmdline_len = 0, environ_len = 0;
	const struct maps *m = given;
	struct maps *read = NULL;
	int err, total = 0, root_fd = -1;

	if (!m) {
		err = maps__read_pid(&read, "/proc", pid);
		if (err)
			return err;
		m = read;
	}
	n = calls_attach__detect(m, files, MAX_RUNTIME_FILES);
	if (n) {
		/* The target's paths resolve inside its root, never on the host. */
		err = safe_open__root(&root_fd, "/proc", pid);
		if (err)
			goto cleanup;
	}
	if (n && check_env) {
		snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
		slurp(path, &cmdline, &cmdline_len);
		snprintf(path, sizeof(path), "/proc/%u/environ", pid);
		slurp(path, &environ, &environ_len);
	}
	snprintf(who, sizeof(who), "process %u", pid);
	for (size_t i = 0; i < n; i++) {
		const struct maps_entry *e = NULL;
		int fd;

		for (size_t j = 0; j < m->count && !e; j++)
			if (m->entries[j].exec && !strcmp(m->entries[j].path, files[i].path))
				e = &m->entries[j];
		if (!e)
			continue;
		err = safe_open__mapping(&fd, "/proc", pid, e, root_fd);
		if (err) {
			if (safe_open__refused(err))
				pr_warn("--calls: not probing %s of %u: %s\n", e->path, pid,
					safe_open__strerror(err));
			err = 0;
			continue;
		}
		if (files[i].runtime == PROF_RT_JAVA && files[i].major < 0)
			java_version(&files[i], root_fd);
		if (check_env)
			check_runtime_env(ca, &files[i], who, cmdline, cmdline_len, environ,
					  environ_len);
		/* libbpf and the kernel open the file again by path: the verified fd's own. */
		safe_open__fd_path(at, sizeof(at), fd);
		err = attach_file(ca, &files[i], probe_pid, at);
		close(fd);
		if (err < 0)
			break;
		total += err;
	}
cleanup:
	if (root_fd >= 0)
		close(root_fd);
	maps__free(read);
	free(cmdline);
	free(environ);
	return err < 0 ? err : total;
}

int calls_attach__pid(struct calls_attach *ca, uint32_t pid, const struct maps *m)
{
	uint64_t ts;
	int n, err;

	n = attach_maps(ca, pid, m, (int)pid, true);
	if (n <= 0)
		return n;
	/* Every probe is in place: events from now on are whole (entries and returns). */
	ts = (uint64_t)clock__mono_ns();
	/* Listed after attaching: a thread born meanwhile may have missed events too. */
	err = mark_threads(ca, pid, ts);
	return err == -ENOENT ? n : err ? err : n;
}

int calls_attach__rescan(struct calls_attach *ca, uint32_t pid, const struct maps *m)
{
	return attach_maps(ca, pid, m, -1, false);
}

/* ---- `-- CMD`: what will it run? ------------------------------------------------------ */

/* "#!/usr/bin/env php" -> the program env would run; "#!/usr/bin/python3.11 -u" -> it. */
static bool shebang_target(const char *script, char *out, size_t len)
{
	char line[PATH_MAX], *p, *interp, *arg;
	FILE *f = fopen(script, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(line, sizeof(line), f) && !strncmp(line, "#!", 2);
	fclose(f);
	if (!ok)
		return false;
	p = line + 2;
	interp = strtok_r(p, " \t\n", &p);
	arg = strtok_r(NULL, " \t\n", &p);
	if (!interp)
		return false;
	if (!strcmp(base_name(interp), "env") && arg) {
		if (!strcmp(arg, "-S"))
			arg = strtok_r(NULL, " \t\n", &p);
		return arg && !cmdpath__resolve(out, len, arg);
	}
	snprintf(out, len, "%s", interp);
	return true;
}

/* A DT_NEEDED name worth attaching to: a runtime library. */
static bool is_runtime_lib(const char *name)
{
	return calls_attach__classify(name, NULL);
}

/* Every DT_NEEDED runtime library of the executable open at fd (user/elf_needed.h). */
static void runtime_libs(int fd, const char *origin, int root_fd, const char *ld_path,
			 void (*fn)(const char *path, void *arg), void *arg)
{
	elf_needed__each(fd, origin, root_fd, ld_path, is_runtime_lib, fn, arg);
}

struct cmd_files {
	struct calls_runtime_file files[MAX_RUNTIME_FILES];
	size_t n;
};

static void add_candidate(const char *path, void *arg)
{
	struct cmd_files *c = arg;
	char real[PATH_MAX];

	if (c->n == MAX_RUNTIME_FILES || !realpath(path, real))
		return;
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->files[i].path, real))
			return;
	if (calls_attach__classify(real, &c->files[c->n]))
		c->n++;
}

int calls_attach__cmd(struct calls_attach *ca, char *const *cmd)
{
	extern char **environ;
	struct cmd_files c = {.n = 0};
	char exe[PATH_MAX], real[PATH_MAX], interp[PATH_MAX], jvm[PATH_MAX + 32];
	char origin[PATH_MAX];
	char *env_list = NULL, *args = NULL;
	size_t env_len = 0, args_len = 0;
	int err = 0, total = 0, fd;

	if (cmdpath__resolve(exe, sizeof(exe), cmd[0]) || !realpath(exe, real))
		return 0; /* session reports the failed exec */
	if (shebang_target(real, interp, sizeof(interp)) && realpath(interp, exe))
		snprintf(real, sizeof(real), "%s", exe);
	add_candidate(real, &c);
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		snprintf(origin, sizeof(origin), "%s", real);
		*strrchr(origin, '/') = 0;
		runtime_libs(fd, origin, -1, getenv("LD_LIBRARY_PATH"), add_candidate, &c);
		close(fd);
	}
	if (!strcmp(base_name(real), "java")) {
		/* libjli dlopen()s <home>/lib/server/libjvm.so: not a DT_NEEDED. */
		snprintf(jvm, sizeof(jvm), "%s", real);
		*strrchr(jvm, '/') = 0;
		if (strrchr(jvm, '/'))
			*strrchr(jvm, '/') = 0;
		strncat(jvm, "/lib/server/libjvm.so", sizeof(jvm) - strlen(jvm) - 1);
		add_candidate(jvm, &c);
	}

	/* What the child will see: our environment and its argv. */
	for (char **e = environ; e && *e; e++)
		env_len += strlen(*e) + 1;
	for (char *const *a = cmd; *a; a++)
		args_len += strlen(*a) + 1;
	env_list = malloc(env_len + 1);
	args = malloc(args_len + 1);
	if (!env_list || !args) {
		err = -ENOMEM;
		goto cleanup;
	}
	env_len = args_len = 0;
	for (char **e = environ; e && *e; e++)
		env_len += (size_t)sprintf(env_list + env_len, "%s", *e) + 1;
	for (char *const *a = cmd; *a; a++)
		args_len += (size_t)sprintf(args + args_len, "%s", *a) + 1;

	for (size_t i = 0; i < c.n; i++) {
		if (c.files[i].runtime == PROF_RT_JAVA && c.files[i].major < 0)
			java_version(&c.files[i], -1);
		/* Without the exec stop, our environment and CMD's argv are the best guess. */
		if (!ca->exec_stops)
			check_runtime_env(ca, &c.files[i], cmd[0], args, args_len, env_list,
					  env_len);
		err = attach_file(ca, &c.files[i], -1, c.files[i].path);
		if (err < 0)
			goto cleanup;
		total += err;
	}
	err = 0;
cleanup:
	free(env_list);
	free(args);
	return err ? err : total;
}

/* ---- a process of the tree stopped at its exec ------------------------------------------ */

struct exec_libs {
	struct calls_attach *ca;
	int root_fd;
	const char *who, *cmdline, *environ;
	size_t cmdline_len, environ_len;
	int total, err;
};

/* A runtime library the new image will load: attach (every process, filtered) by its path
 * inside the target's root. */
static void exec_lib(const char *path, void *arg)
{
	struct exec_libs *x = arg;
	struct calls_runtime_file rf;
	char at[PATH_MAX + 64];
	int fd, n;

	if (x->err || !calls_attach__classify(path, &rf))
		return;
	if (safe_open__at(&fd, x->root_fd, path, 0, SAFE_OPEN_ELF_MAX, NULL))
		return;
	if (rf.runtime == PROF_RT_JAVA && rf.major < 0)
		java_version(&rf, x->root_fd);
	check_runtime_env(x->ca, &rf, x->who, x->cmdline, x->cmdline_len, x->environ,
			  x->environ_len);
	safe_open__fd_path(at, sizeof(at), fd);
	n = attach_file(x->ca, &rf, -1, at);
	close(fd);
	if (n < 0)
		x->err = n;
	else
		x->total += n;
}

/* NAME's value in a NUL-separated environment, or NULL. */
static const char *env_value(const char *list, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < len;) {
		size_t n = strnlen(list + i, len - i);

		if (n > nl && !strncmp(list + i, name, nl) && list[i + nl] == '=')
			return list + i + nl + 1;
		i += n + 1;
	}
	return NULL;
}

/*
 * Hook the dynamic loader mapped by a process at its exec (the executable mapping that is not
 * the executable), every process filtered in BPF, once per file: its dlopen()s are then seen.
 * Returns 0 or -errno; a loader without the hook (not glibc's) is none of our business.
 */
static int hook_dl(struct calls_attach *ca, uint32_t pid, const struct maps *m, const char *exe,
		   int root_fd)
{
	int err, fd;

	for (size_t j = 0; j < m->count; j++) {
		const struct maps_entry *e = &m->entries[j];

		if (!e->exec || e->path[0] != '/' || !strcmp(e->path, exe))
			continue;
		if (safe_open__mapping(&fd, "/proc", pid, e, root_fd))
			continue;
		err = loader__attach_hook(ca->l, LOADER_HOOK_DL, fd, e->path);
		close(fd);
		return err < 0 ? err : 0;
	}
	return 0;
}

int calls_attach__exec(struct calls_attach *ca, uint32_t pid, const struct maps *given)
{
	struct exec_libs x = {.ca = ca, .root_fd = -1};
	char path[64], exe[PATH_MAX], origin[PATH_MAX], jvm[PATH_MAX + 32], who[64];
	char *cmdline = NULL, *environ = NULL;
	const struct maps_entry *e = NULL;
	const struct maps *m = given;
	struct maps *read = NULL;
	ssize_t len;
	int n, fd = -1, err;

	if (!m) {
		err = maps__read_pid(&read, "/proc", pid);
		if (err == -ENOENT || err == -ESRCH)
			return 0; /* killed at its exec */
		if (err)
			return err;
		m = read;
	}
	/* The new image itself (php, python3.11): mapped already. */
	n = attach_maps(ca, pid, m, -1, true);
	err = n < 0 && n != -ENOENT && n != -ESRCH ? n : 0;
	if (n < 0) {
		n = 0; /* killed at its exec, or failed (err) */
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len <= 0)
		goto cleanup; /* gone */
	exe[len] = 0;
	for (size_t j = 0; j < m->count && !e; j++)
		if (!strcmp(m->entries[j].path, exe))
			e = &m->entries[j];
	err = safe_open__root(&x.root_fd, "/proc", pid);
	if (!err && e)
		err = safe_open__mapping(&fd, "/proc", pid, e, x.root_fd);
	if (!err)
		err = hook_dl(ca, pid, m, exe, x.root_fd);
	if (err || !e) {
		err = 0; /* exited, or an executable we may not open: its maps rescan later */
		goto cleanup;
	}
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	slurp(path, &cmdline, &x.cmdline_len);
	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	slurp(path, &environ, &x.environ_len);
	snprintf(who, sizeof(who), "process %u", pid);
	x.who = who;
	x.cmdline = cmdline ? cmdline : "";
	x.environ = environ ? environ : "";
	if (!cmdline)
		x.cmdline_len = 0;
	if (!environ)
		x.environ_len = 0;
	/* Its DT_NEEDED runtimes (libpython, libruby, libphp): ld.so maps them only after this
	 * stop, and a uprobe on the file is in place when it does. */
	snprintf(origin, sizeof(origin), "%s", exe);
	*strrchr(origin, '/') = 0;
	runtime_libs(fd, origin, x.root_fd, env_value(x.environ, x.environ_len, "LD_LIBRARY_PATH"),
		     exec_lib, &x);
	/* A JDK launcher (java, javac, jshell, jar…) dlopen()s <home>/lib/server/libjvm.so,
	 * which no DT_NEEDED names: <home>/bin/<launcher>. */
	if (!x.err && strlen(origin) > 4 && !strcmp(origin + strlen(origin) - 4, "/bin")) {
		snprintf(jvm, sizeof(jvm), "%.*s/lib/server/libjvm.so", (int)strlen(origin) - 4,
			 origin);
		exec_lib(jvm, &x);
	}
	err = x.err;
cleanup:
	if (fd >= 0)
		close(fd);
	if (x.root_fd >= 0)
		close(x.root_fd);
	maps__free(read);
	free(cmdline);
	free(environ);
	return err ? err : n + x.total;
}

void calls_attach__set_exec_stops(struct calls_attach *ca, bool on)
{
	ca->exec_stops = on;
}

void calls_attach__set_markers(struct calls_attach *ca, bool on)
{
	ca->markers = on;
}

int calls_attach__total(const struct calls_attach *ca)
{
	return ca->total;
}

void calls_attach__explain_none(struct calls_attach *ca, const char *target)
{
	char buf[2048] = "";
	size_t len = 0;

	for (size_t i = 0; i < ca->nwhy && len < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "; " : "",
					ca->why[i]);
	if (ca->nwhy)
		pr_err("--calls: no usable interpreter probes in %s: %s\n", target, buf);
	else
		pr_err("--calls: no interpreter with call probes in %s (looked for python 2.x/3.x "
		       "and libpython, libruby/ruby, php/php-fpm/libphp and libjvm.so; perl, node "
		       "and tcl carry none)\n",
		       target);
	/* Reasons are per target: the next one starts afresh. */
	for (size_t i = 0; i < ca->nwhy; i++)
		free(ca->why[i]);
	ca->nwhy = 0;
}

size_t calls_attach__notes(const struct calls_attach *ca, const char *const **out)
{
	*out = (const char *const *)ca->notes;
	return ca->nnotes;
}
