/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What tests/bpf/uprobe_multi_test.bpf.c counts per process (its map umt_counts, by tgid). */
#ifndef PROF_UPROBE_MULTI_TEST_H
#define PROF_UPROBE_MULTI_TEST_H

#define UMT_COOKIE_MAGIC 0xc0ffee0000000000ull
#define UMT_COOKIES	 4 /* attach cookies counted: 0..3 */

struct umt_counts {
	__u64 entries;
	__u64 returns;
	__u64 cookie_ok; /* session returns that saw their entry's cookie */
	__u64 entries_by_cookie[UMT_COOKIES];
	__u64 returns_by_cookie[UMT_COOKIES];
};
_Static_assert(sizeof(struct umt_counts) == 88, "umt_counts");

#endif /* PROF_UPROBE_MULTI_TEST_H */
