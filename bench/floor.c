// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The benchmark floor: attach bench/floor.bpf.c's programs to a process exactly where
 * `bpftrace-prof --heap -p PID` puts its probes (same files, same functions, same emulated
 * instruction found by user/attach/prologue.c), say READY, and stay until the process exits.
 *
 *   floor -p PID [--filter] [--pending] [--stack] [--rawstack] [--ringbuf] [--entry-only]
 *         [--session] [--multi] [--first-insn] [--rb-output | --rb-reserve-max]
 *
 * Without options the programs are empty: the cost of the probes themselves.  Each option
 * adds one piece of bpftrace-prof's per-event work (bench/floor.h) or an alternative to it
 * (--rawstack: bpf_get_stack instead of bpf_get_stackid; --rb-output / --rb-reserve-max with
 * --ringbuf: allocation records with a 13-frame stack, copied at their length from per-CPU
 * scratch or written in a reservation of the largest record).  --entry-only leaves out the return
 * probes (what an allocation that is not sampled would cost if the entry program could cancel
 * its return probe).  --session puts one uprobe session program (Linux 6.13) on each allocator
 * entry instead of the entry and return programs: its entry skips the return for all calls but
 * one in 64.  --multi attaches the programs through one uprobe_multi link (6.6) per file and
 * program instead of one link per function.  --first-insn puts the entry probes on the
 * functions' first instruction instead of the first emulated one (user/attach/prologue.c).
 * With --ringbuf the records are consumed and counted like bpftrace-prof
 * does (woken per batch, drained on a 100 ms timer).  Prints "floor: probed N functions" and,
 * at the end, "floor: events N".
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sym/elf_file.h"
#include "floor.h"
#include "floor.skel.h"
#include "attach/heap_attach.h"
#include "attach/uprobe_multi.h"
#include "proc/maps.h"
#include "proc/safe_open.h"

static bool entry_only, session, multi, first_insn;

struct floor_state {
	struct floor_bpf *skel;
	struct bpf_link **links;
	size_t nlinks;
	int *link_fds; /* uprobe_multi and session links */
	size_t nfds;
	unsigned long long events;
};

/* The offsets of one program in one file, linked at once under --multi / --session. */
struct floor_group {
	uint64_t offsets[2 * PROF_FN__COUNT];
	unsigned count;
};

static int keep(struct floor_state *st, struct bpf_link *link)
{
	struct bpf_link **n = realloc(st->links, (st->nlinks + 1) * sizeof(*n));

	if (!n) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	st->links = n;
	st->links[st->nlinks++] = link;
	return 0;
}

static int attach_at(struct floor_state *st, struct bpf_program *prog, bool ret, int pid,
		     const char *path, uint64_t off)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret);
	struct bpf_link *link = bpf_program__attach_uprobe_opts(prog, pid, path, off, &opts);

	if (!link)
		return -errno;
	return keep(st, link);
}

static int attach_multi(struct floor_state *st, struct bpf_program *prog, bool ret, bool ses,
			int pid, const char *path, const struct floor_group *g)
{
	struct uprobe_multi_opts o = {.path = path,
				      .offsets = g->offsets,
				      .cnt = g->count,
				      .pid = pid,
				      .retprobe = ret,
				      .session = ses};
	int *n, fd, err;

	if (!g->count)
		return 0;
	err = uprobe_multi__attach(&fd, bpf_program__fd(prog), &o);
	if (err)
		return err;
	n = realloc(st->link_fds, (st->nfds + 1) * sizeof(*n));
	if (!n) {
		close(fd);
		return -ENOMEM;
	}
	st->link_fds = n;
	st->link_fds[st->nfds++] = fd;
	return 0;
}

/* Probe the allocator functions one file defines, by bpftrace-prof's own plan; returns how
 * many, or -errno. */
