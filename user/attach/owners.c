// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "attach/owners.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/hashmap.h"

#define NGROUPS 2 /* OWNERS_ROOT, OWNERS_IMAGE */

struct group_key {
	uint32_t kind; /* enum owners_kind */
	uint32_t pad;
	struct owners_key key;
};

struct group {
	uint32_t npids;
	uint32_t nfiles, cap;
	struct owners_key *files;
};

struct proc {
	uint8_t in[NGROUPS]; /* runs in group[i] */
	struct owners_key group[NGROUPS];
	uint32_t nfiles;
	struct owners_key *files; /* sorted, unique */
};

struct owners {
	struct hashmap *files;	/* struct owners_key -> uint32_t owners */
	struct hashmap *groups; /* struct group_key -> struct group */
	struct hashmap *procs;	/* uint64_t pid (keeps the value aligned) -> struct proc */
};

int owners__new(struct owners **out)
{
	struct owners *o = calloc(1, sizeof(*o));
	int err;

	if (!o)
		return -ENOMEM;
	err = hashmap__new(&o->files, sizeof(struct owners_key), sizeof(uint32_t));
	if (!err)
		err = hashmap__new(&o->groups, sizeof(struct group_key), sizeof(struct group));
	if (!err)
		err = hashmap__new(&o->procs, sizeof(uint64_t), sizeof(struct proc));
	if (err) {
		owners__free(o);
		return err;
	}
	*out = o;
	return 0;
}

void owners__free(struct owners *o)
{
	struct group *g;
	struct proc *p;
	size_t it = 0;

	if (!o)
		return;
	while (o->groups && hashmap__next(o->groups, &it, NULL, (void **)&g))
		free(g->files);
	it = 0;
	while (o->procs && hashmap__next(o->procs, &it, NULL, (void **)&p))
		free(p->files);
	hashmap__free(o->files);
	hashmap__free(o->groups);
	hashmap__free(o->procs);
	free(o);
}

static bool is_group(enum owners_kind kind)
{
	return kind == OWNERS_ROOT || kind == OWNERS_IMAGE;
}

static struct group_key group_key(enum owners_kind kind, const struct owners_key *key)
{
	return (struct group_key){.kind = kind, .key = *key};
}

static int file_ref(struct owners *o, const struct owners_key *file)
{
	uint32_t *refs;

	if (hashmap__upsert(o->files, (void **)&refs, file, NULL))
		return -ENOMEM;
	(*refs)++;
	return 0;
}

/* The entry stays until the sweep, which hands it back if nobody took it again. */
static void file_unref(struct owners *o, const struct owners_key *file)
{
	uint32_t *refs = hashmap__find(o->files, file);

	if (refs && *refs)
		(*refs)--;
}

/* A group's process count +/-1 (created empty when unknown). */
static int group_add(struct owners *o, enum owners_kind kind, const struct owners_key *key,
		     int delta)
{
	struct group_key gk = group_key(kind, key);
	struct group *g;

	if (delta < 0) {
		g = hashmap__find(o->groups, &gk);
		if (g && g->npids)
			g->npids--;
		return 0;
	}
	if (hashmap__upsert(o->groups, (void **)&g, &gk, NULL))
		return -ENOMEM;
	g->npids++;
	return 0;
}

int owners__join(struct owners *o, uint32_t pid, enum owners_kind group,
		 const struct owners_key *key)
{
	unsigned i = group == OWNERS_ROOT ? 0 : 1;
	uint64_t k = pid;
	struct owners_key old;
	struct proc *p;
	bool had;
	int err;

	if (!is_group(group))
		return -EINVAL;
	p = hashmap__find(o->procs, &k);
	if (p && p->in[i] && !memcmp(&p->group[i], key, sizeof(*key)))
		return 0;
	err = group_add(o, group, key, 1);
	if (err)
		return err;
	if (hashmap__upsert(o->procs, (void **)&p, &k, NULL)) {
		group_add(o, group, key, -1);
		return -ENOMEM;
	}
	had = p->in[i];
	old = p->group[i];
	p->in[i] = 1;
	p->group[i] = *key;
	if (had)
		group_add(o, group, &old, -1);
	return 0;
}

