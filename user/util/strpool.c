// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/strpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

/*
 * Keyed by the text's 64-bit hash; the rare strings that share one hash are chained.  A chain
 * (rather than probing hash+1, hash+2 …) lets a sweep free any string without breaking the path
 * to another.
 */
struct strnode {
	struct strnode *next;
	size_t len;
	char s[];
};

struct strpool {
	struct hashmap *map; /* uint64_t hash -> struct strnode * (chain head) */
	size_t count, bytes;
};

int strpool__new(struct strpool **out)
{
	struct strpool *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	err = hashmap__new(&p->map, sizeof(uint64_t), sizeof(struct strnode *));
	if (err) {
		free(p);
		return err;
	}
	*out = p;
	return 0;
}

static void free_chain(struct strnode *n)
{
	while (n) {
		struct strnode *next = n->next;

		free(n);
		n = next;
	}
}

void strpool__free(struct strpool *p)
{
	size_t it = 0;
	void *val;

	if (!p)
		return;
	while (hashmap__next(p->map, &it, NULL, &val))
		free_chain(*(struct strnode **)val);
	hashmap__free(p->map);
	free(p);
}

const char *strpool__intern(struct strpool *p, const char *s)
{
	struct strnode **head, *n;
	uint64_t hash;
	size_t len;

	if (!s)
		return NULL;
	len = strlen(s);
	hash = hash_bytes(s, len);
	if (hashmap__upsert(p->map, (void **)&head, &hash, NULL))
		return NULL;
	for (n = *head; n; n = n->next)
		if (n->len == len && memcmp(n->s, s, len) == 0)
			return n->s;
	n = malloc(sizeof(*n) + len + 1);
	if (!n) {
		if (!*head)
			hashmap__delete(p->map, &hash);
		return NULL;
	}
	n->len = len;
	memcpy(n->s, s, len + 1);
	n->next = *head;
	*head = n;
	p->count++;
	p->bytes += len + 1;
	return n->s;
}

void strpool__sweep(struct strpool *p, const struct hashmap *keep)
{
	uint64_t *empty = NULL;
	size_t it = 0, nempty = 0, cap = 0;
	const void *key;
	void *val;

	while (hashmap__next(p->map, &it, &key, &val)) {
		struct strnode **link = val, *n;

		while ((n = *link)) {
			const char *s = n->s;

			if (hashmap__find(keep, &s)) {
				link = &n->next;
				continue;
			}
			*link = n->next;
			p->count--;
			p->bytes -= n->len + 1;
			free(n);
		}
		if (*(struct strnode **)val)
			continue;
		/* Deleting now would shift entries the iteration has not reached into ones it has.
		 */
		if (nempty == cap) {
			size_t c = cap ? 2 * cap : 64;
			uint64_t *e = realloc(empty, c * sizeof(*e));

			if (!e)
				continue; /* an empty chain is harmless: intern fills it again */
			empty = e;
			cap = c;
		}
		memcpy(&empty[nempty++], key, sizeof(*empty));
	}
	for (size_t i = 0; i < nempty; i++)
		hashmap__delete(p->map, &empty[i]);
	free(empty);
}

size_t strpool__count(const struct strpool *p)
{
	return p->count;
}

size_t strpool__bytes(const struct strpool *p)
{
	return p->bytes;
}
