// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "track/tracker.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "attach/heap_attach.h"
#include "attach/loader.h"
#include "attach/owners.h"
#include "attach/py_watch.h"
#include "proc/maps.h"
#include "proc/pidfd.h"
#include "proc/procinfo.h"
#include "proc/safe_open.h"
#include "sym/elf_needed.h"
#include "sym/stackres.h"
#include "track/holds.h"
#include "unwind/unwinder.h"
#include "util/clock.h"
#include "util/hashmap.h"
#include "util/log.h"

struct tracker {
	struct tracker_opts opts;
	struct loader *loader;
	struct stackres *stacks;
	struct procinfo *procs;
	struct unwinder *unw; /* NULL with --unwind fp, or without a mode that walks stacks */
	int unwind_asked_fd;  /* prof_unwind_asked: processes without an entry that asked */
	bool unwind_stale;    /* some target waits for a re-read of its mappings */
	struct holds *holds;  /* processes BPF stopped for us, until resumed */
	struct held *held;    /* processes stopped at exec until their tables load */
	bool holds_over;      /* the run is ending: nobody is held for tables any more */
	size_t nheld, held_cap;
	int64_t held_deadline; /* CLOCK_MONOTONIC: let them go even if builds still run */
	uint64_t dlopen_holds, dlopen_hold_timeouts; /* PROF_COLLECT_STATS, this interval */
	struct hashmap *targets;		     /* pid -> struct target */
	struct hashmap *roots;	  /* wide scopes: (dev, ino) of the roots probed */
	struct hashmap *prepared; /* (dev, ino) of executables whose image was prepared */
	struct owners *owners;	  /* wide scopes: what keeps each probed file */
	bool owners_released;	  /* a process released what it kept: sweep at the next tick */
	/* Prepared (dev, ino) -> the BPF's prof_exec_key of its held exec. */
	struct hashmap *exec_keys;
	bool events_started; /* the ring buffer exists: draining it is allowed */
	int err;	     /* the first fatal error (0 or -errno) */
	/* The mappings of the process the current event is about: read once, for every user. */
	struct maps *ev_maps;
	uint32_t ev_pid;
	int ev_err;   /* the read's: -ESRCH when the process is gone */
	bool ev_read; /* ev_* hold a read (of ev_pid) */
	/* The symbolizer's load of sym_pid this event asks for, queued when the event ends. */
	enum { SYM_NONE, SYM_LOAD, SYM_RELOAD } sym_job;
	uint32_t sym_pid;
};

/*
 * A process being profiled.  The pidfd pins the process itself, not its number: once it is
 * gone, signals sent through the pidfd go nowhere, even if a new process took the pid.
 */
struct target {
	int pidfd; /* -1 if the process was gone before we could open one */
	uint8_t alive;
	uint8_t unwind_stale;	/* its mappings changed: re-read them when the time comes */
	uint8_t sym_stale;	/* ... and the symbolizer is told at that read (an unheld dlopen) */
	uint8_t unwind_quick;	/* re-reads in the current UNWIND_REREAD_NS window */
	int64_t unwind_read_ns; /* CLOCK_MONOTONIC of the last read of its mappings */
};

/*
 * A process stopped at its exec until the unwind tables of its new image are loaded: by ptrace
 * (`-- CMD`'s tree, hold 0: PTRACE_CONT resumes it) or by BPF's exec hold (wide scopes: hold is
 * its id in tr->holds).
 */
struct held {
	uint32_t pid;
	uint32_t tid; /* a dlopen hold under ptrace: the thread in our SIGSTOP's delivery stop */
	uint64_t hold;
	int64_t deadline; /* a dlopen hold: resumed then (PROF_DL_HOLD_MS); 0: held_deadline's */
};

/*
 * An unknown pc asks for a re-read of the process's mappings: at once for the first few in a
 * window (a new program maps its libraries right after exec, then dlopens), then at most once
 * per window (a pc that stays unknown must not make us read the maps at every sample).
 */
#define UNWIND_REREAD_NS	 (200 * 1000000LL)
#define UNWIND_REREAD_QUICK	 4
/* How long a new program of `-- CMD`'s tree waits at its exec for its tables; in a wide scope
 * (the first exec of each executable, while other programs may be building theirs) less. */
#define UNWIND_EXEC_WAIT_MS	 3000
#define UNWIND_EXEC_WAIT_WIDE_MS 500

static void prepare_image(struct tracker *tr, uint32_t pid);
static void owned_gone(void *ctx, enum owners_kind kind, const struct owners_key *key);

/* Remember the first fatal error (already reported where it happened). */
static int fatal(struct tracker *tr, int err)
{
	if (err && !tr->err)
		tr->err = err;
	return err;
}

static void flush_sym(struct tracker *tr);

static void drop_maps(struct tracker *tr)
{
	maps__free(tr->ev_maps);
	tr->ev_maps = NULL;
	tr->ev_read = false;
}

