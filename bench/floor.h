/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* bench/floor: what the floor programs may do per hit (floor_features bits, set by floor.c). */
#ifndef PROF_BENCH_FLOOR_H
#define PROF_BENCH_FLOOR_H

#define FLOOR_FILTER	     (1u << 0) /* look the tgid up in prof_targets, as every program does */
#define FLOOR_PENDING	     (1u << 1) /* per-thread arguments: hash update / lookup / delete */
#define FLOOR_STACK	     (1u << 2) /* bpf_get_stackid of the user stack at the return */
#define FLOOR_RINGBUF	     (1u << 3) /* one record per allocation and per free */
#define FLOOR_RAWSTACK	     (1u << 4) /* bpf_get_stack (raw IPs) into a per-CPU buffer instead */
/* With FLOOR_RINGBUF, the allocation record carries FLOOR_REC_FRAMES frames (a short stack), built
 * in per-CPU scratch and copied at its length with bpf_ringbuf_output (as bpftrace-prof does)... */
#define FLOOR_RB_OUTPUT	     (1u << 5)
/* ...or written in place in a reservation of the largest record (bpf_ringbuf_reserve takes a
 * constant size: header + PROF_STACK_WORDS frames). */
#define FLOOR_RB_RESERVE_MAX (1u << 6)
#define FLOOR_REC_FRAMES     13 /* the heaviest stack of deep_stack at depth 8 */

#endif /* PROF_BENCH_FLOOR_H */
