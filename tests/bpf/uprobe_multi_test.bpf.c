// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tests/unit/test_uprobe_multi.c's programs: count, per process, the entries and returns a
 * uprobe session or uprobe_multi link delivers, by attach cookie.  No filtering here: the links'
 * pid filters alone decide which processes are counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "uprobe_multi_test.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct umt_counts);
} umt_counts SEC(".maps");

const volatile __u32 umt_keep = 64; /* a session's return runs for one call in this many */
__u64 umt_seq;

extern bool bpf_session_is_return(void) __ksym __weak;
extern __u64 *bpf_session_cookie(void) __ksym __weak;

static __always_inline struct umt_counts *counts(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct umt_counts zero = {}, *c = bpf_map_lookup_elem(&umt_counts, &tgid);

	if (c)
		return c;
	bpf_map_update_elem(&umt_counts, &tgid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&umt_counts, &tgid);
}

SEC("?uprobe")
int umt_session(struct pt_regs *ctx)
{
	struct umt_counts *c = counts();
	__u64 *cookie = bpf_session_cookie();
	__u64 seq;

	if (!c || !cookie)
		return 0;
	if (bpf_session_is_return()) {
		__sync_fetch_and_add(&c->returns, 1);
		if ((*cookie & ~0xffffffffull) == UMT_COOKIE_MAGIC)
			__sync_fetch_and_add(&c->cookie_ok, 1);
		return 0;
	}
	__sync_fetch_and_add(&c->entries, 1);
	seq = __sync_fetch_and_add(&umt_seq, 1);
	if (seq % umt_keep)
		return 1; /* no return probe for this call */
	*cookie = UMT_COOKIE_MAGIC | (seq & 0xffffffffull);
	return 0;
}

SEC("?uprobe")
int umt_entry(struct pt_regs *ctx)
{
	struct umt_counts *c = counts();

	if (!c)
		return 0;
	__sync_fetch_and_add(&c->entries, 1);
	__sync_fetch_and_add(&c->entries_by_cookie[bpf_get_attach_cookie(ctx) & (UMT_COOKIES - 1)],
			     1);
	return 0;
}

SEC("?uretprobe")
int umt_return(struct pt_regs *ctx)
{
	struct umt_counts *c = counts();

	if (!c)
		return 0;
	__sync_fetch_and_add(&c->returns, 1);
	__sync_fetch_and_add(&c->returns_by_cookie[bpf_get_attach_cookie(ctx) & (UMT_COOKIES - 1)],
			     1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