/*
 * pid's mappings as this event sees them: read at the first ask (proc/maps: capped), then the
 * same snapshot for every user — the unwinder, the loader hook, the attach plans, the
 * symbolizer's worker (which takes a reference) — until tracker__event_end.  NULL and *err when
 * the process is gone (or memory ran out).
 */
static struct maps *event_maps(struct tracker *tr, uint32_t pid, int *err)
{
	if (!tr->ev_read || tr->ev_pid != pid) {
		/* Another process's load goes with its own read; pid's waits for this one. */
		if (tr->sym_job != SYM_NONE && tr->sym_pid != pid)
			flush_sym(tr);
		drop_maps(tr);
		tr->ev_err = maps__read_pid(&tr->ev_maps, "/proc", pid);
		tr->ev_pid = pid;
		tr->ev_read = true;
	}
	if (err)
		*err = tr->ev_err;
	return tr->ev_maps;
}

int tracker__maps(struct tracker *tr, uint32_t pid, const struct maps **out)
{
	int err;

	*out = event_maps(tr, pid, &err);
	return err;
}

/*
 * Queue the symbolizer's load of the event's process: with the event's read of its maps when
 * something on this thread needed one (the unwinder, the probes), else none: its worker reads
 * them, off this thread.  Queued before any later record's stacks, so in order with them.
 */
static void flush_sym(struct tracker *tr)
{
	struct maps *m =
		tr->ev_read && tr->ev_pid == tr->sym_pid && !tr->ev_err ? tr->ev_maps : NULL;
	int err = 0;

	if (tr->sym_job == SYM_LOAD)
		err = stackres__load_pid(tr->stacks, tr->sym_pid, m);
	else if (tr->sym_job == SYM_RELOAD)
		err = stackres__reload_pid(tr->stacks, tr->sym_pid, m);
	tr->sym_job = SYM_NONE;
	fatal(tr, err);
}

/* The symbolizer should (re)load pid's mappings: at the end of this event (flush_sym). */
static void sym_load(struct tracker *tr, uint32_t pid, bool reload)
{
	if (tr->sym_job != SYM_NONE && tr->sym_pid != pid)
		flush_sym(tr);
	if (tr->sym_job == SYM_NONE || tr->sym_pid != pid || reload)
		tr->sym_job = reload ? SYM_RELOAD : SYM_LOAD;
	tr->sym_pid = pid;
}

void tracker__event_end(struct tracker *tr)
{
	flush_sym(tr);
	drop_maps(tr);
}

/* The unwinder found (or lost) a CPython in pid: the symbolizer reads its code objects so. */
static bool python_found(void *arg, uint32_t pid, const struct py_version *v,
			 const struct prof_py_proc *py, const struct unwinder_py_code *code)
{
	struct tracker *tr = arg;
	int err;

	fatal(tr, stackres__python(tr->stacks, pid, v, py));
	if (!v || !code) {
		py_watch__gone(tr->loader, pid);
		return false;
	}
	err = py_watch__attach(tr->loader, "/proc", pid, code);
	if (err && err != -EOPNOTSUPP)
		pr_debug("pid %u: CPython's code_dealloc not probed (%s): its code objects are "
			 "read for every frame\n",
			 pid, strerror(-err));
	return !err;
}

static int unwinder_start(struct tracker *tr)
{
	struct unwinder_opts o = {0};
	struct loader_unwind_fds fds;
	int err;

	if (!tr->loader)
		return 0; /* unit tests without BPF */
	err = loader__unwind_fds(tr->loader, &fds);
	if (err)
		return 0; /* no program that walks stacks was loaded */
	o.procs_fd = fds.procs;
	o.tables_fd = fds.tables;
	o.files_fd = fds.files;
	tr->unwind_asked_fd = fds.asked;
	o.on_python = python_found;
	o.on_python_arg = tr;
	o.catch_up = tr->opts.wide; /* it does not wait for the tables of what it finds at start */
	o.max_table_bytes = tr->opts.unwind_memory;
	o.table_opts.max_rows = tr->opts.unwind_max_rows;
	o.table_opts.max_bytes = tr->opts.unwind_max_cfi;
	err = unwinder__new(&tr->unw, &o);
	if (err)
		pr_err("starting the unwind-table worker failed: %s\n", strerror(-err));
	return err;
}

int tracker__new(struct tracker **out, const struct tracker_opts *opts)
{
	struct tracker *tr = calloc(1, sizeof(*tr));
	int err;

	if (!tr)
		return -ENOMEM;
	tr->opts = *opts;
	tr->loader = opts->loader;
	tr->stacks = opts->stacks;
	tr->procs = opts->procs;
	tr->unwind_asked_fd = -1;
	err = hashmap__new(&tr->targets, sizeof(uint32_t), sizeof(struct target));
	if (!err)
		err = hashmap__new(&tr->roots, 2 * sizeof(uint64_t), 1);
	if (!err)
		err = hashmap__new(&tr->prepared, 2 * sizeof(uint64_t), 1);
	if (!err && opts->wide)
		err = owners__new(&tr->owners);
	if (!err)
		err = hashmap__new(&tr->exec_keys, 2 * sizeof(uint64_t),
				   sizeof(struct prof_exec_key));
	if (!err && opts->unwind_tables)
		err = unwinder_start(tr);
	if (!err)
		err = holds__new(&tr->holds, tr->loader ? loader__held_map_fd(tr->loader) : -1);
	if (err) {
		tracker__free(tr);
		return err;
	}
	*out = tr;
	return 0;
}

