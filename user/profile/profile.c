// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "prof_stack.h"
#include "util/hashmap.h"

/*
 * Dedup keys hold interned string pointers: equal strings share one pointer, so comparing
 * pointers (memcmp of the key) compares contents.  Keys are zeroed before filling so their
 * padding never differs.
 */
struct mapping_key {
	uint64_t start, limit, offset;
	const char *file;
};

struct function_key {
	const char *name, *system_name, *file;
	int64_t start_line;
};

struct location_key {
	uint64_t address;
	uint32_t mapping_id, function_id;
	int64_t line;
};

/* A stack has no fixed size, so samples are keyed by a hash of everything that identifies
 * them plus a probe number; the rare 64-bit collision moves on to the next probe. */
struct sample_key {
	uint64_t hash;
	uint64_t probe;
};

struct profile_index {
	struct hashmap *mappings;  /* mapping_key -> uint32_t id */
	struct hashmap *functions; /* function_key -> uint32_t id */
	struct hashmap *locations; /* location_key -> uint32_t id */
	struct hashmap *samples;   /* sample_key -> uint32_t index into samples */
	struct hashmap *processes; /* uint32_t pid -> uint32_t index into processes */
	uint32_t cap_mappings, cap_functions, cap_locations, cap_samples;
	uint32_t cap_comments, cap_counters, cap_processes, cap_labels;
};

/* Make room for one more element in a dynamic array of elem-sized items. */
static int grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	uint32_t new_cap;
	void *tmp;

	if (n < *cap)
		return 0;
	if (*cap >= UINT32_MAX / 2)
		return -E2BIG; /* ids are 32-bit */
	new_cap = *cap ? *cap * 2 : 16;
	tmp = reallocarray(*arr, new_cap, elem);
	if (!tmp)
		return -ENOMEM;
	*arr = tmp;
	*cap = new_cap;
	return 0;
}

int profile__new(struct profile **out, const char *mode)
{
	struct profile *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	p->index = calloc(1, sizeof(*p->index));
	if (!p->index) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = strpool__new(&p->strings);
	if (err)
		goto cleanup;
	err = hashmap__new(&p->index->mappings, sizeof(struct mapping_key), sizeof(uint32_t));
	if (err)
		goto cleanup;
	err = hashmap__new(&p->index->functions, sizeof(struct function_key), sizeof(uint32_t));
	if (err)
		goto cleanup;
	err = hashmap__new(&p->index->locations, sizeof(struct location_key), sizeof(uint32_t));
	if (err)
		goto cleanup;
	err = hashmap__new(&p->index->samples, sizeof(struct sample_key), sizeof(uint32_t));
	if (err)
		goto cleanup;
	err = hashmap__new(&p->index->processes, sizeof(uint32_t), sizeof(uint32_t));
	if (err)
		goto cleanup;
	p->mode = profile__intern(p, mode);
	if (!p->mode) {
		err = -ENOMEM;
		goto cleanup;
	}
	*out = p;
	return 0;
cleanup:
	profile__free(p);
	return err;
}

void profile__free(struct profile *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nsamples; i++)
		free(p->samples[i].loc_ids);
	free(p->samples);
	free(p->processes);
	free(p->locations);
	free(p->functions);
	free(p->mappings);
	free(p->counters);
	free(p->labels);
	free(p->comments);
	if (p->index) {
		hashmap__free(p->index->mappings);
		hashmap__free(p->index->functions);
		hashmap__free(p->index->locations);
		hashmap__free(p->index->samples);
		hashmap__free(p->index->processes);
		free(p->index);
	}
	strpool__free(p->strings);
	free(p);
}

const char *profile__intern(struct profile *p, const char *s)
{
	return strpool__intern(p->strings, s ? s : "");
}

