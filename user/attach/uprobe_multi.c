// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * uprobe_multi and uprobe session links through the BPF_LINK_CREATE system call (see
 * uprobe_multi.h for why not through libbpf 1.1).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "attach/uprobe_multi.h"
#include "proc/maps.h"

/*
 * The head of union bpf_attr's link_create and its uprobe_multi member, as the kernel lays
 * them out since 6.6 (include/uapi/linux/bpf.h): libbpf 1.1's copy of the union ends before
 * them.  The kernel reads only the size we pass; bytes it knows beyond it count as zero.
 */
struct prof_link_create_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t um_flags;
	uint32_t pid;
	uint32_t pad;
};
_Static_assert(offsetof(struct prof_link_create_attr, path) == 16, "uprobe_multi.path");
_Static_assert(offsetof(struct prof_link_create_attr, cnt) == 48, "uprobe_multi.cnt");
_Static_assert(offsetof(struct prof_link_create_attr, pid) == 56, "uprobe_multi.pid");
_Static_assert(sizeof(struct prof_link_create_attr) == 64, "link_create with uprobe_multi");

int uprobe_multi__set_type(struct bpf_program *prog, bool session)
{
	return bpf_program__set_expected_attach_type(
		prog, (enum bpf_attach_type)(session ? PROF_BPF_TRACE_UPROBE_SESSION
						     : PROF_BPF_TRACE_UPROBE_MULTI));
}

int uprobe_multi__attach(int *out, int prog_fd, const struct uprobe_multi_opts *opts)
{
	struct prof_link_create_attr attr;
	long fd;

	*out = -1;
	if (!opts->path || !opts->offsets || !opts->cnt || opts->cnt > UINT32_MAX ||
	    opts->pid < 0 || (opts->session && opts->retprobe))
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type =
		opts->session ? PROF_BPF_TRACE_UPROBE_SESSION : PROF_BPF_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)opts->path;
	attr.offsets = (uint64_t)(uintptr_t)opts->offsets;
	attr.ref_ctr_offsets = (uint64_t)(uintptr_t)opts->ref_ctr_offsets;
	attr.cookies = (uint64_t)(uintptr_t)opts->cookies;
	attr.cnt = (uint32_t)opts->cnt;
	attr.um_flags = opts->retprobe ? PROF_BPF_F_UPROBE_MULTI_RETURN : 0;
	attr.pid = (uint32_t)opts->pid;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	*out = (int)fd;
	return 0;
}

/* What the feature probe links to: never called while linked. */
__attribute__((noinline, used)) int uprobe_multi__probe_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/* Can an empty program of this kind be loaded and linked to our probe target? */
static bool try_link(const char *path, uint64_t offset, bool session)
{
	/* r0 = 0; exit: a session's entry returning 0 keeps its return, which may return anything
	 */
	const struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
		{.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, lopts,
		    .expected_attach_type = (enum bpf_attach_type)(
			    session ? PROF_BPF_TRACE_UPROBE_SESSION : PROF_BPF_TRACE_UPROBE_MULTI));
	struct uprobe_multi_opts o = {.path = path,
				      .offsets = &offset,
				      .cnt = 1,
				      .pid = (int)getpid(),
				      .session = session};
	int prog_fd, link_fd = -1;
	bool ok;

	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "prof_um_probe", "GPL", insns,
				sizeof(insns) / sizeof(insns[0]), &lopts);
	if (prog_fd < 0)
		return false;
	ok = uprobe_multi__attach(&link_fd, prog_fd, &o) == 0;
	if (link_fd >= 0)
		close(link_fd);
	close(prog_fd);
	return ok;
}

int uprobe_multi__supported(bool *session, bool *multi)
{
	uint64_t addr = (uint64_t)(uintptr_t)&uprobe_multi__probe_target, offset = 0;
	struct maps *m = NULL;
	char path[64];
	bool found = false;
	int err;

	*session = *multi = false;
	err = maps__read_self(&m);
	if (err)
		return err;
	for (size_t i = 0; i < m->count && !found; i++) {
		const struct maps_entry *e = &m->entries[i];

		if (!e->exec || addr < e->start || addr >= e->end)
			continue;
		/* The mapping itself, whatever its path says (a binary replaced since we started).
		 */
		snprintf(path, sizeof(path), "/proc/self/map_files/%llx-%llx",
			 (unsigned long long)e->start, (unsigned long long)e->end);
		offset = addr - e->start + e->offset;
		found = true;
	}
	maps__free(m);
	if (!found)
		return -ENOENT;
	*multi = try_link(path, offset, false);
	*session = try_link(path, offset, true);
	return 0;
}