static void target_close(struct target *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
	t->alive = 0;
}

/* Let one held process run on: its BPF hold resumed, and the thread our SIGSTOP stopped in
 * its delivery (ptrace) continued without it; a ptrace exec stop continued. */
static void held_release(struct tracker *tr, const struct held *h)
{
	pid_t t = (pid_t)(h->hold ? h->tid : h->pid);

	if (h->hold)
		holds__resume(tr->holds, h->hold);
	if (t && ptrace(PTRACE_CONT, t, 0, 0) && errno != ESRCH)
		pr_debug("resuming %u after its hold: %s\n", (unsigned)t, strerror(errno));
}

/* Let the processes held at their exec run on (their tables are loaded, or it took too long). */
static void release_held(struct tracker *tr)
{
	for (size_t i = 0; i < tr->nheld; i++)
		held_release(tr, &tr->held[i]);
	tr->nheld = 0;
}

void tracker__free(struct tracker *tr)
{
	struct target *t;
	size_t it = 0;

	if (!tr)
		return;
	tracker__event_end(tr);
	while (tr->targets && hashmap__next(tr->targets, &it, NULL, (void **)&t))
		target_close(t);
	release_held(tr);
	free(tr->held);
	unwinder__free(tr->unw);
	/* Exit holds are resumed by the symbolizer's thread: the session frees stackres first. */
	holds__free(tr->holds);
	hashmap__free(tr->targets);
	hashmap__free(tr->roots);
	hashmap__free(tr->prepared);
	owners__free(tr->owners);
	hashmap__free(tr->exec_keys);
	free(tr);
}

int tracker__error(struct tracker *tr)
{
	return tr->err;
}

void tracker__fail(struct tracker *tr, int err)
{
	fatal(tr, err);
}

void tracker__events_started(struct tracker *tr)
{
	tr->events_started = true;
}

struct owners *tracker__owners(struct tracker *tr)
{
	return tr->owners;
}

/*
 * Read pid's mappings for the unwinder (first sight, exec, an unknown pc).  A process that is
 * gone is not an error; a full process map is counted by the unwinder.
 */
static void unwind_read(struct tracker *tr, uint32_t pid, struct target *t)
{
	const struct maps *m;
	int err;

	if (!tr->unw)
		return;
	if (t) {
		t->unwind_stale = 0;
		t->unwind_read_ns = clock__mono_ns();
	}
	m = event_maps(tr, pid, &err);
	if (m)
		err = unwinder__add_process(tr->unw, pid, m);
	if (err && err != -ESRCH && err != -ENOENT && err != -ENOSPC)
		pr_debug("reading the mappings of %u for unwinding: %s\n", pid, strerror(-err));
	/* A process that had no entry asked once: it may ask again. */
	bpf_map_delete_elem(tr->unwind_asked_fd, &pid);
}

void tracker__unwind_miss(struct tracker *tr, uint32_t pid)
{
	struct target *t = hashmap__find(tr->targets, &pid);

	tracker__event_end(tr);
	if (!tr->unw)
		return;
	if (t && clock__mono_ns() - t->unwind_read_ns >= UNWIND_REREAD_NS)
		t->unwind_quick = 0;
	if (!t || t->unwind_quick < UNWIND_REREAD_QUICK) {
		if (t)
			t->unwind_quick++;
		unwind_read(tr, pid, t);
		return;
	}
	t->unwind_stale = 1; /* read recently: tracker__poll re-reads it later */
	tr->unwind_stale = true;
}

/* Dlopen holds past their own deadline go, tables or not (counted). */
static void dlopen_expire(struct tracker *tr, int64_t now)
{
	for (size_t i = 0; i < tr->nheld;) {
		if (tr->held[i].deadline && now >= tr->held[i].deadline) {
			tr->dlopen_hold_timeouts++;
			held_release(tr, &tr->held[i]);
			tr->held[i] = tr->held[--tr->nheld];
		} else {
			i++;
		}
	}
}