static int attach_file(struct floor_state *st, int pid, int fd, const char *name)
{
	struct elf_file *ef = NULL;
	struct heap_plan plan;
	struct floor_group ent = {}, ret = {}, fre = {};
	char path[64];
	int err;

	err = elf_file__open_fd(&ef, fd, &(struct elf_file_opts){.debug_dir = "", .keep_fd = true});
	if (err)
		return err;
	err = heap_attach__plan(&plan, ef);
	if (err)
		goto cleanup;
	safe_open__fd_path(path, sizeof(path), fd);
	for (unsigned i = 0; i < plan.count; i++) {
		const struct heap_probe *p = &plan.probes[i];
		uint64_t off = p->offset;

		err = 0;
		if (p->kind == HEAP_PROBE_ENTRY && first_insn)
			off -= p->skipped;
		if (p->kind == HEAP_PROBE_FREE && multi)
			fre.offsets[fre.count++] = off;
		else if (p->kind == HEAP_PROBE_FREE)
			err = attach_at(st, st->skel->progs.floor_free, false, pid, path, off);
		else if (p->kind == HEAP_PROBE_ENTRY && (multi || session))
			ent.offsets[ent.count++] = off;
		else if (p->kind == HEAP_PROBE_ENTRY)
			err = attach_at(st, st->skel->progs.floor_enter, false, pid, path, off);
		else if (entry_only || session)
			; /* a session's return is its entry program's */
		else if (multi)
			ret.offsets[ret.count++] = off;
		else
			err = attach_at(st, st->skel->progs.floor_return, true, pid, path, off);
		if (err)
			goto cleanup;
		if (p->kind != HEAP_PROBE_RETURN)
			fprintf(stderr, "floor: probing %s at %s+0x%llx (+%llu)\n", p->name, name,
				(unsigned long long)(p->offset - p->skipped),
				(unsigned long long)(off - (p->offset - p->skipped)));
	}
	if (session)
		err = attach_multi(st, st->skel->progs.floor_session, false, true, pid, path, &ent);
	else
		err = attach_multi(st, st->skel->progs.floor_enter, false, false, pid, path, &ent);
	if (!err)
		err = attach_multi(st, st->skel->progs.floor_return, true, false, pid, path, &ret);
	if (!err)
		err = attach_multi(st, st->skel->progs.floor_free, false, false, pid, path, &fre);
	if (err)
		goto cleanup;
	err = (int)plan.nfns;
cleanup:
	elf_file__free(ef);
	return err;
}

