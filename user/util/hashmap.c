// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct hashmap {
	size_t key_size, val_size, slot_size;
	size_t val_off; /* values start 8-byte aligned (slots are), whatever the key size */
	size_t cap;	/* power of two */
	size_t count;
	unsigned char *used;
	unsigned char *slots;
};

uint64_t hash_bytes(const void *data, size_t len)
{
	/*
	 * Eight bytes a step (the consumer hashes a key per event: bytewise FNV showed up in its
	 * profile), the tail bytewise, then a 64-bit finaliser so low bits mix well for masking.
	 */
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ len;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static unsigned char *slot(const struct hashmap *h, size_t i)
{
	return h->slots + i * h->slot_size;
}

int hashmap__new(struct hashmap **out, size_t key_size, size_t val_size)
{
	struct hashmap *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->key_size = key_size;
	h->val_size = val_size;
	h->val_off = (key_size + 7) & ~(size_t)7;
	h->slot_size = (h->val_off + val_size + 7) & ~(size_t)7;
	*out = h;
	return 0;
}

void hashmap__free(struct hashmap *h)
{
	if (!h)
		return;
	free(h->used);
	free(h->slots);
	free(h);
}

size_t hashmap__count(const struct hashmap *h)
{
	return h->count;
}

/* used[] holds 0 for an empty slot, else a tag from the key's hash: most mismatches are
 * rejected without comparing keys. */
static unsigned char tag_of(uint64_t hash)
{
	return (unsigned char)((hash >> 56) | 1);
}

static size_t probe_hashed(const struct hashmap *h, const void *key, uint64_t hash, bool *found)
{
	size_t mask = h->cap - 1;
	size_t i = hash & mask;
	unsigned char tag = tag_of(hash);

	while (h->used[i]) {
		if (h->used[i] == tag && memcmp(slot(h, i), key, h->key_size) == 0) {
			*found = true;
			return i;
		}
		i = (i + 1) & mask;
	}
	*found = false;
	return i;
}

static size_t probe(const struct hashmap *h, const void *key, bool *found)
{
	return probe_hashed(h, key, hash_bytes(key, h->key_size), found);
}

void *hashmap__find(const struct hashmap *h, const void *key)
{
	bool found;
	size_t i;

	if (!h->count)
		return NULL;
	i = probe(h, key, &found);
	return found ? slot(h, i) + h->val_off : NULL;
}

static int grow(struct hashmap *h)
{
	size_t old_cap = h->cap, new_cap = old_cap ? old_cap * 2 : 64;
	unsigned char *old_used = h->used, *old_slots = h->slots;

	h->used = calloc(new_cap, 1);
	h->slots = malloc(new_cap * h->slot_size);
	if (!h->used || !h->slots) {
		free(h->used);
		free(h->slots);
		h->used = old_used;
		h->slots = old_slots;
		return -ENOMEM;
	}
	h->cap = new_cap;
	for (size_t i = 0; i < old_cap; i++) {
		bool found;
		size_t j;

		if (!old_used[i])
			continue;
		j = probe(h, old_slots + i * h->slot_size, &found);
		memcpy(slot(h, j), old_slots + i * h->slot_size, h->slot_size);
		h->used[j] = old_used[i];
	}
	free(old_used);
	free(old_slots);
	return 0;
}

int hashmap__upsert(struct hashmap *h, void **out, const void *key, bool *created)
{
	uint64_t hash;
	bool found;
	size_t i;
	int err;

	/* Keep the load factor under 1/2: probes stay short for the hot aggregation path. */
	if ((h->count + 1) * 2 > h->cap) {
		err = grow(h);
		if (err)
			return err;
	}
	hash = hash_bytes(key, h->key_size);
	i = probe_hashed(h, key, hash, &found);
	if (!found) {
		memcpy(slot(h, i), key, h->key_size);
		memset(slot(h, i) + h->key_size, 0, h->slot_size - h->key_size);
		h->used[i] = tag_of(hash);
		h->count++;
	}
	if (created)
		*created = !found;
	*out = slot(h, i) + h->val_off;
	return 0;
}

int hashmap__delete(struct hashmap *h, const void *key)
{
	size_t mask, i, j;
	bool found;

	if (!h->count)
		return -ENOENT;
	i = probe(h, key, &found);
	if (!found)
		return -ENOENT;
	mask = h->cap - 1;
	/* Backward-shift: pull later members of the cluster into the hole. */
	j = i;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!h->used[j])
			break;
		home = hash_bytes(slot(h, j), h->key_size) & mask;
		/* Move j into i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		memcpy(slot(h, i), slot(h, j), h->slot_size);
		h->used[i] = h->used[j];
		i = j;
	}
	h->used[i] = 0;
	h->count--;
	return 0;
}

int hashmap__delete_if(struct hashmap *h,
		       bool (*match)(const void *key, const void *val, void *ctx),
		       void (*gone)(const void *key, void *val, void *ctx), void *ctx)
{
	unsigned char *keys = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < h->cap; i++) {
		if (!h->used[i] || !match(slot(h, i), slot(h, i) + h->val_off, ctx))
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			unsigned char *k = realloc(keys, ncap * h->key_size);

			if (!k) {
				free(keys);
				return -ENOMEM;
			}
			keys = k;
			cap = ncap;
		}
		memcpy(keys + n++ * h->key_size, slot(h, i), h->key_size);
	}
	for (size_t i = 0; i < n; i++) {
		const unsigned char *k = keys + i * h->key_size;

		if (gone)
			gone(k, hashmap__find(h, k), ctx);
		hashmap__delete(h, k);
	}
	free(keys);
	return 0;
}

bool hashmap__next(const struct hashmap *h, size_t *it, const void **key, void **val)
{
	while (*it < h->cap) {
		size_t i = (*it)++;

		if (h->used[i]) {
			if (key)
				*key = slot(h, i);
			if (val)
				*val = slot(h, i) + h->val_off;
			return true;
		}
	}
	return false;
}