static int poll_unwinder(struct tracker *tr)
{
	const uint32_t *pid;
	struct target *t;
	size_t it = 0;
	int64_t now;
	bool left = false;
	int err;

	if (!tr->unw)
		return 0;
	if (tr->unwind_stale) {
		now = clock__mono_ns();
		while (hashmap__next(tr->targets, &it, (const void **)&pid, (void **)&t)) {
			if (!t->unwind_stale)
				continue;
			if (t->alive && now - t->unwind_read_ns >= UNWIND_REREAD_NS) {
				tracker__event_end(tr); /* a re-read: never an older one */
				unwind_read(tr, *pid, t);
				if (t->sym_stale)
					sym_load(tr, *pid, false); /* the same read of its maps */
				t->sym_stale = 0;
			} else if (t->alive)
				left = true;
			else
				t->unwind_stale = 0;
		}
		tr->unwind_stale = left;
		tracker__event_end(tr);
	}
	err = unwinder__poll(tr->unw);
	if (tr->nheld && unwinder__pending(tr->unw))
		dlopen_expire(tr, clock__mono_ns());
	if (tr->nheld && (!unwinder__pending(tr->unw) || clock__mono_ns() >= tr->held_deadline)) {
		if (unwinder__pending(tr->unw))
			pr_warn("unwind tables still building after %d ms: letting %zu new "
				"process(es) run (frame pointers meanwhile)\n",
				tr->opts.wide ? UNWIND_EXEC_WAIT_WIDE_MS : UNWIND_EXEC_WAIT_MS,
				tr->nheld);
		release_held(tr);
	}
	unwinder__set_urgent(tr->unw, tr->nheld != 0); /* as long as anyone is held */
	if (err == -ENOMEM) {
		pr_err("out of memory while loading unwind tables\n");
		return fatal(tr, err);
	}
	return 0;
}

int tracker__poll(struct tracker *tr)
{
	holds__expire(tr->holds, clock__mono_ns() / 1000000);
	return poll_unwinder(tr);
}

int tracker__wait_unwinder(struct tracker *tr, int timeout_ms)
{
	int err;

	if (!tr->unw)
		return 0;
	err = unwinder__wait(tr->unw, timeout_ms);
	if (err == -ETIMEDOUT)
		pr_warn("unwind tables still building after %d ms: frame pointers meanwhile\n",
			timeout_ms);
	return err == -ETIMEDOUT ? 0 : err;
}

/*
 * -p and `-- CMD` with unwind tables: hook the dynamic loader pid runs (ld-*, once per file, every
 * process filtered in BPF), so that its dlopens are held until their tables are in.  Wide
 * scopes hook every root's loaders (heap_attach__root).  A loader without the hook (not
 * glibc's) is none of our business.
 */
static void hook_loader(struct tracker *tr, uint32_t pid)
{
	const struct maps *m;
	int fd;

	if (!tr->unw || !tr->loader || tr->opts.wide)
		return;
	m = event_maps(tr, pid, NULL);
	if (!m)
		return; /* gone */
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		const char *base = strrchr(e->path, '/');

		if (!e->exec || !base || strncmp(base + 1, "ld-", 3) ||
		    safe_open__mapping(&fd, "/proc", pid, e, -1))
			continue;
		if (loader__attach_hook(tr->loader, LOADER_HOOK_DL, fd, e->path) < 0)
			pr_debug("not hooking the loader %s\n", e->path);
		close(fd);
		break;
	}
}

/*
 * pid became a target (given, started, or a followed child).  Its pidfd is opened now; the
 * pid is a target still only if BPF has not dropped it (its thread group died), so a pidfd
 * opened before that check names the process we meant, or a dead one: never a stranger that
 * reused the number.
 */
static int track(struct tracker *tr, uint32_t pid, bool tables)
{
	struct target *t;
	bool created;
	int fd;

	if (hashmap__upsert(tr->targets, (void **)&t, &pid, &created))
		return -ENOMEM;
	if (!created)
		target_close(t);
	t->pidfd = -1;
	fd = pidfd__open((pid_t)pid);
	if (fd < 0) {
		pr_debug("no pidfd for %u: %s\n", pid, strerror(-fd));
		return 0; /* gone already: its exit event follows */
	}
	if (tr->loader && !tr->opts.wide && loader__has_target(tr->loader, pid) != 1) {
		close(fd);
		return 0;
	}
	t->pidfd = fd;
	t->alive = 1;
	if (tables)
		unwind_read(tr, pid, t);
	hook_loader(tr, pid);
	return 0;
}

int tracker__track(struct tracker *tr, uint32_t pid)
{
	return track(tr, pid, true);
}

/*
 * Our own image until its exec: the tables of our 40 libraries (libcurl's, libcrypto's…) were
 * built and loaded before CMD could start, then never used, and unloaded later (a kernel wait
 * each).  Its exec stop reads the new image's mappings.
 */
int tracker__add_child(struct tracker *tr, uint32_t pid)
{
	return track(tr, pid, false);
}

int tracker__add_pid(struct tracker *tr, uint32_t pid)
{
	int err;

	tracker__event_end(tr); /* a new event: its own read of the maps */
	err = tracker__track(tr, pid);

	if (!err)
		err = procinfo__note(tr->procs, pid, pid);
	if (!err)
		sym_load(tr, pid, false);
	return err;
}

int tracker__add_scoped(struct tracker *tr, uint32_t pid)
{
	int err;

	loader__scope_found(tr->loader, pid);
	err = tracker__add_pid(tr, pid);
	if (!err)
		err = tracker__discover_root(tr, pid);
	/* Its executable and libraries: tables, allocators and the exit hook before the
	 * processes that run them after it come and go. */
	if (!err)
		prepare_image(tr, pid);
	return err;
}

