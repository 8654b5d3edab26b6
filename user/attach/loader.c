// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/loader.h"
#include "attach/loader_priv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "proc/safe_open.h"
#include "sym/elf_dynsym.h"
#include "util/clock.h"
#include "util/hashmap.h"
#include "uprobe_multi.h"
#include "util/log.h"
#include "prof_heap.h"
#include "prof_unwind.h"

static const char *const shared_names[SHARED__COUNT] = {
	[SHARED_TARGETS] = "prof_targets",
	[SHARED_COUNTERS] = "prof_counters",
	[SHARED_EVENTS] = "prof_events",
	[SHARED_UNWIND_TABLES] = "prof_unwind_tables",
	[SHARED_UNWIND_PROCS] = "prof_unwind_procs",
	[SHARED_UNWIND_ASKED] = "prof_unwind_asked",
	[SHARED_UNWIND_FILES] = "prof_unwind_files",
	[SHARED_SCOPE_CGROUP] = "prof_scope_cgroup",
	[SHARED_SCOPE_BORN] = "prof_scope_born",
	[SHARED_OTEL_PROCS] = "prof_otel_procs",
	[SHARED_SAMPLED_PROCS] = "prof_sampled_procs",
};

int loader__keep_link(struct loader *l, struct bpf_link *link)
{
	return loader__links_push(&l->links, &l->nlinks, &l->cap, 32, link);
}

/* The ring buffer's size: --ring-buffer's, or a quarter MiB per CPU (prof_ringbuf_default). */
uint32_t loader__ring_bytes(const struct loader_opts *o)
{
	return o->ring_bytes ? o->ring_bytes : prof_ringbuf_default(libbpf_num_possible_cpus());
}

/* How much queued wakes the consumer (bpf/events.bpf.h). */
static uint64_t wakeup_bytes(const struct loader_opts *o)
{
	uint64_t w = loader__ring_bytes(o) >> PROF_WAKEUP_SHIFT;

	return w < PROF_WAKEUP_MAX ? w : PROF_WAKEUP_MAX;
}

/* Map sizes, set between open and load: the limits in include/, or 1 entry for a map this run
 * does not use (a hash map's entries are allocated at creation). */