int owners__group_file(struct owners *o, enum owners_kind group, const struct owners_key *key,
		       const struct owners_key *file)
{
	struct group_key gk = group_key(group, key);
	struct group *g;

	if (!is_group(group))
		return -EINVAL;
	if (hashmap__upsert(o->groups, (void **)&g, &gk, NULL))
		return -ENOMEM;
	/* A few dozen files per group at most: a scan is cheap. */
	for (uint32_t i = 0; i < g->nfiles; i++)
		if (!memcmp(&g->files[i], file, sizeof(*file)))
			return 0;
	if (g->nfiles == g->cap) {
		uint32_t cap = g->cap ? 2 * g->cap : 8;
		struct owners_key *n = realloc(g->files, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		g->files = n;
		g->cap = cap;
	}
	/* g stays put: file_ref inserts into o->files, not o->groups. */
	if (file_ref(o, file))
		return -ENOMEM;
	g->files[g->nfiles++] = *file;
	return 0;
}

int owners__group_fd(struct owners *o, enum owners_kind group, const struct owners_key *key, int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	return owners__group_file(o, group, key,
				  &(struct owners_key){.dev = st.st_dev, .ino = st.st_ino});
}

static int key_cmp(const void *a, const void *b)
{
	const struct owners_key *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

/* Drop the references of files (sorted) that are not in keep (sorted; may be NULL). */
static void unref_missing(struct owners *o, const struct owners_key *files, size_t n,
			  const struct owners_key *keep, size_t nkeep)
{
	size_t j = 0;

	for (size_t i = 0; i < n; i++) {
		while (j < nkeep && key_cmp(&keep[j], &files[i]) < 0)
			j++;
		if (j < nkeep && !key_cmp(&keep[j], &files[i]))
			continue;
		file_unref(o, &files[i]);
	}
}

int owners__set_files(struct owners *o, uint32_t pid, const struct owners_key *files, size_t n)
{
	struct owners_key *set = NULL;
	uint64_t k = pid;
	struct proc *p;
	size_t m = 0;
	int err = 0;

	if (n) {
		set = malloc(n * sizeof(*set));
		if (!set)
			return -ENOMEM;
		memcpy(set, files, n * sizeof(*set));
		qsort(set, n, sizeof(*set), key_cmp);
		for (size_t i = 0; i < n; i++)
			if (!m || key_cmp(&set[m - 1], &set[i]))
				set[m++] = set[i];
	}
	/* New references before old ones go: a file in both never drops to none. */
	for (size_t i = 0; i < m; i++) {
		err = file_ref(o, &set[i]);
		if (err) {
			unref_missing(o, set, i, NULL, 0);
			free(set);
			return err;
		}
	}
	if (hashmap__upsert(o->procs, (void **)&p, &k, NULL)) {
		unref_missing(o, set, m, NULL, 0);
		free(set);
		return -ENOMEM;
	}
	unref_missing(o, p->files, p->nfiles, NULL, 0);
	free(p->files);
	p->files = set;
	p->nfiles = (uint32_t)m;
	return 0;
}

void owners__release(struct owners *o, uint32_t pid)
{
	uint64_t k = pid;
	struct proc *p = hashmap__find(o->procs, &k);
	struct proc copy;

	if (!p)
		return;
	copy = *p;
	hashmap__delete(o->procs, &k);
	unref_missing(o, copy.files, copy.nfiles, NULL, 0);
	free(copy.files);
	for (unsigned i = 0; i < NGROUPS; i++)
		if (copy.in[i])
			group_add(o, i ? OWNERS_IMAGE : OWNERS_ROOT, &copy.group[i], -1);
}

int owners__fork(struct owners *o, uint32_t child, uint32_t parent)
{
	uint64_t k = parent;
	struct proc *pp, from;
	int err = 0;

	if (child == parent)
		return 0;
	owners__release(o, child);
	pp = hashmap__find(o->procs, &k);
	if (!pp)
		return 0; /* a parent we know nothing of: nor of the child */
	from = *pp;	  /* pp moves when the child is inserted */
	err = owners__set_files(o, child, from.files, from.nfiles);
	for (unsigned i = 0; i < NGROUPS && !err; i++)
		if (from.in[i])
			err = owners__join(o, child, i ? OWNERS_IMAGE : OWNERS_ROOT,
					   &from.group[i]);
	return err;
}

/* Keys of the entries of h whose value test says are gone (gathered first: deleting moves
 * entries under an iteration). */
static int gather(struct hashmap *h, size_t key_size, bool (*gone)(const void *val), void **out,
		  size_t *n)
{
	const void *k;
	void *v, *keys;
	size_t it = 0, count = 0;

	*out = NULL;
	*n = 0;
	while (hashmap__next(h, &it, &k, &v))
		count += gone(v);
	if (!count)
		return 0;
	keys = malloc(count * key_size);
	if (!keys)
		return -ENOMEM;
	it = 0;
	count = 0;
	while (hashmap__next(h, &it, &k, &v))
		if (gone(v))
			memcpy((char *)keys + count++ * key_size, k, key_size);
	*out = keys;
	*n = count;
	return 0;
}

static bool group_gone(const void *val)
{
	return !((const struct group *)val)->npids;
}

static bool file_gone(const void *val)
{
	return !*(const uint32_t *)val;
}

int owners__sweep(struct owners *o, owners_gone_fn fn, void *ctx)
{
	struct group_key *groups;
	struct owners_key *files;
	size_t ngroups, nfiles;
	int err;

	err = gather(o->groups, sizeof(*groups), group_gone, (void **)&groups, &ngroups);
	if (err)
		return err;
	for (size_t i = 0; i < ngroups; i++) {
		struct group *g = hashmap__find(o->groups, &groups[i]);

		for (uint32_t j = 0; g && j < g->nfiles; j++)
			file_unref(o, &g->files[j]);
		if (g)
			free(g->files);
		hashmap__delete(o->groups, &groups[i]);
		fn(ctx, (enum owners_kind)groups[i].kind, &groups[i].key);
	}
	free(groups);
	err = gather(o->files, sizeof(*files), file_gone, (void **)&files, &nfiles);
	if (err)
		return err;
	for (size_t i = 0; i < nfiles; i++) {
		hashmap__delete(o->files, &files[i]);
		fn(ctx, OWNERS_FILE, &files[i]);
	}
	free(files);
	return (int)(ngroups + nfiles);
}

unsigned owners__file_refs(const struct owners *o, const struct owners_key *file)
{
	const uint32_t *refs = hashmap__find(o->files, file);

	return refs ? *refs : 0;
}

unsigned owners__group_pids(const struct owners *o, enum owners_kind group,
			    const struct owners_key *key)
{
	struct group_key gk = group_key(group, key);
	const struct group *g = hashmap__find(o->groups, &gk);

	return g ? g->npids : 0;
}

size_t owners__files_of(const struct owners *o, uint32_t pid, const struct owners_key **out)
{
	uint64_t k = pid;
	const struct proc *p = hashmap__find(o->procs, &k);

	*out = p ? p->files : NULL;
	return p ? p->nfiles : 0;
}

int owners__pids_of(const struct owners *o, const struct owners_key *file, uint32_t **out,
		    size_t *n)
{
	uint32_t *pids = NULL, *grown;
	size_t it = 0, cnt = 0, cap = 0;
	const uint64_t *k;
	struct proc *p;

	while (hashmap__next(o->procs, &it, (const void **)&k, (void **)&p)) {
		if (!bsearch(file, p->files, p->nfiles, sizeof(*file), key_cmp))
			continue;
		if (cnt == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(pids, cap * sizeof(*pids));
			if (!grown) {
				free(pids);
				return -ENOMEM;
			}
			pids = grown;
		}
		pids[cnt++] = (uint32_t)*k;
	}
	*out = pids;
	*n = cnt;
	return 0;
}
