// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Each BPF object declares only the maps it uses (a declared map is created, or must be shared,
 * at load), and the limits the loader sets are the ones in include/.  Opening a skeleton only
 * parses its ELF: no privileges, no kernel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "prof_stack.h" /* before the skeletons: the walker's knobs are in their rodata */

#include "calls.skel.h"
#include "cpu.skel.h"
#include "heap.skel.h"
#include "offcpu.skel.h"
#include "proc.skel.h"
#include "prof_calls.h"
#include "prof_heap.h"
#include "prof_offcpu.h"
#include "attach/loader.h"

/* The maps of obj other than libbpf's own (.rodata, .bss, .kconfig), as "a b c ". */
static void map_names(struct bpf_object *obj, char *out, size_t len)
{
	struct bpf_map *map;

	out[0] = 0;
	bpf_object__for_each_map(map, obj)
	{
		const char *name = bpf_map__name(map);

		if (strchr(name, '.'))
			continue;
		strncat(out, name, len - strlen(out) - 1);
		strncat(out, " ", len - strlen(out) - 1);
	}
}

static void test_loader__each_object_declares_only_its_maps(void **state)
{
	struct proc_bpf *proc = proc_bpf__open();
	struct heap_bpf *heap = heap_bpf__open();
	struct cpu_bpf *cpu = cpu_bpf__open();
	struct calls_bpf *calls = calls_bpf__open();
	char names[1024];

	(void)state;
	assert_non_null(proc);
	assert_non_null(heap);
	assert_non_null(cpu);
	assert_non_null(calls);
	map_names(proc->obj, names, sizeof(names));
	/* The lifecycle program keeps the unwinder's process entries right (fork, exec, exit),
	 * marks the processes born in a cgroup scope for the heap's return probe, and keeps the
	 * set of processes on their otel_memory probes (a fork inherits, an exec leaves) and
	 * their counts of sampled blocks (an exec or death drops them). */
	assert_string_equal(names,
			    "prof_targets prof_events prof_counters prof_scope_cgroup "
			    "prof_wake_unasked prof_scope_born prof_otel_procs "
			    "prof_sampled_procs prof_unwind_tables "
			    "prof_unwind_procs prof_unwind_files prof_hold_gate prof_exec_seen "
			    "prof_dl_pending prof_dl_state prof_held prof_hold_rate_map ");
	map_names(cpu->obj, names, sizeof(names));
	/* The walker's windows (on the stack, on Python's frames), its caches of rows and the
	 * cell its counts go through unseen by the verifier (prof_opaque) are per object (per
	 * CPU), as is the count of bytes submitted since the ring was last asked how much is
	 * queued (bpf/events.bpf.h). */
	assert_string_equal(names,
			    "prof_unwind_pc_cache prof_cpu_scratch prof_events "
			    "prof_targets prof_counters prof_scope_cgroup prof_wake_unasked "
			    "prof_unwind_tables "
			    "prof_unwind_procs prof_unwind_files prof_py_win prof_unwind_asked "
			    "prof_stack_win prof_unwind_row_cache prof_opaque_cell ");
	map_names(calls->obj, names, sizeof(names));
	assert_null(strstr(names, "prof_pending"));
	assert_null(strstr(names, "prof_stacks"));
	assert_null(strstr(names, "prof_sample_left"));
	assert_non_null(strstr(names, "prof_events"));
	map_names(heap->obj, names, sizeof(names));
	assert_non_null(strstr(names, "prof_heap_threads"));
	assert_non_null(strstr(names, "prof_sampled"));
	assert_non_null(strstr(names, "prof_scope_born"));
	assert_non_null(strstr(names, "prof_otel_procs"));
	calls_bpf__destroy(calls);
	cpu_bpf__destroy(cpu);
	heap_bpf__destroy(heap);
	proc_bpf__destroy(proc);
}

/* The declared sizes are the named limits (the loader sets the same ones before load). */
static void test_loader__limits_come_from_include(void **state)
{
	struct proc_bpf *proc = proc_bpf__open();
	struct heap_bpf *heap = heap_bpf__open();

	(void)state;
	assert_non_null(proc);
	assert_non_null(heap);
	assert_int_equal(bpf_map__max_entries(proc->maps.prof_events), PROF_RINGBUF_BYTES);
	assert_int_equal(bpf_map__max_entries(heap->maps.prof_sampled), PROF_SAMPLED_ENTRIES);
	assert_int_equal(bpf_map__max_entries(heap->maps.prof_scope_born), PROF_MAX_TARGETS);
	assert_int_equal(bpf_map__max_entries(proc->maps.prof_dl_pending), PROF_DL_PENDING_ENTRIES);
	assert_int_equal(bpf_map__max_entries(proc->maps.prof_dl_state), PROF_DL_STATE_ENTRIES);
	assert_int_equal(bpf_map__key_size(heap->maps.prof_sampled),
			 sizeof(struct prof_sampled_key));
	assert_int_equal(bpf_map__max_entries(heap->maps.prof_walk_cache), PROF_WALK_CACHE_SLOTS);
	assert_int_equal(bpf_map__value_size(heap->maps.prof_walk_cache),
			 sizeof(struct prof_walk_cached));
	heap_bpf__destroy(heap);
	proc_bpf__destroy(proc);
}