/* Every executable file mapping of pid, each file once, as heap_attach__process does. */
static int attach_pid(struct floor_state *st, int pid)
{
	char path[64];
	struct maps *m = NULL;
	int err, total = 0, root_fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	err = maps__read(&m, path);
	if (err)
		return err;
	err = safe_open__root(&root_fd, "/proc", (uint32_t)pid);
	if (err) {
		maps__free(m);
		return err;
	}
	for (size_t i = 0; i < m->count; i++) {
		const struct maps_entry *e = &m->entries[i];
		bool seen = false;
		int fd;

		if (!e->exec || !maps_entry__is_file(e))
			continue;
		for (size_t j = 0; j < i; j++)
			seen |= m->entries[j].exec && !strcmp(m->entries[j].path, e->path);
		if (seen)
			continue;
		err = safe_open__mapping(&fd, "/proc", (uint32_t)pid, e, root_fd);
		if (!err) {
			err = attach_file(st, pid, fd, e->path);
			close(fd);
		}
		if (err < 0) {
			fprintf(stderr, "floor: not probing %s: %s\n", e->path, strerror(-err));
			continue;
		}
		total += err;
	}
	close(root_fd);
	maps__free(m);
	return total;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct floor_state *st = ctx;

	st->events++;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: floor -p PID [--filter] [--pending] [--stack] [--rawstack] "
			"[--ringbuf] [--entry-only] [--session] [--multi] [--first-insn] "
			"[--rb-output | --rb-reserve-max]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct floor_state st = {};
	struct ring_buffer *rb = NULL;
	__u32 features = 0;
	int pid = 0, pidfd = -1, err = 0, n;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-p") && i + 1 < argc)
			pid = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--filter"))
			features |= FLOOR_FILTER;
		else if (!strcmp(argv[i], "--pending"))
			features |= FLOOR_PENDING;
		else if (!strcmp(argv[i], "--stack"))
			features |= FLOOR_STACK;
		else if (!strcmp(argv[i], "--ringbuf"))
			features |= FLOOR_RINGBUF;
		else if (!strcmp(argv[i], "--rawstack"))
			features |= FLOOR_RAWSTACK;
		else if (!strcmp(argv[i], "--rb-output"))
			features |= FLOOR_RB_OUTPUT;
		else if (!strcmp(argv[i], "--rb-reserve-max"))
			features |= FLOOR_RB_RESERVE_MAX;
		else if (!strcmp(argv[i], "--entry-only"))
			entry_only = true;
		else if (!strcmp(argv[i], "--session"))
			session = true;
		else if (!strcmp(argv[i], "--multi"))
			multi = true;
		else if (!strcmp(argv[i], "--first-insn"))
			first_insn = true;
		else
			return usage();
	}
	if (pid <= 0 || (session && entry_only))
		return usage();
	if (session || multi) {
		bool has_session, has_multi;

		err = uprobe_multi__supported(&has_session, &has_multi);
		if (err || (session && !has_session) || (multi && !has_multi)) {
			fprintf(stderr, "floor: this kernel has no %s links%s%s\n",
				session && !has_session ? "uprobe session" : "uprobe_multi",
				err ? ": " : "", err ? strerror(-err) : "");
			return 1;
		}
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		fprintf(stderr, "floor: no process %d: %s\n", pid, strerror(errno));
		return 2;
	}
	st.skel = floor_bpf__open();
	if (!st.skel) {
		err = -errno;
		fprintf(stderr, "floor: opening the BPF object failed: %s\n", strerror(-err));
		goto cleanup;
	}
	st.skel->rodata->floor_features = features;
	if (session) {
		bpf_program__set_autoload(st.skel->progs.floor_session, true);
		err = uprobe_multi__set_type(st.skel->progs.floor_session, true);
	}
	if (!err && multi) {
		err = uprobe_multi__set_type(st.skel->progs.floor_enter, false);
		if (!err)
			err = uprobe_multi__set_type(st.skel->progs.floor_return, false);
		if (!err)
			err = uprobe_multi__set_type(st.skel->progs.floor_free, false);
	}
	if (err) {
		fprintf(stderr, "floor: setting the attach types failed: %s\n", strerror(-err));
		goto cleanup;
	}
	err = floor_bpf__load(st.skel);
	if (err) {
		fprintf(stderr, "floor: loading the BPF object failed: %s\n", strerror(-err));
		goto cleanup;
	}
	if (features & FLOOR_FILTER) {
		__u32 key = (__u32)pid;
		__u8 one = 1;

		if (bpf_map_update_elem(bpf_map__fd(st.skel->maps.prof_targets), &key, &one,
					BPF_ANY)) {
			err = -errno;
			goto cleanup;
		}
	}
	if (features & FLOOR_RINGBUF) {
		rb = ring_buffer__new(bpf_map__fd(st.skel->maps.prof_events), on_event, &st, NULL);
		if (!rb) {
			err = -errno;
			fprintf(stderr, "floor: ring buffer: %s\n", strerror(-err));
			goto cleanup;
		}
	}
	n = attach_pid(&st, pid);
	if (n <= 0) {
		err = n ? n : -ENOENT;
		fprintf(stderr, "floor: nothing probed in %d: %s\n", pid, strerror(-err));
		goto cleanup;
	}
	fprintf(stderr, "floor: probed %d functions\nREADY\n", n);
	fflush(stderr);

	for (;;) {
		struct pollfd pfd = {.fd = pidfd, .events = POLLIN};

		if (rb) {
			ring_buffer__poll(rb, 100);
			ring_buffer__consume(rb);
		}
		if (poll(&pfd, 1, rb ? 0 : 100) > 0)
			break; /* the process exited */
	}
	if (rb)
		while (ring_buffer__consume(rb) > 0)
			;
	fprintf(stderr, "floor: events %llu\n", st.events);
cleanup:
	ring_buffer__free(rb);
	for (size_t i = 0; i < st.nlinks; i++)
		bpf_link__destroy(st.links[i]);
	free(st.links);
	for (size_t i = 0; i < st.nfds; i++)
		close(st.link_fds[i]);
	free(st.link_fds);
	floor_bpf__destroy(st.skel);
	if (pidfd >= 0)
		close(pidfd);
	return err ? 1 : 0;
}
