// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/strpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

/* Keyed by (hash, probe) so that the rare 64-bit collision gets its own slot. */
struct strpool_key {
	uint64_t hash;
	uint64_t probe;
};

struct strpool {
	struct hashmap *map; /* strpool_key -> char * */
};

int strpool__new(struct strpool **out)
{
	struct strpool *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	err = hashmap__new(&p->map, sizeof(struct strpool_key), sizeof(char *));
	if (err) {
		free(p);
		return err;
	}
	*out = p;
	return 0;
}

void strpool__free(struct strpool *p)
{
	size_t it = 0;
	void *val;

	if (!p)
		return;
	while (hashmap__next(p->map, &it, NULL, &val))
		free(*(char **)val);
	hashmap__free(p->map);
	free(p);
}

const char *strpool__intern(struct strpool *p, const char *s)
{
	struct strpool_key key = {.hash = hash_bytes(s ? s : "", s ? strlen(s) : 0)};

	if (!s)
		return NULL;
	for (;; key.probe++) {
		bool created;
		char **val;

		if (hashmap__upsert(p->map, (void **)&val, &key, &created))
			return NULL;
		if (created) {
			*val = strdup(s);
			if (!*val) {
				hashmap__delete(p->map, &key);
				return NULL;
			}
			return *val;
		}
		if (strcmp(*val, s) == 0)
			return *val;
	}
}