/*
 * The heap walker's cache of whole walks, per CPU: its slots a power of two (a mask picks one),
 * all of them under the budget on a machine with many CPUs, never below the least.
 */
static void test_loader__walk_cache_slots(void **state)
{
	(void)state;
	assert_int_equal(prof_walk_cache_slots(2), PROF_WALK_CACHE_SLOTS);
	assert_int_equal(prof_walk_cache_slots(0), PROF_WALK_CACHE_SLOTS);
	assert_int_equal(prof_walk_cache_slots(-1), PROF_WALK_CACHE_SLOTS);
	for (int ncpus = 1; ncpus <= 8192; ncpus *= 2) {
		__u32 slots = prof_walk_cache_slots(ncpus);

		assert_true(slots >= PROF_WALK_CACHE_MIN && slots <= PROF_WALK_CACHE_SLOTS);
		assert_int_equal(slots & (slots - 1), 0);
		assert_true(slots == PROF_WALK_CACHE_MIN ||
			    (__u64)slots * sizeof(struct prof_walk_cached) * ncpus <=
				    PROF_WALK_CACHE_BUDGET);
		/* No more halving than the budget asks for. */
		assert_true(slots == PROF_WALK_CACHE_SLOTS ||
			    (__u64)slots * 2 * sizeof(struct prof_walk_cached) * ncpus >
				    PROF_WALK_CACHE_BUDGET);
	}
	assert_int_equal(prof_walk_cache_slots(8192), PROF_WALK_CACHE_MIN);
}

/* The ring's size: a quarter MiB per CPU from 1 to 16 MiB, or --ring-buffer's (past it too). */
static void test_loader__ring_size(void **state)
{
	static const struct {
		int ncpus;
		__u32 mib;
	} want[] = {{-1, 1}, {0, 1},  {1, 1},  {2, 1},	 {4, 1},   {5, 2},    {8, 2},
		    {9, 4},  {16, 4}, {32, 8}, {64, 16}, {65, 16}, {4096, 16}};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(prof_ringbuf_default(want[i].ncpus), want[i].mib << 20);
	assert_int_equal(loader__ring_bytes(&(struct loader_opts){0}),
			 prof_ringbuf_default(libbpf_num_possible_cpus()));
	assert_int_equal(loader__ring_bytes(&(struct loader_opts){.ring_bytes = 1u << 20}),
			 1u << 20);
	assert_int_equal(loader__ring_bytes(&(struct loader_opts){.ring_bytes = 64u << 20}),
			 64u << 20);
}

/* --offcpu: a thread's record is the small one; a deep stack's is the largest, in its own map. */
static void test_loader__offcpu_records_sized_in_include(void **state)
{
	struct offcpu_bpf *off = offcpu_bpf__open();

	(void)state;
	assert_non_null(off);
	assert_int_equal(bpf_map__max_entries(off->maps.prof_offcpu_start), PROF_OFFCPU_THREADS);
	assert_int_equal(bpf_map__value_size(off->maps.prof_offcpu_start),
			 sizeof(struct prof_offcpu_record));
	assert_int_equal(bpf_map__max_entries(off->maps.prof_offcpu_deep),
			 PROF_OFFCPU_DEEP_THREADS);
	assert_int_equal(bpf_map__value_size(off->maps.prof_offcpu_deep),
			 sizeof(struct prof_offcpu_deep));
	assert_true(bpf_map__map_flags(off->maps.prof_offcpu_deep) & BPF_F_NO_PREALLOC);
	offcpu_bpf__destroy(off);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loader__each_object_declares_only_its_maps),
		cmocka_unit_test(test_loader__limits_come_from_include),
		cmocka_unit_test(test_loader__ring_size),
		cmocka_unit_test(test_loader__walk_cache_slots),
		cmocka_unit_test(test_loader__offcpu_records_sized_in_include),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
