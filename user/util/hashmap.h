/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Open-addressing hash table with fixed-size keys and values stored inline (linear probing,
 * backward-shift deletion).  Keys are compared with memcmp, so callers zero their padding.
 * Value pointers stay valid until the next insertion.
 */
#ifndef PROF_HASHMAP_H
#define PROF_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap;

int hashmap__new(struct hashmap **out, size_t key_size, size_t val_size);
void hashmap__free(struct hashmap *h);
size_t hashmap__count(const struct hashmap *h);
/* Pointer to the value stored for key, or NULL. */
void *hashmap__find(const struct hashmap *h, const void *key);
/* Find or insert key; a new value is zero-filled and *created (if given) set to true. */
int hashmap__upsert(struct hashmap *h, void **out, const void *key, bool *created);
/* 0 when removed, -ENOENT when absent. */
int hashmap__delete(struct hashmap *h, const void *key);
/*
 * Remove every entry match(key, val, ctx) chooses; gone (may be NULL) is handed each just before
 * it goes, and may change other tables, not this one.  All are chosen before any goes (removing
 * moves entries under an iterator).  0, or -ENOMEM with nothing removed and gone not called.
 */
int hashmap__delete_if(struct hashmap *h,
		       bool (*match)(const void *key, const void *val, void *ctx),
		       void (*gone)(const void *key, void *val, void *ctx), void *ctx);
/* Iterate: size_t it = 0; while (hashmap__next(h, &it, &k, &v)) …  (no insertions meanwhile) */
bool hashmap__next(const struct hashmap *h, size_t *it, const void **key, void **val);

uint64_t hash_bytes(const void *data, size_t len);

#endif /* PROF_HASHMAP_H */