int profile__add_type(struct profile *p, const char *type, const char *unit)
{
	struct profile_value_type *t;

	if (p->ntypes >= PROFILE_MAX_VALUES)
		return -E2BIG;
	t = &p->types[p->ntypes];
	t->type = profile__intern(p, type);
	t->unit = profile__intern(p, unit);
	if (!t->type || !t->unit)
		return -ENOMEM;
	p->ntypes++;
	return 0;
}

int profile__mapping(struct profile *p, uint32_t *out, const struct profile_mapping *m)
{
	struct profile_index *ix = p->index;
	struct mapping_key key;
	struct profile_mapping *nm;
	const char *file, *build_id;
	bool created;
	uint32_t *id;
	int err;

	file = profile__intern(p, m->file);
	build_id = profile__intern(p, m->build_id);
	if (!file || !build_id)
		return -ENOMEM;
	memset(&key, 0, sizeof(key));
	key.start = m->start;
	key.limit = m->limit;
	key.offset = m->offset;
	key.file = file;
	/* Grow first so a failure leaves no key pointing past the array. */
	err = grow((void **)&p->mappings, &ix->cap_mappings, p->nmappings, sizeof(*p->mappings));
	if (err)
		return err;
	err = hashmap__upsert(ix->mappings, (void **)&id, &key, &created);
	if (err)
		return err;
	if (created) {
		nm = &p->mappings[p->nmappings++];
		*nm = *m;
		nm->file = file;
		nm->build_id = build_id;
		*id = p->nmappings;
	} else if (m->has_functions || (*build_id && !*p->mappings[*id - 1].build_id)) {
		/* A later sighting may know more (symbols loaded since, build id read). */
		nm = &p->mappings[*id - 1];
		nm->has_functions |= m->has_functions;
		if (*build_id && !*nm->build_id)
			nm->build_id = build_id;
	}
	*out = *id;
	return 0;
}

int profile__function(struct profile *p, uint32_t *out, const char *name, const char *system_name,
		      const char *file, int64_t start_line)
{
	struct profile_index *ix = p->index;
	struct function_key key;
	bool created;
	uint32_t *id;
	int err;

	memset(&key, 0, sizeof(key));
	key.name = profile__intern(p, name);
	key.system_name = profile__intern(p, system_name);
	key.file = profile__intern(p, file);
	key.start_line = start_line;
	if (!key.name || !key.system_name || !key.file)
		return -ENOMEM;
	err = grow((void **)&p->functions, &ix->cap_functions, p->nfunctions,
		   sizeof(*p->functions));
	if (err)
		return err;
	err = hashmap__upsert(ix->functions, (void **)&id, &key, &created);
	if (err)
		return err;
	if (created) {
		p->functions[p->nfunctions++] = (struct profile_function){
			.name = key.name,
			.system_name = key.system_name,
			.file = key.file,
			.start_line = start_line,
		};
		*id = p->nfunctions;
	}
	*out = *id;
	return 0;
}

int profile__location(struct profile *p, uint32_t *out, uint64_t address, uint32_t mapping_id,
		      uint32_t function_id, int64_t line)
{
	struct profile_index *ix = p->index;
	struct location_key key;
	bool created;
	uint32_t *id;
	int err;

	/* Writers index the arrays with these ids without checking again. */
	if (mapping_id > p->nmappings || function_id > p->nfunctions)
		return -EINVAL;
	memset(&key, 0, sizeof(key));
	key.address = address;
	key.mapping_id = mapping_id;
	key.function_id = function_id;
	key.line = line;
	err = grow((void **)&p->locations, &ix->cap_locations, p->nlocations,
		   sizeof(*p->locations));
	if (err)
		return err;
	err = hashmap__upsert(ix->locations, (void **)&id, &key, &created);
	if (err)
		return err;
	if (created) {
		p->locations[p->nlocations++] = (struct profile_location){
			.address = address,
			.mapping_id = mapping_id,
			.function_id = function_id,
			.line = line,
		};
		*id = p->nlocations;
	}
	*out = *id;
	return 0;
}