static int size_maps(const struct loader *l, struct bpf_object *obj)
{
	const struct {
		const char *name;
		uint32_t entries;
	} sizes[] = {
		{"prof_events", loader__ring_bytes(&l->opts)},
		{"prof_sampled", l->opts.sample_bytes ? PROF_SAMPLED_ENTRIES : 1},
		/* --unwind fp walks frame pointers in the kernel: no tables, no mappings. */
		{"prof_unwind_tables", l->opts.unwind_fp ? 1 : PROF_UNWIND_TABLES},
		{"prof_unwind_procs", l->opts.unwind_fp ? 1 : PROF_MAX_TARGETS},
		{"prof_unwind_asked", l->opts.unwind_fp ? 1 : PROF_UNWIND_ASKED_ENTRIES},
		{"prof_unwind_files", l->opts.unwind_fp ? 1 : PROF_UNWIND_FILES},
		{"prof_walk_cache", l->opts.unwind_fp ? 1 : l->opts.walk.walk_cache_mask + 1},
		{"__bpf_usdt_specs", PROF_USDT_SPEC_ENTRIES},
		{"prof_exec_seen", l->opts.hold_execs ? PROF_EXEC_SEEN_ENTRIES : 1},
		{"prof_dl_pending", l->opts.hold_execs ? PROF_DL_PENDING_ENTRIES : 1},
		{"prof_held", l->opts.hold_execs || l->opts.hold_dlopen ? PROF_HELD_ENTRIES : 1},
		{"prof_dl_state", l->opts.hold_dlopen ? PROF_DL_STATE_ENTRIES : 1},
		{"prof_hold_rate_map", l->opts.hold_execs ? PROF_HOLD_RATE_ENTRIES : 1},
		{"prof_scope_born",
		 l->opts.heap && l->opts.scope == PROF_SCOPE_CGROUP ? PROF_MAX_TARGETS : 1},
		{"prof_otel_procs", l->opts.heap ? PROF_MAX_TARGETS : 1},
		{"prof_sampled_procs", l->opts.heap && l->opts.sample_bytes ? PROF_MAX_TARGETS : 1},
	};
	struct bpf_map *map;
	int err;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		map = bpf_object__find_map_by_name(obj, sizes[i].name);
		if (!map)
			continue;
		err = bpf_map__set_max_entries(map, sizes[i].entries);
		if (err) {
			pr_err("sizing map %s failed: %s\n", sizes[i].name, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Before load: obj's copies of shared maps that exist already use their fds. */
static int share_maps(const struct loader *l, struct bpf_object *obj)
{
	for (int i = 0; i < SHARED__COUNT; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, shared_names[i]);
		int err;

		if (!map || l->shared_fd[i] < 0)
			continue;
		err = bpf_map__reuse_fd(map, l->shared_fd[i]);
		if (err) {
			pr_err("sharing map %s failed: %s\n", shared_names[i], strerror(-err));
			return err;
		}
	}
	return 0;
}

/* After load: shared maps obj created are the ones later objects reuse. */
static void adopt_maps(struct loader *l, struct bpf_object *obj)
{
	for (int i = 0; i < SHARED__COUNT; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, shared_names[i]);

		if (map && l->shared_fd[i] < 0)
			l->shared_fd[i] = bpf_map__fd(map);
	}
}

static int prepare(struct loader *l, struct bpf_object *obj)
{
	int err = size_maps(l, obj);

	return err ? err : share_maps(l, obj);
}

static int load_failed(const char *what, int err)
{
	if (err == -EPERM || err == -EACCES)
		pr_err("loading the %s BPF programs was refused (%s): needs root or "
		       "CAP_BPF+CAP_PERFMON: run with sudo\n",
		       what, strerror(-err));
	else
		pr_err("the kernel refused the %s BPF programs: %s (run with -vvv for the verifier "
		       "log)\n",
		       what, strerror(-err));
	return err;
}

/* The --sample-bytes interval table: exponential with the given mean. */
static int fill_intervals(int map_fd, uint64_t mean)
{
	/*
	 * The exponential's quantiles at the cell midpoints, not random draws: BPF picks a random
	 * cell, so intervals are still random and exponential, but the table itself carries no
	 * sampling error that every allocation of the run would share.
	 */
	for (uint32_t i = 0; i < PROF_SAMPLE_TABLE; i++) {
		double u = ((double)i + 0.5) / PROF_SAMPLE_TABLE;
		uint64_t v = (uint64_t)(-log1p(-u) * (double)mean) + 1;

		if (bpf_map_update_elem(map_fd, &i, &v, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* Every skeleton filters on the same scope (bpf/common.bpf.h) and writes the same ring. */
#define SET_SCOPE(l, skel)                                                    \
	do {                                                                  \
		(skel)->rodata->prof_scope = (l)->opts.scope;                 \
		(skel)->rodata->prof_self_tgid = (__u32)getpid();             \
		(skel)->rodata->prof_wakeup_bytes = wakeup_bytes(&(l)->opts); \
	} while (0)

/*
 * Session or uprobe_multi links serve every file: the per-function programs, which only a
 * refused file needs, are not loaded with the others (their verification took 0.15 s of
 * the 0.91 s --heap -- /bin/true took to start) but at the first refusal
 * (loader__heap_progs_fallback).
 */
static void heap_per_function_later(struct loader *l)
{
	bpf_program__set_autoload(l->heap->progs.heap_enter, false);
	bpf_program__set_autoload(l->heap->progs.heap_return, false);
	bpf_program__set_autoload(l->heap->progs.heap_free, false);
}

/* Sampled heap probes as uprobe sessions where the kernel has them: an unsampled call skips
 * its return probe.  Not for exact mode (every return is needed), nor where no allocator
 * probe is attached (heap_otel_only). */
static int choose_heap_session(struct loader *l)
{
	struct bpf_program *prog = l->heap->progs.heap_session;
	bool session = false, multi = false;
	int err;

	l->session_fault = getenv("BPFTRACE_PROF_FAULT_SESSION");
	if (l->opts.heap_otel_only || uprobe_multi__supported(&session, &multi))
		return 0;
	if (l->opts.heap_sessions && l->opts.sample_bytes && session) {
		err = uprobe_multi__set_type(prog, true);
		if (err)
			return load_failed("heap", err);
		bpf_program__set_autoload(prog, true);
		l->heap_session = true;
		heap_per_function_later(l);
		return 0;
	}
	/* Else uprobe_multi links (Linux 6.6), three per file: detached in one grace period each,
	 * not one per function.  The per-function programs stay loaded for refused files. */
	if (l->opts.heap_multi && multi) {
		struct bpf_program *twins[] = {l->heap->progs.heap_enter_multi,
					       l->heap->progs.heap_return_multi,
					       l->heap->progs.heap_free_multi};

		for (size_t i = 0; i < sizeof(twins) / sizeof(twins[0]); i++) {
			err = uprobe_multi__set_type(twins[i], false);
			if (err)
				return load_failed("heap", err);
			bpf_program__set_autoload(twins[i], true);
		}
		l->heap_multi = true;
		heap_per_function_later(l);
		return 0;
	}
	return 0;
}

static int open_heap(struct loader *l)
{
	const char *share;
	unsigned long n;
	int err;

	l->heap = heap_bpf__open();
	if (!l->heap)
		return load_failed("heap", -errno);
	l->heap->rodata->sample_bytes = l->opts.sample_bytes;
	l->heap->rodata->heap_fine_ts = l->opts.heap_fine_ts;
	/* A process's share of prof_sampled, 256 Ki, is too many for a test to fill: the
	 * environment lowers it (tests/e2e/test_caps.sh; the man page says it is for tests). */
	share = getenv("BPFTRACE_PROF_SAMPLED_SHARE");
	n = share ? strtoul(share, NULL, 10) : 0;
	if (n)
		l->heap->rodata->sampled_share = (__s64)n;
	/* Wide scopes probe files for every process: BPF filters by scope. */
	l->heap->rodata->pid_filtered =
		!l->opts.follow_children && l->opts.scope == PROF_SCOPE_PIDS;
	l->heap->rodata->prof_walk = l->opts.walk;
	SET_SCOPE(l, l->heap);
	err = choose_heap_session(l);
	if (err)
		return err;
	/* Exact mode: code objects cached per CPU in Python processes (attach/py_watch.c). */
	bpf_program__set_autoload(l->heap->progs.heap_py_code_dealloc, !l->opts.sample_bytes);
	/* The otel_memory programs, where some process may have no sampler of ours: loaded when a
	 * file with the probes is first met (loader__heap_progs_otel; 0.12 s of --heap's start).
	 */
	if (!l->opts.heap_otel_only) {
		bpf_program__set_autoload(l->heap->progs.otel_alloc, false);
		bpf_program__set_autoload(l->heap->progs.otel_free, false);
		bpf_program__set_autoload(l->heap->progs.otel_lost, false);
	}
	err = prepare(l, l->heap->obj);
	if (err)
		return err;
	err = heap_bpf__load(l->heap);
	if (err)
		return load_failed("heap", err);
	adopt_maps(l, l->heap->obj);
	if (l->opts.sample_bytes)
		return fill_intervals(bpf_map__fd(l->heap->maps.prof_sample_intervals),
				      l->opts.sample_bytes);
	return 0;
}

static int open_cpu(struct loader *l)
{
	int err;

	l->cpu = cpu_bpf__open();
	if (!l->cpu)
		return load_failed("cpu", -errno);
	l->cpu->rodata->prof_walk = l->opts.walk;
	SET_SCOPE(l, l->cpu);
	err = prepare(l, l->cpu->obj);
	if (err)
		return err;
	err = cpu_bpf__load(l->cpu);
	if (err)
		return load_failed("cpu", err);
	adopt_maps(l, l->cpu->obj);
	return 0;
}

int loader__attach_cpu(struct loader *l)
{
	int ncpu = libbpf_num_possible_cpus(), attached = 0;
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = l->opts.cpu_hz,
		.freq = 1,
	};

	if (ncpu < 0)
		return ncpu;
	l->perf_fds = calloc(ncpu, sizeof(int));
	if (!l->perf_fds)
		return -ENOMEM;
	/* Every possible CPU: offline ones refuse (ENODEV) and are skipped. */
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct bpf_link *link;
		int fd, err;

		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue;
			err = -errno;
			pr_err("perf_event_open on CPU %d failed: %s\n", cpu, strerror(-err));
			return err;
		}
		l->perf_fds[l->nperf++] = fd;
		link = bpf_program__attach_perf_event(l->cpu->progs.cpu_sample, fd);
		if (!link) {
			err = -errno;
			pr_err("attaching the CPU sampler on CPU %d failed: %s\n", cpu,
			       strerror(-err));
			return err;
		}
		err = loader__keep_link(l, link);
		if (err)
			return err;
		attached++;
	}
	return attached ? 0 : -ENODEV;
}

void loader__stop_cpu(struct loader *l)
{
	for (int i = 0; i < l->nperf; i++)
		ioctl(l->perf_fds[i], PERF_EVENT_IOC_DISABLE, 0);
}

static int open_dump(struct loader *l)
{
	int err;

	l->dump = dump_bpf__open();
	if (!l->dump)
		return load_failed("dump", -errno);
	l->dump->rodata->prof_wakeup_bytes = wakeup_bytes(&l->opts);
	err = prepare(l, l->dump->obj);
	if (err)
		return err;
	err = dump_bpf__load(l->dump);
	if (err)
		return load_failed("dump", err);
	adopt_maps(l, l->dump->obj);
	return 0;
}

int loader__dump(struct loader *l, uint32_t pid)
{
	union bpf_iter_link_info info = {.task.pid = pid};
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
	struct bpf_link *link;
	char buf[64];
	ssize_t n;
	int fd, err = 0;

	if (!l->dump)
		return -ENOENT;
	link = bpf_program__attach_iter(l->dump->progs.dump_task, &opts);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	/* The program writes the ring buffer, not the file: reading runs it over every thread. */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		err = -errno;
	close(fd);
cleanup:
	bpf_link__destroy(link);
	return err;
}

static int open_offcpu(struct loader *l)
{
	int err;

	l->offcpu = offcpu_bpf__open();
	if (!l->offcpu)
		return load_failed("offcpu", -errno);
	l->offcpu->rodata->prof_walk = l->opts.walk;
	l->offcpu->rodata->deep_room = !getenv("BPFTRACE_PROF_OFFCPU_NO_DEEP"); /* tests */
	SET_SCOPE(l, l->offcpu);
	err = prepare(l, l->offcpu->obj);
	if (err)
		return err;
	err = offcpu_bpf__load(l->offcpu);
	if (err)
		return load_failed("offcpu", err);
	adopt_maps(l, l->offcpu->obj);
	return 0;
}

int loader__attach_offcpu(struct loader *l)
{
	struct bpf_link *link;

	if (!l->offcpu)
		return -ENOENT;
	link = bpf_program__attach(l->offcpu->progs.offcpu_switch);
	if (!link)
		return -errno;
	l->offcpu->links.offcpu_switch = link; /* the skeleton destroys it */
	return 0;
}

void loader__stop_offcpu(struct loader *l)
{
	if (!l->offcpu)
		return;
	bpf_link__destroy(l->offcpu->links.offcpu_switch);
	l->offcpu->links.offcpu_switch = NULL;
}

int loader__offcpu_fd(struct loader *l, bool deep)
{
	struct offcpu_bpf *o = l->offcpu;

	return o ? bpf_map__fd(deep ? o->maps.prof_offcpu_deep : o->maps.prof_offcpu_start) : -1;
}

static int open_calls(struct loader *l)
{
	int err;

	l->calls = calls_bpf__open();
	if (!l->calls)
		return load_failed("calls", -errno);
	SET_SCOPE(l, l->calls);
	err = prepare(l, l->calls->obj);
	if (err)
		return err;
	err = calls_bpf__load(l->calls);
	if (err)
		return load_failed("calls", err);
	adopt_maps(l, l->calls->obj);
	/* The threads' on-CPU clocks run before the first probe is attached. */
	l->calls->links.calls_switch = bpf_program__attach(l->calls->progs.calls_switch);
	if (!l->calls->links.calls_switch)
		return load_failed("calls", -errno);
	return 0;
}

/*
 * The dlopen hold's cookie for ld.so open as fd: the offset from _dl_debug_state to
 * _r_debug.r_state (both in this file, so the program finds r_state from the probe's pc in any
 * process), or 0 when either is missing (the hook then only reports, never holds).
 */
static uint64_t dl_state_cookie(int fd)
{
	uint64_t fn = elf_dynsym__value(fd, "_dl_debug_state"),
		 rd = elf_dynsym__value(fd, "_r_debug");

	return fn && rd ? rd + PROF_R_DEBUG_STATE_OFF - fn : 0;
}

int loader__attach_hook(struct loader *l, enum loader_hook hook, int fd, const char *name)
{
	bool dl = hook == LOADER_HOOK_DL;
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = dl ? "_dl_debug_state" : "_exit");
	struct loader_attach_key key = {
		.pid = -1, .kind = dl ? LOADER_ATTACH_DL_HOOK : LOADER_ATTACH_EXIT_HOOK};
	struct bpf_program *prog =
		dl ? l->proc->progs.proc_dl_state : l->proc->progs.proc_exit_hold;
	struct bpf_link *link;
	char at[64];
	struct stat st;
	int32_t *done;
	bool created;
	int err;

	if (fstat(fd, &st))
		return -errno;
	key.dev = st.st_dev;
	key.ino = st.st_ino;
	err = loader__attached(l, &key, &done, &created);
	if (err || !created)
		return err ? err : *done;
	safe_open__fd_path(at, sizeof(at), fd);
	if (dl && l->opts.hold_dlopen)
		opts.bpf_cookie = dl_state_cookie(fd);
	link = bpf_program__attach_uprobe_opts(prog, -1, at, 0, &opts);
	if (!link) {
		pr_debug("no %s hook in %s: %s\n", opts.func_name, name, strerror(errno));
		return 0; /* stays 0 in the set: not tried again */
	}
	pr_info("%s through %s\n", dl ? "watching dlopen()" : "holding exits for their symbols",
		name);
	err = loader__attached_link(l, &key, link);
	if (err)
		return err;
	if (!loader__attached(l, &key, &done, &created))
		*done = 1;
	return 1;
}

struct bpf_program *loader__calls_prog(struct loader *l, enum prof_runtime rt, bool ret)
{
	if (!l->calls)
		return NULL;
	switch (rt) {
	case PROF_RT_PYTHON:
		return ret ? l->calls->progs.python_return : l->calls->progs.python_entry;
	case PROF_RT_RUBY:
		return ret ? l->calls->progs.ruby_return : l->calls->progs.ruby_entry;
	case PROF_RT_PHP:
		return ret ? l->calls->progs.php_return : l->calls->progs.php_entry;
	case PROF_RT_JAVA:
		return ret ? l->calls->progs.java_return : l->calls->progs.java_entry;
	default:
		return NULL;
	}
}

struct bpf_program *loader__marker_prog(struct loader *l, enum prof_marker_kind kind)
{
	if (!l->calls)
		return NULL;
	switch (kind) {
	case PROF_MARK_EXC_THROWN:
		return l->calls->progs.php_exc_thrown;
	case PROF_MARK_EXC_CAUGHT:
		return l->calls->progs.php_exc_caught;
	case PROF_MARK_ERROR:
		return l->calls->progs.php_error;
	case PROF_MARK_IMPORT_START:
		return l->calls->progs.python_import_start;
	case PROF_MARK_IMPORT_DONE:
		return l->calls->progs.python_import_done;
	case PROF_MARK_CLASS_LOAD:
		return l->calls->progs.java_class_loaded;
	default:
		return NULL;
	}
}

int loader__unwind_fds(struct loader *l, struct loader_unwind_fds *out)
{
	out->procs = l->shared_fd[SHARED_UNWIND_PROCS];
	out->tables = l->shared_fd[SHARED_UNWIND_TABLES];
	out->asked = l->shared_fd[SHARED_UNWIND_ASKED];
	out->files = l->shared_fd[SHARED_UNWIND_FILES];
	return out->procs >= 0 && out->tables >= 0 && out->asked >= 0 && out->files >= 0 ? 0
											 : -ENOENT;
}

int loader__open(struct loader **out, const struct loader_opts *opts)
{
	struct loader *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	l->opts = *opts;
	/* The heap walker's cache of whole walks (include/prof_stack.h). */
	l->opts.walk.walk_cache_mask = prof_walk_cache_slots(libbpf_num_possible_cpus()) - 1;
	for (int i = 0; i < SHARED__COUNT; i++)
		l->shared_fd[i] = -1;
	err = hashmap__new(&l->attached, sizeof(struct loader_attach_key), sizeof(struct attached));
	if (err)
		goto cleanup;

	/* The proc object is always loaded first: its maps become the shared ones. */
	l->proc = proc_bpf__open();
	if (!l->proc) {
		err = load_failed("process-tracking", -errno);
		goto cleanup;
	}
	l->proc->rodata->follow_children = opts->follow_children;
	l->proc->rodata->prof_hold_execs = opts->hold_execs;
	l->proc->rodata->prof_hold_rate = opts->hold_rate;
	l->proc->rodata->prof_hold_dlopen = opts->hold_dlopen;
	l->proc->rodata->prof_hold_traced = opts->hold_traced;
	l->proc->rodata->prof_dlopen_skip_otel = opts->dlopen_skip_otel;
	SET_SCOPE(l, l->proc);
	err = size_maps(l, l->proc->obj);
	if (err)
		goto cleanup;
	err = proc_bpf__load(l->proc);
	if (err) {
		err = load_failed("process-tracking", err);
		goto cleanup;
	}
	adopt_maps(l, l->proc->obj);
	if (opts->scope == PROF_SCOPE_CGROUP) {
		uint32_t zero = 0, fd = (uint32_t)opts->scope_cgroup_fd;

		if (bpf_map_update_elem(l->shared_fd[SHARED_SCOPE_CGROUP], &zero, &fd, BPF_ANY)) {
			err = -errno;
			pr_err("setting the cgroup to profile failed: %s\n", strerror(-err));
			goto cleanup;
		}
	}
	err = proc_bpf__attach(l->proc);
	if (err) {
		pr_err("attaching the process-lifecycle tracepoints failed: %s\n", strerror(-err));
		goto cleanup;
	}

	if (opts->heap) {
		err = open_heap(l);
		if (err)
			goto cleanup;
	}
	if (opts->cpu) {
		err = open_cpu(l);
		if (err)
			goto cleanup;
	}
	if (opts->offcpu) {
		err = open_offcpu(l);
		if (err)
			goto cleanup;
	}
	if (opts->calls) {
		err = open_calls(l);
		if (err)
			goto cleanup;
	}
	if (opts->dump) {
		err = open_dump(l);
		if (err)
			goto cleanup;
	}
	*out = l;
	return 0;
cleanup:
	loader__free(l);
	return err;
}

void loader__free(struct loader *l)
{
	struct attached *a;
	size_t it = 0;

	if (!l)
		return;
	ring__free(l->rb);
	while (l->attached && hashmap__next(l->attached, &it, NULL, (void **)&a))
		loader__destroy_links(l, a);
	for (size_t i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	free(l->links);
	for (int i = 0; i < l->nperf; i++)
		close(l->perf_fds[i]);
	free(l->perf_fds);
	cpu_bpf__destroy(l->cpu);
	offcpu_bpf__destroy(l->offcpu);
	calls_bpf__destroy(l->calls);
	dump_bpf__destroy(l->dump);
	heap_bpf__destroy(l->heap_fallback);
	heap_bpf__destroy(l->heap_otel);
	heap_bpf__destroy(l->heap);
	proc_bpf__destroy(l->proc);
	hashmap__free(l->attached);
	free(l);
}

int loader__add_target(struct loader *l, uint32_t pid)
{
	__u8 one = 1;

	if (bpf_map_update_elem(l->shared_fd[SHARED_TARGETS], &pid, &one, BPF_ANY))
		return -errno;
	return 0;
}

int loader__has_target(struct loader *l, uint32_t pid)
{
	__u8 v;

	if (!bpf_map_lookup_elem(l->shared_fd[SHARED_TARGETS], &pid, &v))
		return 1;
	return errno == ENOENT ? 0 : -errno;
}

/* The gate is armed again this often while records are taken (on_record). */
#define GATE_REARM_NS (50 * 1000000ULL)
/* How long a BPF object's load may take past the gate's span (gate_busy). */
#define GATE_LOAD_NS  (2000 * 1000000ULL)

static void gate_set(struct loader *l, uint64_t until_ns)
{
	uint32_t zero = 0;

	bpf_map_update_elem(bpf_map__fd(l->proc->maps.prof_hold_gate), &zero, &until_ns, BPF_ANY);
}

/*
 * The hold gate kept open while the consumer works: before and after each record, and across a
 * BPF object loaded on the way (a record that meets the first file with otel_memory probes
 * loads their programs: 0.1 s on one VM, 0.67 s on a slower one).  Armed only at each turn of
 * the loop, a record that took past the gate's span (a loader report handled late, then that
 * load) refused the holds asked meanwhile (dlopen_hold_fail): a preloaded library's
 * constructor then ran before its maps were read (t_otel_preloaded_library_report_late failed
 * 2 to 9 runs in 12 on the slower VM).  A consumer stuck for good arms nothing: the gate closes
 * after its span as before.  (Our probes go with our files: a profiler that dies mid-load holds
 * nothing more, whatever the gate says.)
 */
static void gate_arm(struct loader *l, uint64_t extra_ns)
{
	uint64_t now = (uint64_t)clock__mono_ns();

	l->gate_armed_ns = now;
	gate_set(l, now + PROF_HOLD_GATE_NS + extra_ns);
}

static void gate_keepalive(struct loader *l)
{
	if (l->gate_open && (uint64_t)clock__mono_ns() - l->gate_armed_ns >= GATE_REARM_NS)
		gate_arm(l, 0);
}

/* About to block in one call for up to extra_ns (a BPF object's load): the gate stays open
 * past it, and a hold asked meanwhile is read when the call returns. */
static void gate_busy(struct loader *l, uint64_t extra_ns)
{
	if (l->gate_open)
		gate_arm(l, extra_ns);
}

/* A record that may take long (probes attached, maps read): the gate armed around it.  Others
 * (heap, CPU, calls: millions a second) look at the clock once in 64. */
static bool slow_record(const void *data, size_t size)
{
	uint32_t type;

	if (size < sizeof(type))
		return false;
	memcpy(&type, data, sizeof(type));
	return type == PROF_REC_PROC_FORK || type == PROF_REC_PROC_EXEC ||
	       type == PROF_REC_PROC_DLOPEN;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct loader *l = ctx;
	bool slow = slow_record(data, size);
	int err;

	if (slow)
		gate_keepalive(l);
	err = l->record_fn(l->record_ctx, data, size);
	if (slow || !(++l->gate_records & 63))
		gate_keepalive(l);
	return err;
}

int loader__start_events(struct loader *l, ring_record_fn fn, void *ctx)
{
	int err = 0;

	l->record_fn = fn;
	l->record_ctx = ctx;
	l->rb = ring__open(l->shared_fd[SHARED_EVENTS], on_record, l, 0);
	if (!l->rb)
		return -errno;
	if (l->opts.backlog_bytes)
		err = ring__backlog(l->rb, l->opts.backlog_bytes);
	if (err) /* the ring is then read as before */
		pr_warn("records read without a backlog: %s\n", strerror(-err));
	return 0;
}

int loader__poll(struct loader *l, int timeout_ms)
{
	if (!l->rb)
		return 0; /* not open yet (a run that stopped before its events started) */
	/* Producers wake us only per batch (see prof_wakeup_flags); drain on the timer too. */
	return ring__poll(l->rb, timeout_ms);
}

struct ring_backlog_stats loader__backlog_stats(struct loader *l)
{
	return ring__backlog_stats(l->rb);
}

int loader__counters(struct loader *l, uint64_t out[PROF_CNT__COUNT])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals;

	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < PROF_CNT__COUNT; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(l->shared_fd[SHARED_COUNTERS], &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

void loader__hold_gate(struct loader *l, bool open)
{
	l->gate_open = open;
	if (open)
		gate_arm(l, 0);
	else
		gate_set(l, 0);
}

int loader__held_map_fd(struct loader *l)
{
	return bpf_map__fd(l->proc->maps.prof_held);
}

struct bpf_program *loader__oom_prog(struct loader *l)
{
	return l->proc->progs.proc_oom_victim;
}

int loader__exec_seen(struct loader *l, const struct prof_exec_key *key)
{
	__u8 one = 1;

	if (bpf_map_update_elem(bpf_map__fd(l->proc->maps.prof_exec_seen), key, &one, BPF_ANY))
		return -errno;
	return 0;
}

void loader__scope_found(struct loader *l, uint32_t pid)
{
	__u8 one = 1;

	/* Full (LRU): the oldest entry goes; only --heap in a cgroup scope has the map. */
	if (l && l->shared_fd[SHARED_SCOPE_BORN] >= 0 && l->opts.heap &&
	    l->opts.scope == PROF_SCOPE_CGROUP)
		bpf_map_update_elem(l->shared_fd[SHARED_SCOPE_BORN], &pid, &one, BPF_ANY);
}

void loader__exec_forget(struct loader *l, const struct prof_exec_key *key)
{
	bpf_map_delete_elem(bpf_map__fd(l->proc->maps.prof_exec_seen), key);
}

int loader__sampled_fd(struct loader *l)
{
	return l && l->heap && l->opts.sample_bytes ? bpf_map__fd(l->heap->maps.prof_sampled) : -1;
}

int loader__heap_progs(struct loader *l, struct loader_heap_progs *out)
{
	if (!l->heap)
		return -ENOENT;
	out->enter = l->heap->progs.heap_enter;
	out->ret = l->heap->progs.heap_return;
	out->free_ = l->heap->progs.heap_free;
	out->otel_alloc = l->heap->progs.otel_alloc;
	out->otel_free = l->heap->progs.otel_free;
	out->otel_lost = l->heap->progs.otel_lost;
	return 0;
}

/*
 * A second instance of the heap object with only some of its programs (the per-function ones, or
 * the otel_memory USDTs'), every map the first one's (its read-only data too: the verifier sees
 * the same settings; the USDT specs: only this instance attaches USDTs).
 */
static int load_heap_extra(struct loader *l, bool otel, struct heap_bpf **out)
{
	struct heap_bpf *x = heap_bpf__open();
	struct bpf_program *prog;
	struct bpf_map *map;
	int err = 0;

	if (!x)
		return load_failed("heap", -errno);
	for (prog = bpf_object__next_program(x->obj, NULL); prog;
	     prog = bpf_object__next_program(x->obj, prog))
		bpf_program__set_autoload(
			prog, otel ? prog == x->progs.otel_alloc || prog == x->progs.otel_free ||
					      prog == x->progs.otel_lost
				   : prog == x->progs.heap_enter || prog == x->progs.heap_return ||
					      prog == x->progs.heap_free);
	for (map = bpf_object__next_map(x->obj, NULL); map && !err;
	     map = bpf_object__next_map(x->obj, map)) {
		const struct bpf_map *mine =
			bpf_object__find_map_by_name(l->heap->obj, bpf_map__name(map));

		err = mine ? bpf_map__reuse_fd(map, bpf_map__fd(mine)) : -ENOENT;
	}
	if (!err) {
		gate_busy(l, GATE_LOAD_NS);
		err = heap_bpf__load(x);
	}
	gate_keepalive(l);
	if (err) {
		heap_bpf__destroy(x);
		return load_failed("heap", err);
	}
	*out = x;
	return 0;
}

/* loader__heap_progs, with the per-function or the otel_memory programs from an instance of
 * their own where the first one left them out. */
static int heap_progs_extra(struct loader *l, struct loader_heap_progs *out, bool otel)
{
	struct heap_bpf **x = otel ? &l->heap_otel : &l->heap_fallback;
	int err = loader__heap_progs(l, out);

	if (err || bpf_program__fd(otel ? out->otel_alloc : out->ret) >= 0)
		return err; /* loaded with the others */
	if (!*x) {
		err = load_heap_extra(l, otel, x);
		if (err)
			return err;
	}
	if (otel) {
		out->otel_alloc = (*x)->progs.otel_alloc;
		out->otel_free = (*x)->progs.otel_free;
		out->otel_lost = (*x)->progs.otel_lost;
	} else {
		out->enter = (*x)->progs.heap_enter;
		out->ret = (*x)->progs.heap_return;
		out->free_ = (*x)->progs.heap_free;
	}
	return 0;
}

int loader__heap_progs_fallback(struct loader *l, struct loader_heap_progs *out)
{
	return heap_progs_extra(l, out, false);
}

int loader__heap_progs_otel(struct loader *l, struct loader_heap_progs *out)
{
	return heap_progs_extra(l, out, true);
}

bool loader__heap_otel_only(const struct loader *l)
{
	return l->opts.heap_otel_only;
}

/* Is name the file BPFTRACE_PROF_FAULT_SESSION names (by its basename)? */
static bool session_fault(const struct loader *l, const char *name)
{
	const char *base = strrchr(name, '/');

	return l->session_fault && !strcmp(base ? base + 1 : name, l->session_fault);
}

int loader__heap_session(struct loader *l, const struct loader_attach_key *key, const char *name,
			 const char *path, int pid, const uint64_t *offsets,
			 const uint64_t *cookies, size_t cnt)
{
	struct attached *a = hashmap__find(l->attached, key);
	struct uprobe_multi_opts o = {.path = path,
				      .offsets = offsets,
				      .cookies = cookies,
				      .cnt = cnt,
				      .pid = pid > 0 ? pid : 0,
				      .session = true};
	int fd, err;

	if (!l->heap_session)
		return -EOPNOTSUPP;
	if (!a || a->nfds)
		return -EINVAL;
	/* The fault: -EINVAL, as the kernel rejects a link's arguments, before the system call */
	err = session_fault(l, name)
		      ? -EINVAL
		      : uprobe_multi__attach(&fd, bpf_program__fd(l->heap->progs.heap_session), &o);
	if (err) {
		/* refused for this file: its probes one per function, counted */
		pr_debug("uprobe session link refused for %s: %s; one probe per function\n", name,
			 strerror(-err));
		l->stats.heap_session_refused++;
		return -EOPNOTSUPP;
	}
	a->fds[a->nfds++] = fd;
	l->stats.links++;
	l->stats.heap_session_files++;
	return 0;
}

int loader__heap_multi(struct loader *l, const struct loader_attach_key *key, const char *name,
		       const char *path, int pid, const struct loader_multi_set sets[3])
{
	struct bpf_program *progs[] = {l->heap->progs.heap_return_multi,
				       l->heap->progs.heap_free_multi,
				       l->heap->progs.heap_enter_multi};
	struct attached *a = hashmap__find(l->attached, key);
	/* The fault: -EINVAL, as the kernel rejects a link's arguments, before the system call */
	int fd, err = session_fault(l, name) ? -EINVAL : 0;

	if (!l->heap_multi)
		return -EOPNOTSUPP;
	if (!a || a->nfds)
		return -EINVAL;
	/* In the order of sets (returns, frees, entries: heap_attach__plan says why). */
	for (int i = 0; i < 3 && !err; i++) {
		struct uprobe_multi_opts o = {.path = path,
					      .offsets = sets[i].offsets,
					      .cookies = sets[i].cookies,
					      .cnt = sets[i].cnt,
					      .pid = pid > 0 ? pid : 0,
					      .retprobe = i == LOADER_MULTI_RETURN};

		if (!sets[i].cnt)
			continue;
		err = uprobe_multi__attach(&fd, bpf_program__fd(progs[i]), &o);
		if (!err)
			a->fds[a->nfds++] = fd;
	}
	l->stats.links += a->nfds;
	if (err) {
		/* All or none for a file: its probes one per function, counted */
		loader__destroy_links(l, a);
		pr_debug("uprobe_multi links refused for %s: %s; one probe per function\n", name,
			 strerror(-err));
		l->stats.heap_multi_refused++;
		return -EOPNOTSUPP;
	}
	pr_debug("probing the allocator of %s through uprobe_multi links\n", name);
	l->stats.heap_multi_files++;
	return 0;
}

const struct loader_attach_stats *loader__attach_stats(const struct loader *l)
{
	return l ? &l->stats : NULL;
}
