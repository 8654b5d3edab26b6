// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "procinfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

#define NAME_LEN 16

struct name_key {
	uint32_t pid, tid; /* tid 0 = the process */
};

struct procinfo {
	char root[256];
	struct hashmap *names; /* name_key -> char[NAME_LEN] */
};

int procinfo__new(struct procinfo **out, const char *proc_root)
{
	struct procinfo *pi = calloc(1, sizeof(*pi));
	int err;

	if (!pi)
		return -ENOMEM;
	snprintf(pi->root, sizeof(pi->root), "%s", proc_root ? proc_root : "/proc");
	err = hashmap__new(&pi->names, sizeof(struct name_key), NAME_LEN);
	if (err) {
		free(pi);
		return err;
	}
	*out = pi;
	return 0;
}

void procinfo__free(struct procinfo *pi)
{
	if (!pi)
		return;
	hashmap__free(pi->names);
	free(pi);
}

static void read_name(const char *path, char *out)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return;
	n = fread(out, 1, NAME_LEN - 1, f);
	fclose(f);
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
}

static void note_one(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	struct name_key k = {pid, tid};
	char path[320], *name;
	bool created;

	if (hashmap__upsert(pi->names, (void **)&name, &k, &created) || !created)
		return;
	if (tid)
		snprintf(path, sizeof(path), "%s/%u/task/%u/comm", pi->root, pid, tid);
	else
		snprintf(path, sizeof(path), "%s/%u/comm", pi->root, pid);
	read_name(path, name);
}

void procinfo__note(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	note_one(pi, pid, tid);
	note_one(pi, pid, 0);
}

void procinfo__set_comm(struct procinfo *pi, uint32_t pid, uint32_t tid, const char *comm)
{
	struct name_key k = {pid, tid};
	char *name;

	if (hashmap__upsert(pi->names, (void **)&name, &k, NULL))
		return;
	snprintf(name, NAME_LEN, "%s", comm);
	/* The main thread's name is the process name ps shows. */
	if (tid == pid &&
	    hashmap__upsert(pi->names, (void **)&name, &(struct name_key){pid, 0}, NULL) == 0)
		snprintf(name, NAME_LEN, "%s", comm);
}

static const char *lookup(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	struct name_key k = {pid, tid};
	const char *name = hashmap__find(pi->names, &k);

	return name && *name ? name : NULL;
}

const char *procinfo__comm(struct procinfo *pi, uint32_t pid, uint32_t tid)
{
	const char *n = lookup(pi, pid, tid);

	return n ? n : procinfo__process(pi, pid);
}

const char *procinfo__process(struct procinfo *pi, uint32_t pid)
{
	const char *n = lookup(pi, pid, 0);

	if (!n)
		n = lookup(pi, pid, pid);
	return n ? n : "?";
}