int profile__inline_pair(struct profile *p, uint32_t outer, uint32_t inner)
{
	/* Stacks are built leaf first: the inlined function's location is the older one. */
	if (!inner || inner >= outer || outer > p->nlocations)
		return -EINVAL;
	p->locations[outer - 1].inner = inner;
	p->locations[inner - 1].inlined = true;
	return 0;
}

static uint64_t sample_hash(uint32_t pid, uint32_t tid, const char *comm, const char *process,
			    const uint32_t *loc_ids, uint32_t nlocs, uint32_t flags,
			    const char *state)
{
	struct {
		uint32_t pid, tid;
		const char *comm, *process, *state;
		uint32_t nlocs, partial;
	} head;
	uint64_t h;

	memset(&head, 0, sizeof(head));
	head.pid = pid;
	head.tid = tid;
	head.comm = comm;
	head.process = process;
	head.nlocs = nlocs;
	head.partial = flags;
	head.state = state;
	h = hash_bytes(&head, sizeof(head));
	if (nlocs)
		h ^= hash_bytes(loc_ids, nlocs * sizeof(*loc_ids)) * 0x9e3779b97f4a7c15ULL;
	return h;
}

static const char *sample_gil(uint32_t flags)
{
	if (flags & PROFILE_SAMPLE_GIL_HELD)
		return "held";
	return flags & PROFILE_SAMPLE_GIL_RELEASED ? "released" : NULL;
}

static bool sample_equal(const struct profile_sample *s, uint32_t pid, uint32_t tid,
			 const char *comm, const char *process, const uint32_t *loc_ids,
			 uint32_t nlocs, uint32_t flags, const char *state)
{
	return s->pid == pid && s->tid == tid && s->comm == comm && s->process == process &&
	       s->partial == !!(flags & PROFILE_SAMPLE_PARTIAL) && s->gil == sample_gil(flags) &&
	       s->state == state && s->nlocs == nlocs &&
	       (!nlocs || memcmp(s->loc_ids, loc_ids, nlocs * sizeof(*loc_ids)) == 0);
}

int profile__set_process(struct profile *p, const struct profile_process *pp)
{
	struct profile_index *ix = p->index;
	struct profile_process *dst;
	const char *cid, *cg;
	uint32_t *idx;
	bool created;
	int err;

	cid = profile__intern(p, pp->container_id);
	cg = profile__intern(p, pp->cgroup);
	if (!cid || !cg)
		return -ENOMEM;
	err = grow((void **)&p->processes, &ix->cap_processes, p->nprocesses,
		   sizeof(*p->processes));
	if (!err)
		err = hashmap__upsert(ix->processes, (void **)&idx, &pp->pid, &created);
	if (err)
		return err;
	if (created)
		*idx = p->nprocesses++;
	dst = &p->processes[*idx];
	*dst = *pp;
	dst->container_id = cid;
	dst->cgroup = cg;
	return 0;
}

const struct profile_process *profile__process(const struct profile *p, uint32_t pid)
{
	const uint32_t *idx = hashmap__find(p->index->processes, &pid);

	return idx ? &p->processes[*idx] : NULL;
}

int profile__add_sample(struct profile *p, uint32_t pid, uint32_t tid, const char *comm,
			const char *process, const uint32_t *loc_ids, uint32_t nlocs,
			const int64_t *values, uint32_t flags)
{
	return profile__add_sample_state(p, pid, tid, comm, process, loc_ids, nlocs, values, flags,
					 NULL);
}

