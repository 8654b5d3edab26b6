/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The consumer: ring-buffer records -> per-mode aggregators, plus what every mode shares
 * (target processes, thread names, symbolizer, stack cache).  The report reads it at the end.
 */
#ifndef PROF_COLLECT_H
#define PROF_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct collect;
struct env;
struct loader;
struct heap_agg;
struct calls_agg;
struct calls_attach;
struct stackres;
struct procinfo;
struct symbolizer;

int collect__new(struct collect **out, const struct env *env, struct loader *l);
void collect__free(struct collect *c);

/* ring_buffer_sample_fn */
int collect__on_event(void *ctx, void *data, size_t size);

/* A target given with -p: load its symbols now, while it lives. */
int collect__add_pid(struct collect *c, uint32_t pid);
/* The `-- CMD` child, not yet exec'd (its exec arrives as an event that loads its maps). */
int collect__add_child(struct collect *c, uint32_t pid);
/* Attach the modes other than heap (cpu, calls) once targets are known. */
int collect__attach_modes(struct collect *c);
bool collect__any_alive(struct collect *c);
/* pid is stopped at its exit with its address space intact: last chance to symbolize. */
void collect__process_exiting(struct collect *c, uint32_t pid);
/* Send sig to every target still alive (ending `-- CMD` and its children early). */
void collect__signal_all(struct collect *c, int sig);
/* Periodic work while profiling (about once a second): symbolize while targets live. */
void collect__tick(struct collect *c);

struct loader *collect__loader(struct collect *c);
struct heap_agg *collect__heap(struct collect *c);
/* --calls state, NULL without --calls. */
struct calls_agg *collect__calls(struct collect *c);
struct calls_attach *collect__calls_attach(struct collect *c);
struct stackres *collect__stacks(struct collect *c);
struct procinfo *collect__procinfo(struct collect *c);
struct symbolizer *collect__symbolizer(struct collect *c);
/* Records that were malformed or of an unknown type (should stay 0). */
uint64_t collect__bad_records(struct collect *c);

#endif /* PROF_COLLECT_H */
