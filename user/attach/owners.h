/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Wide scopes: who keeps a probed file's uprobes.  A file is kept by the processes that map it
 * executable and by the groups it was probed in advance for: a root (a container's file system,
 * its standard library paths) or an image (an executable and the libraries its DT_NEEDED
 * entries name), each kept while a process in scope runs in it.  Pure bookkeeping: the caller
 * detaches what owners__sweep hands back.
 */
#ifndef PROF_OWNERS_H
#define PROF_OWNERS_H

#include <stddef.h>
#include <stdint.h>

/* A file (or a root directory, an executable) by its st_dev and st_ino. */
struct owners_key {
	uint64_t dev, ino;
};

enum owners_kind {
	OWNERS_FILE,  /* a probed file */
	OWNERS_ROOT,  /* group: a root directory */
	OWNERS_IMAGE, /* group: an executable */
};

struct owners;

int owners__new(struct owners **out);
void owners__free(struct owners *o);

/* pid runs in group (OWNERS_ROOT or OWNERS_IMAGE), instead of the one of that kind before. */
int owners__join(struct owners *o, uint32_t pid, enum owners_kind group,
		 const struct owners_key *key);
/* file was probed for group: kept while the group is (a group nobody joins goes at the sweep). */
int owners__group_file(struct owners *o, enum owners_kind group, const struct owners_key *key,
		       const struct owners_key *file);
/* The same for the file open as fd (its fstat). */
int owners__group_fd(struct owners *o, enum owners_kind group, const struct owners_key *key,
		     int fd);
/* pid maps exactly these files executable now (duplicates allowed): the ones before that are
 * not among them lose it as an owner (an exec, a dlclose). */
int owners__set_files(struct owners *o, uint32_t pid, const struct owners_key *files, size_t n);
/* child is a copy of parent: the same files, root and image (what child had before is gone). */
int owners__fork(struct owners *o, uint32_t child, uint32_t parent);
/* pid is gone: it keeps nothing any more. */
void owners__release(struct owners *o, uint32_t pid);

/*
 * Everything no process keeps now: first each group without a process (fn(ctx, group, key)),
 * whose files lose it as an owner, then each file without an owner (fn(ctx, OWNERS_FILE, key)).
 * Both are forgotten: a later join or probe starts them afresh.  Returns how many went, or
 * -ENOMEM (what was not handed back yet is, at the next sweep).
 */
typedef void (*owners_gone_fn)(void *ctx, enum owners_kind kind, const struct owners_key *key);
int owners__sweep(struct owners *o, owners_gone_fn fn, void *ctx);

/* How many owners keep file (processes and groups), how many processes run in a group. */
unsigned owners__file_refs(const struct owners *o, const struct owners_key *file);
unsigned owners__group_pids(const struct owners *o, enum owners_kind group,
			    const struct owners_key *key);

/* The files pid maps (sorted; valid until owners change), and how many. */
size_t owners__files_of(const struct owners *o, uint32_t pid, const struct owners_key **out);
/* The processes that map file: *out (free() it; NULL when none), *n of them.  0 or -ENOMEM. */
int owners__pids_of(const struct owners *o, const struct owners_key *file, uint32_t **out,
		    size_t *n);

#endif /* PROF_OWNERS_H */