int profile__add_sample_state(struct profile *p, uint32_t pid, uint32_t tid, const char *comm,
			      const char *process, const uint32_t *loc_ids, uint32_t nlocs,
			      const int64_t *values, uint32_t flags, const char *state)
{
	struct profile_index *ix = p->index;
	struct profile_sample *s;
	struct sample_key key;
	uint32_t *idx;
	bool created;
	int err;

	for (uint32_t i = 0; i < nlocs; i++)
		if (!loc_ids[i] || loc_ids[i] > p->nlocations)
			return -EINVAL;
	comm = profile__intern(p, comm);
	process = profile__intern(p, process);
	if (!comm || !process)
		return -ENOMEM;
	/* Interned: equal states are equal pointers. */
	if (state && !(state = profile__intern(p, state)))
		return -ENOMEM;
	err = grow((void **)&p->samples, &ix->cap_samples, p->nsamples, sizeof(*p->samples));
	if (err)
		return err;

	/* Partial stacks stay apart from complete ones: the `stack` label must not lie. */
	key.hash = sample_hash(pid, tid, comm, process, loc_ids, nlocs, flags, state);
	for (key.probe = 0;; key.probe++) {
		err = hashmap__upsert(ix->samples, (void **)&idx, &key, &created);
		if (err)
			return err;
		if (created)
			break;
		s = &p->samples[*idx];
		if (sample_equal(s, pid, tid, comm, process, loc_ids, nlocs, flags, state)) {
			for (uint32_t i = 0; i < p->ntypes; i++)
				s->values[i] += values[i];
			p->last_sample = *idx;
			return 0;
		}
	}

	s = &p->samples[p->nsamples];
	memset(s, 0, sizeof(*s));
	if (nlocs) {
		s->loc_ids = malloc(nlocs * sizeof(*loc_ids));
		if (!s->loc_ids) {
			hashmap__delete(ix->samples, &key);
			return -ENOMEM;
		}
		memcpy(s->loc_ids, loc_ids, nlocs * sizeof(*loc_ids));
	}
	s->pid = pid;
	s->tid = tid;
	s->comm = comm;
	s->process = process;
	s->nlocs = nlocs;
	s->partial = flags & PROFILE_SAMPLE_PARTIAL;
	s->gil = sample_gil(flags);
	s->state = state;
	for (uint32_t i = 0; i < p->ntypes; i++)
		s->values[i] = values[i];
	p->last_sample = *idx = p->nsamples++;
	return 0;
}

int profile__add_comment(struct profile *p, const char *fmt, ...)
{
	const char *interned;
	char *s = NULL;
	va_list ap;
	int err, n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	interned = profile__intern(p, s);
	free(s);
	if (!interned)
		return -ENOMEM;
	err = grow((void **)&p->comments, &p->index->cap_comments, p->ncomments,
		   sizeof(*p->comments));
	if (err)
		return err;
	p->comments[p->ncomments++] = interned;
	return 0;
}

int profile__add_label(struct profile *p, const char *key, const char *str, int64_t num,
		       bool series)
{
	struct profile_label l = {.key = profile__intern(p, key), .num = num, .series = series};
	int err;

	if (str)
		l.str = profile__intern(p, str);
	if (!l.key || (str && !l.str))
		return -ENOMEM;
	err = grow((void **)&p->labels, &p->index->cap_labels, p->nlabels, sizeof(*p->labels));
	if (err)
		return err;
	p->labels[p->nlabels++] = l;
	return 0;
}

int profile__add_counter_kind(struct profile *p, const char *name, const char *desc, uint64_t value,
			      enum prof_counter_kind kind)
{
	struct profile_counter c = {
		.name = profile__intern(p, name),
		.desc = profile__intern(p, desc),
		.value = value,
		.kind = kind,
	};
	int err;

	if (!c.name || !c.desc)
		return -ENOMEM;
	err = grow((void **)&p->counters, &p->index->cap_counters, p->ncounters,
		   sizeof(*p->counters));
	if (err)
		return err;
	p->counters[p->ncounters++] = c;
	return 0;
}

int profile__add_counter(struct profile *p, const char *name, const char *desc, uint64_t value)
{
	return profile__add_counter_kind(p, name, desc, value, PROF_KIND_DROP);
}

int profile__add_stat(struct profile *p, const char *name, const char *desc, uint64_t value)
{
	return profile__add_counter_kind(p, name, desc, value, PROF_KIND_EVENT);
}

