// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --heap's path per process image (prof_otel_procs): the allocator probes for every process,
 * its own otel_memory probes, or allocator links of its own (wide scopes). */
#include "attach/loader.h"
#include "attach/loader_priv.h"

#include <errno.h>

#include <bpf/bpf.h>

#include "prof_heap.h"

int loader__heap_path(struct loader *l, uint32_t pid, bool otel)
{
	int fd = l->shared_fd[SHARED_OTEL_PROCS];
	__u8 path = otel, was = 0;

	if (fd < 0)
		return -ENOENT;
	/* Before any entry says otel: the allocator probes look entries up from then on. */
	if (otel && l->heap)
		__atomic_store_n(&l->heap->bss->heap_otel_any, true, __ATOMIC_RELEASE);
	if (bpf_map_lookup_elem(fd, &pid, &was)) {
		/* This image's first decision.  No room (the map full): BPF finds no entry, so the
		 * allocator probes serve it, and it is counted there. */
		if (bpf_map_update_elem(fd, &pid, &path, BPF_NOEXIST) && errno != EEXIST)
			otel = false;
		if (otel)
			l->stats.heap_procs_otel++;
		else if (l->opts.heap_otel_only)
			l->stats.heap_procs_unsampled++;
		else
			l->stats.heap_procs_uprobes++;
		return otel;
	}
	if (!otel || was == PROF_PATH_OTEL)
		return was == PROF_PATH_OTEL; /* decided already */
	/* A library with the probes came later (a dlopen, ld.so's startup mapping a preload): the
	 * image moves onto them, and is counted there instead. */
	if (bpf_map_update_elem(fd, &pid, &path, BPF_EXIST))
		return 0;
	if (l->opts.heap_otel_only)
		l->stats.heap_procs_unsampled--;
	else
		l->stats.heap_procs_uprobes--;
	l->stats.heap_procs_otel++;
	return 1;
}

int loader__heap_own(struct loader *l, uint32_t pid, bool late)
{
	int fd = l->shared_fd[SHARED_OTEL_PROCS];
	__u8 path = PROF_PATH_OWN, was = PROF_PATH_ALLOC;

	if (fd < 0 || !l->heap)
		return -ENOENT;
	__atomic_store_n(&l->heap->bss->heap_otel_any, true, __ATOMIC_RELEASE);
	if (!bpf_map_lookup_elem(fd, &pid, &was) && was != PROF_PATH_ALLOC)
		return was == PROF_PATH_OWN;
	/* No room: it stays on the links for every process, which the caller keeps. */
	if (bpf_map_update_elem(fd, &pid, &path, BPF_ANY))
		return -errno;
	l->stats.heap_procs_own++;
	l->stats.heap_own_late += late;
	return 1;
}

int loader__heap_path_of(struct loader *l, uint32_t pid)
{
	int fd = l->shared_fd[SHARED_OTEL_PROCS];
	__u8 was;

	if (fd < 0 || bpf_map_lookup_elem(fd, &pid, &was))
		return -ENOENT;
	return was;
}

void loader__otel_nop5_refused(struct loader *l)
{
	l->stats.otel_nop5_refused++;
}

void loader__arm_heap(struct loader *l)
{
	if (l->heap)
		__atomic_store_n(&l->heap->bss->heap_armed, true, __ATOMIC_RELEASE);
}

int loader__heap_unown(struct loader *l, uint32_t pid)
{
	int fd = l->shared_fd[SHARED_OTEL_PROCS];
	__u8 path = PROF_PATH_ALLOC, was;

	if (fd < 0 || bpf_map_lookup_elem(fd, &pid, &was) || was != PROF_PATH_OWN)
		return 0;
	if (bpf_map_update_elem(fd, &pid, &path, BPF_EXIST))
		return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
	l->stats.heap_own_merged++;
	return 1;
}

void loader__heap_split_merged(struct loader *l)
{
	l->stats.heap_split_merged++;
}

bool loader__heap_split(const struct loader *l)
{
	return l->opts.heap_split && l->heap && l->heap->bss->heap_otel_any;
}
