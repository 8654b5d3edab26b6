// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The loader's set of attached files (struct loader_attach_key -> struct attached): what each
 * file, hook or process got, and its links, detached by file, by process or one by one. */
#include "attach/loader.h"
#include "attach/loader_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/hashmap.h"
#include "util/log.h"

int loader__destroy_links(struct loader *l, struct attached *a)
{
	int n = (int)a->nlinks;

	for (size_t i = 0; i < a->nlinks; i++)
		bpf_link__destroy(a->links[i]);
	free(a->links);
	a->links = NULL;
	a->nlinks = a->cap = 0;
	for (uint32_t i = 0; i < a->nfds; i++)
		close(a->fds[i]);
	n += (int)a->nfds;
	a->nfds = 0;
	l->stats.links -= (uint64_t)n;
	return n;
}

int loader__attached(struct loader *l, const struct loader_attach_key *key, int32_t **slot,
		     bool *created)
{
	struct attached *a;
	bool is_new = false;
	int err = hashmap__upsert(l->attached, (void **)&a, key, &is_new);

	if (err)
		return err;
	if (is_new)
		a->nfds = 0;
	if (created)
		*created = is_new;
	*slot = &a->value;
	return 0;
}

const int32_t *loader__attached_find(const struct loader *l, const struct loader_attach_key *key)
{
	const struct attached *a = hashmap__find(l->attached, key);

	return a ? &a->value : NULL;
}

int loader__links_push(struct bpf_link ***links, size_t *nlinks, size_t *cap, size_t first_cap,
		       struct bpf_link *link)
{
	if (*nlinks == *cap) {
		size_t grown = *cap ? 2 * *cap : first_cap;
		struct bpf_link **n = realloc(*links, grown * sizeof(*n));

		if (!n) {
			bpf_link__destroy(link);
			return -ENOMEM;
		}
		*links = n;
		*cap = grown;
	}
	(*links)[(*nlinks)++] = link;
	return 0;
}

int loader__attached_link(struct loader *l, const struct loader_attach_key *key,
			  struct bpf_link *link)
{
	struct attached *a = hashmap__find(l->attached, key);

	if (!a) {
		bpf_link__destroy(link);
		return -ENOENT;
	}
	if (loader__links_push(&a->links, &a->nlinks, &a->cap, 4, link))
		return -ENOMEM;
	l->stats.links++;
	return 0;
}

int loader__detach(struct loader *l, const struct loader_attach_key *key)
{
	struct attached *a = hashmap__find(l->attached, key);
	int n;

	if (!a)
		return -ENOENT;
	n = loader__destroy_links(l, a);
	hashmap__delete(l->attached, key);
	return n;
}

struct detach_pid {
	struct loader *l;
	int64_t pid;
	uint32_t kind;
	int n;
};

static bool detach_pid_match(const void *key, const void *val, void *ctx)
{
	const struct loader_attach_key *k = key;
	const struct detach_pid *d = ctx;

	(void)val;
	return k->pid == d->pid && k->kind == d->kind;
}

static void detach_pid_gone(const void *key, void *val, void *ctx)
{
	struct detach_pid *d = ctx;

	(void)key;
	d->n += loader__destroy_links(d->l, val);
}

int loader__detach_pid(struct loader *l, int64_t pid, uint32_t kind)
{
	struct detach_pid d = {.l = l, .pid = pid, .kind = kind};
	int err = hashmap__delete_if(l->attached, detach_pid_match, detach_pid_gone, &d);

	return err ? err : d.n;
}

int loader__detach_file(struct loader *l, uint64_t dev, uint64_t ino)
{
	static const uint32_t kinds[] = {LOADER_ATTACH_HEAP,	LOADER_ATTACH_CALLS,
					 LOADER_ATTACH_DL_HOOK, LOADER_ATTACH_EXIT_HOOK,
					 LOADER_ATTACH_OTEL,	LOADER_ATTACH_HEAP_SPLIT};
	int total = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct loader_attach_key key = {
			.dev = dev, .ino = ino, .pid = -1, .kind = kinds[i]};
		int n = loader__detach(l, &key);

		if (n > 0)
			total += n;
	}
	if (total) {
		l->stats.files_detached++;
		pr_debug("detached %d probes from file %llu:%llu: nothing in scope maps it\n",
			 total, (unsigned long long)dev, (unsigned long long)ino);
	}
	return total;
}