/* Libraries whose tables are built before a new program runs (two levels of DT_NEEDED). */
struct unwind_libs {
	struct tracker *tr;
	int root_fd;
	unsigned depth, n;
	const struct owners_key *image; /* wide scopes: the executable they are kept for */
};

#define UNWIND_PREPARE_MAX 64

static void unwind_lib(const char *path, void *arg)
{
	struct unwind_libs *l = arg;
	struct tracker *tr = l->tr;
	char origin[PATH_MAX];
	int fd;

	if (l->n >= UNWIND_PREPARE_MAX ||
	    safe_open__at(&fd, l->root_fd, path, 0, SAFE_OPEN_ELF_MAX, NULL))
		return;
	l->n++;
	if (tr->unw)
		unwinder__prepare(tr->unw, fd, path); /* 0 at once when the file is known */
	/* A container's own libc: probed before the program's first allocation when we can. */
	if (tr->opts.probe_allocators) {
		int n = heap_attach__file(tr->loader, fd, path, -1);

		if (n < 0)
			pr_debug("not probing %s: %s\n", path, strerror(-n));
	}
	/* A libc's _exit holds its short-lived processes for their symbols (holds on). */
	if (tr->opts.hold_exits)
		loader__attach_hook(tr->loader, LOADER_HOOK_EXIT, fd, path);
	if (l->image && owners__group_fd(tr->owners, OWNERS_IMAGE, l->image, fd))
		pr_debug("not noting %s as kept by its executable: out of memory\n", path);
	if (l->depth < 2) {
		snprintf(origin, sizeof(origin), "%s", path);
		if (strrchr(origin, '/'))
			*strrchr(origin, '/') = 0;
		l->depth++;
		elf_needed__each(fd, origin, l->root_fd, NULL, NULL, unwind_lib, l);
		l->depth--;
	}
	close(fd);
}

/*
 * `-- CMD`: build the tables of what CMD will map before it starts, so its first stacks are
 * complete: its executable and the libraries its DT_NEEDED entries name (ld.so and what a
 * launcher execs are queued at their exec stop).
 */
void tracker__prepare_unwind(struct tracker *tr, const char *exe)
{
	struct unwind_libs l = {.tr = tr, .root_fd = -1, .depth = 1};

	if (tr->unw)
		unwind_lib(exe, &l);
}

/* Wide scopes: the root (container) pid runs in, first time seen: its allocators and loaders
 * are probed for every process there. */
int tracker__discover_root(struct tracker *tr, uint32_t pid)
{
	struct root_key {
		uint64_t dev, ino;
	} key = {0};
	struct stat st;
	bool created;
	void *v;
	int err, root_fd, n = 0;

	if (safe_open__root(&root_fd, "/proc", pid))
		return 0; /* gone, or a kernel thread */
	if (fstat(root_fd, &st)) {
		err = 0;
		goto cleanup;
	}
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	err = hashmap__upsert(tr->roots, &v, &key, &created);
	if (!err && tr->owners)
		err = owners__join(tr->owners, pid, OWNERS_ROOT, (const struct owners_key *)&key);
	if (err || !created)
		goto cleanup;
	err = heap_attach__root(tr->loader, tr->owners, root_fd, tr->opts.hold_exits, &n);
	if (n)
		pr_info("probed %d allocator functions in the root of process %u\n", n, pid);
	err = err == -ENOMEM ? err : 0;
cleanup:
	close(root_fd);
	return err;
}

/* A new image of pid, once per executable: the unwind tables, allocator probes and (holds on)
 * exit hook of its executable and of what its DT_NEEDED entries name, two levels deep,
 * resolved inside its root.  pid's own mappings are the caller's business (unwind_read). */
static void prepare_image(struct tracker *tr, uint32_t pid)
{
	struct unwind_libs l = {.tr = tr, .root_fd = -1, .depth = 1};
	char path[64], exe[PATH_MAX];
	struct owners_key key;
	struct stat st;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	/* An executable prepared once is prepared for good: a loop of short processes must not
	 * pay for it at every exec (their held exits wait for us).  Wide scopes: until no process
	 * runs it (owned_gone). */
	if (!stat(path, &st)) {
		bool created;
		void *v;

		key = (struct owners_key){st.st_dev, st.st_ino};
		if (tr->owners && owners__join(tr->owners, pid, OWNERS_IMAGE, &key))
			return;
		l.image = tr->owners ? &key : NULL;
		if (hashmap__upsert(tr->prepared, &v, &key, &created) || !created)
			return;
	}
	len = readlink(path, exe, sizeof(exe) - 1);
	if (len > 0 && !safe_open__root(&l.root_fd, "/proc", pid)) {
		exe[len] = 0;
		unwind_lib(exe, &l); /* known already: its DT_NEEDED are what is new */
		close(l.root_fd);
	}
}

/*
 * Keep pid stopped (ptrace, or hold: a BPF exec hold's id in tr->holds) until the tables
 * being built are loaded, at most UNWIND_EXEC_WAIT_MS (wide: _WIDE_MS) from the first of a
 * batch.  False when nothing is building (or no room): the caller resumes it now.
 */
