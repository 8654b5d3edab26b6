// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/calls_attach.h"

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
#include "attach/calls_plan.h"
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
	int n = calls_plan__markers(mp, rf->runtime), err = 0;

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
	calls_plan__init(&plan, rf->runtime, rf->major, rf->minor);
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
		loader__detach(ca->l, &key);
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
	if (!calls_plan__java_release_read(&major, root_fd, path))
		rf->major = major;
}

/* What each runtime needs from the process to fire its probes. */
static void check_runtime_env(struct calls_attach *ca, const struct calls_runtime_file *rf,
			      const char *who, const char *cmdline, size_t cmdline_len,
			      const char *environ, size_t environ_len)
{
	if (rf->runtime == PROF_RT_PHP &&
	    !calls_plan__env_enabled(environ, environ_len, "USE_ZEND_DTRACE"))
		note(ca,
		     "%s runs PHP without USE_ZEND_DTRACE=1 in its environment: PHP fires "
		     "php:function__entry/return only when started with it, so no PHP calls "
		     "will be seen",
		     who);
	if (rf->runtime == PROF_RT_JAVA &&
	    !calls_plan__java_probes_enabled(cmdline, cmdline_len, environ, environ_len))
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
	n = calls_plan__detect(m, files, MAX_RUNTIME_FILES);
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
	if (!strcmp(calls_plan__base_name(interp), "env") && arg) {
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
	return calls_plan__classify(name, NULL);
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
	if (calls_plan__classify(real, &c->files[c->n]))
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
	if (!strcmp(calls_plan__base_name(real), "java")) {
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

	if (x->err || !calls_plan__classify(path, &rf))
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
