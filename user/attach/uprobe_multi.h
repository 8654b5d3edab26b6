/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * uprobe_multi links (Linux 6.6: one link for many offsets of one file, an optional pid filter,
 * a cookie per offset) and BPF uprobe sessions (6.13: one program at entry and return; an
 * entry returning 1 skips the return), created without a newer libbpf: Debian's libbpf 1.1
 * knows neither attach type and its union bpf_attr is too small for uprobe_multi, so the link
 * is made with the BPF_LINK_CREATE system call on a local copy of the kernel's layout.
 *
 * The program must be given the link's attach type before it is loaded
 * (uprobe_multi__set_type); such a program attaches only through these links.
 */
#ifndef PROF_UPROBE_MULTI_H
#define PROF_UPROBE_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_program;

/* The kernel's uapi values (include/uapi/linux/bpf.h): enum bpf_attach_type. */
#define PROF_BPF_TRACE_UPROBE_MULTI    48 /* Linux 6.6 */
#define PROF_BPF_TRACE_UPROBE_SESSION  57 /* Linux 6.13 */
#define PROF_BPF_F_UPROBE_MULTI_RETURN (1u << 0)

struct uprobe_multi_opts {
	const char *path;		 /* the file; the kernel resolves it (symlinks followed) */
	const uint64_t *offsets;	 /* file offsets of the probed instructions */
	const uint64_t *ref_ctr_offsets; /* USDT semaphores, one per offset; NULL: none */
	const uint64_t *cookies;	 /* bpf_get_attach_cookie per offset; NULL: 0 */
	size_t cnt;			 /* entries in each array, >= 1 */
	int pid;			 /* only this process (tgid); 0: every process */
	bool retprobe;			 /* return probes (not with session) */
	bool session;			 /* the program is a session (set_type(prog, true)) */
};

/* Before bpf_object__load: prog attaches as a uprobe_multi (session false) or session link. */
int uprobe_multi__set_type(struct bpf_program *prog, bool session);

/* Link prog_fd to opts' offsets; *out is the link's fd (close() detaches).  0 or -errno. */
int uprobe_multi__attach(int *out, int prog_fd, const struct uprobe_multi_opts *opts);

/*
 * Which of the two the running kernel accepts, found by loading an empty program of each kind
 * and linking it to a function of our own binary (limited to our pid; it never runs there).
 * A refusal is "no" (the caller keeps per-function uprobes); -errno only when the attempt
 * itself could not be made (our maps unreadable, out of memory).
 */
int uprobe_multi__supported(bool *session, bool *multi);

#endif /* PROF_UPROBE_MULTI_H */