static bool hold_for_tables(struct tracker *tr, uint32_t pid, uint64_t hold, int64_t deadline)
{
	struct held *held;

	if (!tr->unw || tr->holds_over)
		return false;
	unwinder__poll(tr->unw);
	if (!unwinder__pending(tr->unw))
		return false;
	if (tr->nheld == tr->held_cap) {
		size_t cap = tr->held_cap ? 2 * tr->held_cap : 8;

		held = realloc(tr->held, cap * sizeof(*held));
		if (!held)
			return false; /* not held: frame pointers until its tables load */
		tr->held = held;
		tr->held_cap = cap;
	}
	if (!tr->nheld)
		tr->held_deadline = clock__mono_ns() + (tr->opts.wide ? UNWIND_EXEC_WAIT_WIDE_MS
								      : UNWIND_EXEC_WAIT_MS) *
							       1000000LL;
	tr->held[tr->nheld++] = (struct held){.pid = pid, .hold = hold, .deadline = deadline};
	unwinder__set_urgent(tr->unw, true); /* its builds at our priority, not in the background */
	return true;
}

/*
 * A process of `-- CMD`'s tree is stopped at its exec, its new image not yet run: read its
 * mappings (executable, ld.so, vDSO) and queue the tables of the libraries ld.so will map.
 * True when it stays stopped until they are loaded (tracker__poll resumes it, at the latest
 * after UNWIND_EXEC_WAIT_MS): its first stacks are then complete.  Each file is built once, on
 * the worker: the event loop goes on meanwhile.
 */
bool tracker__exec_stop(struct tracker *tr, uint32_t pid)
{
	if (!tr->unw)
		return false;
	unwind_read(tr, pid, hashmap__find(tr->targets, &pid));
	hook_loader(tr, pid);
	prepare_image(tr, pid);
	return hold_for_tables(tr, pid, 0, 0);
}

void tracker__holds_over(struct tracker *tr)
{
	tr->holds_over = true;
	release_held(tr);
}

bool tracker__holding(struct tracker *tr)
{
	return tr->nheld != 0;
}

void tracker__process_exiting(struct tracker *tr, uint32_t pid)
{
	/* Its mappings are final and still readable: reload, then let queued events resolve,
	 * and wait for their stacks to be symbolized before it goes on exiting. */
	tracker__event_end(tr);
	fatal(tr, stackres__reload_pid(tr->stacks, pid, NULL));
	fatal(tr, stackres__python_names(tr->stacks, pid));
	/* Without a ring buffer (setting it up failed) there is nothing queued to resolve. */
	if (tr->events_started)
		while (loader__poll(tr->loader, 0) > 0)
			;
	fatal(tr, stackres__sync(tr->stacks));
}

int tracker__fork(struct tracker *tr, uint32_t pid, uint32_t ppid)
{
	int err;

	tracker__event_end(tr);
	err = tracker__track(tr, pid);

	if (!err && tr->owners)
		err = owners__fork(tr->owners, pid, ppid);
	if (err)
		return err;
	/* Same image as the parent until it execs: same mappings, same symbols. */
	sym_load(tr, pid, false);
	return procinfo__note(tr->procs, pid, pid);
}

int tracker__exec(struct tracker *tr, uint32_t pid, const char *comm)
{
	int err;

	tracker__event_end(tr);
	sym_load(tr, pid, true);
	unwind_read(tr, pid, hashmap__find(tr->targets, &pid));
	pr_debug("%u exec'd %s\n", pid, comm);
	err = stackres__exec(tr->stacks, pid);
	if (!err)
		err = procinfo__set_comm(tr->procs, pid, pid, comm);
	/* Wide scopes: its labels while it lives (a short life may end before its samples). */
	if (!err && tr->opts.wide)
		err = procinfo__note(tr->procs, pid, pid);
	if (err)
		return err;
	/* Wide scopes, whatever the modes: a new root, the new image's tables, allocators and
	 * exit hook.  Not held (no ptrace here): its libraries are being mapped as we read, its
	 * first calls may run before the probes are in. */
	if (tr->opts.wide) {
		err = tracker__discover_root(tr, pid);
		if (err)
			return err;
		prepare_image(tr, pid);
	}
	return 0;
}