const char *profile__location_name(const struct profile *p, uint32_t loc_id, char *buf, size_t len)
{
	const struct profile_location *loc;
	const struct profile_function *fn;
	const struct profile_mapping *m;
	const char *file, *base;

	if (!loc_id || loc_id > p->nlocations) {
		snprintf(buf, len, "[invalid location %" PRIu32 "]", loc_id);
		return buf;
	}
	loc = &p->locations[loc_id - 1];
	if (loc->function_id) {
		fn = &p->functions[loc->function_id - 1];
		if (fn->name && *fn->name)
			return fn->name;
		if (fn->system_name && *fn->system_name)
			return fn->system_name;
	}
	if (!loc->mapping_id) {
		snprintf(buf, len, "[unknown] 0x%" PRIx64, loc->address);
		return buf;
	}
	/* A file's frame: named by its file offset, stable across runs and hosts (the symbolizer
	 * names those it resolves by their function's; this is for any other). */
	m = &p->mappings[loc->mapping_id - 1];
	file = m->file;
	base = file ? strrchr(file, '/') : NULL;
	base = base ? base + 1 : file ? file : "";
	if (*base && loc->address >= m->start && loc->address < m->limit)
		snprintf(buf, len, "%s+0x%" PRIx64, base, loc->address - m->start + m->offset);
	else
		snprintf(buf, len, "[unknown] 0x%" PRIx64 " (%s)", loc->address, base);
	return buf;
}

/* "[…frames cut]": the symbolizer's name for the cut word of a deep stack. */
static bool is_cut_name(const char *name)
{
	size_t n = name ? strlen(name) : 0, end = strlen(PROF_STACK_CUT_NAME_END);

	return n > end && name[0] == '[' && !strcmp(name + n - end, PROF_STACK_CUT_NAME_END);
}

enum profile_frame_kind profile__location_kind(const struct profile *p, uint32_t loc_id)
{
	const struct profile_location *loc;

	if (!loc_id || loc_id > p->nlocations)
		return PROFILE_FRAME_NATIVE;
	loc = &p->locations[loc_id - 1];
	if (loc->mapping_id && loc->mapping_id <= p->nmappings &&
	    !strcmp(p->mappings[loc->mapping_id - 1].file, "[kernel.kallsyms]"))
		return PROFILE_FRAME_KERNEL;
	if (!loc->address && loc->function_id && loc->function_id <= p->nfunctions &&
	    !loc->mapping_id && is_cut_name(p->functions[loc->function_id - 1].name))
		return PROFILE_FRAME_CUT;
	if (!loc->address && loc->function_id)
		return PROFILE_FRAME_INTERP;
	return PROFILE_FRAME_NATIVE;
}

int64_t profile__type_total(const struct profile *p, uint32_t t)
{
	int64_t sum = 0;

	for (uint32_t i = 0; i < p->nsamples; i++)
		sum += p->samples[i].values[t];
	return sum;
}

int profile__type_index(const struct profile *p, const char *name)
{
	for (uint32_t i = 0; i < p->ntypes; i++)
		if (!strcmp(p->types[i].type, name))
			return (int)i;
	return -ENOENT;
}

uint32_t profile__shown_type(const struct profile *p, uint32_t t, int64_t *inuse)
{
	char twin[64];
	int64_t in, alloc;
	int a;

	*inuse = -1;
	if (t >= p->ntypes || strncmp(p->types[t].type, "inuse_", 6))
		return t;
	snprintf(twin, sizeof(twin), "alloc_%s", p->types[t].type + 6);
	a = profile__type_index(p, twin);
	if (a < 0)
		return t;
	in = profile__type_total(p, t);
	alloc = profile__type_total(p, (uint32_t)a);
	if (alloc <= 0 || (double)in >= (double)alloc * PROFILE_INUSE_TINY)
		return t;
	*inuse = in < 0 ? 0 : in;
	return (uint32_t)a;
}