int tracker__dlopen(struct tracker *tr, uint32_t pid, bool held)
{
	tracker__event_end(tr);
	/*
	 * A dlopen not held (a process on its otel_memory probes is not stopped at its dlopens):
	 * its maps are due for a re-read now, done at the end of this turn of the loop
	 * (tracker__poll: once for all the dlopens of the turn; `import torch` makes 300), so
	 * that the new library's table is built at once.  Left to the walker's first miss, it
	 * waited behind the re-reads' rate limit (UNWIND_REREAD_QUICK per UNWIND_REREAD_NS), and a
	 * sampled Python's stacks through `_json` were cut meanwhile (about 240 of 1,400 in a 1 s
	 * run).  The symbolizer loads the new files then too, on its thread: left to the process's
	 * exit hold, `import torch`'s 300 libraries were read there, while the process waited
	 * (110 ms of a `-- CMD` exit: docs/benchmarks.md).  A held one is read by its release.
	 */
	if (!tr->opts.wide) {
		struct target *t = held || !tr->unw ? NULL : hashmap__find(tr->targets, &pid);

		if (t) {
			t->unwind_stale = 1;
			t->sym_stale = 1;
			t->unwind_read_ns = 0; /* due now, whatever the re-reads' rate limit */
			tr->unwind_stale = true;
		}
		return 0;
	}
	/* Wide scopes: read the maps while the process lives, however short its life. */
	pr_debug("%u: the dynamic loader changed its maps\n", pid);
	sym_load(tr, pid, false);
	unwind_read(tr, pid, hashmap__find(tr->targets, &pid));
	return 0;
}

/*
 * Resume pid, stopped for us at a hold (its exec, its loader's startup) — once the unwind tables
 * being built are loaded (at most UNWIND_EXEC_WAIT_WIDE_MS), so that its first stacks are
 * complete.
 */
static void held_resume(struct tracker *tr, const struct prof_proc_event *e)
{
	uint64_t hold;

	if (holds__take(tr->holds, &hold, e))
		return; /* killed meanwhile, or out of memory: resumed already */
	if (!tr->err && hold_for_tables(tr, e->pid, hold, 0))
		return;
	holds__resume(tr->holds, hold);
}

/*
 * A process stopped in a dlopen, its new objects mapped and their constructors not run
 * (PROF_PROC_DLOPEN_HELD): its maps read again (the new files' tables queued, the symbolizer
 * told) and it goes on once those tables are in, at most PROF_DL_HOLD_MS later.
 */
static void dlopen_held(struct tracker *tr, const struct prof_proc_event *e)
{
	uint64_t hold;

	if (holds__take(tr->holds, &hold, e))
		return; /* killed meanwhile, or out of memory: resumed already */
	tr->dlopen_holds++;
	if (!tr->err) {
		unwind_read(tr, e->pid, hashmap__find(tr->targets, &e->pid));
		sym_load(tr, e->pid, false);
	}
	if (!tr->err &&
	    hold_for_tables(tr, e->pid, hold, clock__mono_ns() + PROF_DL_HOLD_MS * 1000000LL))
		return;
	holds__resume(tr->holds, hold);
}

bool tracker__traced_sigstop(struct tracker *tr, uint32_t pid, uint32_t tid)
{
	/* Its hold's record was sent before the signal: consume it now. */
	if (tr->events_started)
		while (loader__poll(tr->loader, 0) > 0)
			;
	for (size_t i = 0; i < tr->nheld; i++) {
		struct held *h = &tr->held[i];

		if (h->pid == pid && h->hold && h->deadline && !h->tid) {
			h->tid = tid;
			return true;
		}
	}
	return false;
}

/*
 * A process stopped at the first exec of its executable (wide scopes, holds on) has had its new
 * image prepared by tracker__exec and the modes — allocator probes, exit and loader hooks,
 * runtime probes, unwind tables queued — before its first instruction: mark the executable done
 * (its later execs run unheld) and let it go once those tables are loaded (or after
 * UNWIND_EXEC_WAIT_WIDE_MS).
 */
static void exec_release(struct tracker *tr, const struct prof_proc_event *e)
{
	struct prof_exec_key *k;
	char path[64];
	struct stat st;

	if (loader__exec_seen(tr->loader, &e->exe))
		pr_debug("marking the executable of %u prepared failed\n", e->pid);
	/* The BPF's key by ours (they differ on overlayfs): forgotten with the image (owned_gone).
	 */
	snprintf(path, sizeof(path), "/proc/%u/exe", e->pid);
	if (!stat(path, &st) &&
	    !hashmap__upsert(tr->exec_keys, (void **)&k,
			     &(struct owners_key){(uint64_t)st.st_dev, (uint64_t)st.st_ino}, NULL))
		*k = e->exe;
	held_resume(tr, e);
}

void tracker__release(struct tracker *tr, const struct prof_proc_event *e)
{
	if (e->type == PROF_REC_PROC_EXEC && (e->flags & PROF_PROC_EXEC_HELD))
		exec_release(tr, e);
	if (e->type != PROF_REC_PROC_DLOPEN)
		return;
	/* Held at its loader's startup: its maps are read now, its probes attached. */
	if (e->flags & PROF_PROC_DL_HELD)
		held_resume(tr, e);
	if (e->flags & PROF_PROC_DLOPEN_HELD)
		dlopen_held(tr, e);
}

void tracker__group_exited(struct tracker *tr, uint32_t pid)
{
	struct target *t = hashmap__find(tr->targets, &pid);

	if (t)
		target_close(t);
	if (tr->unw)
		unwinder__remove_process(tr->unw, pid);
	py_watch__gone(tr->loader, pid);
	if (tr->owners) {
		owners__release(tr->owners, pid);
		tr->owners_released = true;
	}
}

/* On the symbolizer's thread: the held process goes on exiting (unless the hold's time
 * limit resumed it already). */
static void exit_resume(void *ctx, uint64_t hold)
{
	struct tracker *tr = ctx;

	holds__resume(tr->holds, hold);
}

/*
 * A process stopped itself (BPF sent SIGSTOP) in _exit: every record it sent came before this
 * one and was consumed while it lived.  Its maps are read once more (what symbolizes records
 * still to come from its last moments) and, once its stacks are symbolized, it goes on exiting
 * (at the latest after HOLDS_MAX_MS).
 */
void tracker__exit_hold(struct tracker *tr, const struct prof_proc_event *e)
{
	uint64_t hold;

	tracker__event_end(tr);
	if (holds__take(tr->holds, &hold, e))
		return; /* killed meanwhile, or out of memory: resumed already */
	if (tr->err || stackres__load_pid(tr->stacks, e->pid, NULL) ||
	    stackres__python_names(tr->stacks, e->pid) ||
	    stackres__after(tr->stacks, exit_resume, tr, hold))
		holds__resume(tr->holds, hold); /* never left stopped */
}

void tracker__forget(struct tracker *tr, uint32_t pid)
{
	struct target *t = hashmap__find(tr->targets, &pid);

	if (!t)
		return;
	target_close(t);
	hashmap__delete(tr->targets, &pid);
}

/* Nothing in scope keeps key any more: a file's probes go, a root or executable is probed
 * afresh when a process runs in it again. */
static void owned_gone(void *ctx, enum owners_kind kind, const struct owners_key *key)
{
	struct tracker *tr = ctx;
	const struct prof_exec_key *k;

	if (kind == OWNERS_FILE && tr->loader)
		loader__detach_file(tr->loader, key->dev, key->ino);
	else if (kind != OWNERS_FILE)
		hashmap__delete(kind == OWNERS_ROOT ? tr->roots : tr->prepared, key);
	/* An executable no process runs: its next first exec is held and prepared again. */
	k = kind == OWNERS_IMAGE ? hashmap__find(tr->exec_keys, key) : NULL;
	if (k) {
		if (tr->loader)
			loader__exec_forget(tr->loader, k);
		hashmap__delete(tr->exec_keys, key);
	}
}

int tracker__tick(struct tracker *tr)
{
	/* The probes of files no process in scope maps any more go (docs/continuous.md: Probes
	 * go with the last process that maps their file), whatever the output. */
	if (!tr->owners_released)
		return 0;
	tr->owners_released = false;
	return owners__sweep(tr->owners, owned_gone, tr) == -ENOMEM ? fatal(tr, -ENOMEM) : 0;
}

/*
 * A pidfd polls readable once its whole thread group has exited (a leader that called
 * pthread_exit is not that), and it never follows the pid to another process.
 */
bool tracker__any_alive(struct tracker *tr)
{
	struct pollfd pfd = {.events = POLLIN};
	struct target *t;
	size_t it = 0;
	bool any = false;

	while (hashmap__next(tr->targets, &it, NULL, (void **)&t)) {
		if (!t->alive)
			continue;
		pfd.fd = t->pidfd;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			target_close(t);
		else
			any = true;
	}
	return any;
}

void tracker__signal_all(struct tracker *tr, int sig)
{
	const uint32_t *pid;
	struct target *t;
	size_t it = 0;
	int err;

	while (hashmap__next(tr->targets, &it, (const void **)&pid, (void **)&t))
		if (t->alive && (err = pidfd__signal(t->pidfd, sig)) && err != -ESRCH)
			pr_debug("signal %d to %u: %s\n", sig, *pid, strerror(-err));
}

void tracker__each_alive(struct tracker *tr, void (*fn)(void *ctx, uint32_t pid), void *ctx)
{
	const uint32_t *pid;
	struct target *t;
	size_t it = 0;

	while (hashmap__next(tr->targets, &it, (const void **)&pid, (void **)&t))
		if (t->alive)
			fn(ctx, *pid);
}

void tracker__hold_stats(struct tracker *tr, uint64_t *timeouts, uint64_t *gone)
{
	struct holds_stats st = holds__stats(tr->holds, false);

	*timeouts = st.timeouts;
	*gone = st.gone;
}

void tracker__dlopen_stats(struct tracker *tr, uint64_t *holds, uint64_t *timeouts)
{
	*holds = tr->dlopen_holds;
	*timeouts = tr->dlopen_hold_timeouts;
}

void tracker__new_interval(struct tracker *tr)
{
	tr->dlopen_holds = 0;
	tr->dlopen_hold_timeouts = 0;
	holds__stats(tr->holds, true);
}

const struct unwinder_stats *tracker__unwinder_stats(struct tracker *tr)
{
	return tr->unw ? unwinder__stats(tr->unw) : NULL;
}

const char *tracker__unwinder_failed(struct tracker *tr)
{
	return tr->unw ? unwinder__build_failed(tr->unw) : NULL;
}
