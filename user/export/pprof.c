// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/pprof.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/gzfile.h"
#include "util/hashmap.h"
#include "util/protobuf.h"

/* profile.proto field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,

	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,

	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,

	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,

	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,

	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,

	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
	FUNCTION_START_LINE = 5,
};

/* Compressed output goes out whenever this much protobuf has accumulated, so memory stays
 * bounded by the chunk, not by the profile. */
#define FLUSH_BYTES (1u << 20)

/*
 * The string table: index 0 is "", each distinct string once.  Keyed by content (hash plus
 * probe, as strpool does) because some strings are ours (label keys, counter comments) and
 * not interned in the profile's pool.
 */
struct strtab_key {
	uint64_t hash;
	uint64_t probe;
};

struct strtab_val {
	const char *s;
	int64_t index;
};

struct strtab {
	struct hashmap *map; /* strtab_key -> strtab_val */
	const char **strs;   /* by index */
	size_t n, cap;
	struct strpool *own; /* strings formatted here */
};

struct writer {
	const struct profile *p;
	struct strtab st;
	struct pbuf top; /* top-level fields not yet compressed */
	struct pbuf msg; /* one message being built */
	struct pbuf sub; /* a message nested in msg */
	struct gzfile *gz;
	int64_t key_pid, key_tid, key_comm, key_process, key_stack, key_state, str_partial;
	int64_t key_gil, key_thread_name;
	int64_t key_ns_pid, key_container_id, key_cgroup;
	uint32_t *ids; /* a sample's location ids, its inlined ones joined to their caller's */
	bool *alone;   /* by location id: an inlined one a sample holds without its caller */
};

/* Inlined functions a Location holds at most (deeper chains: the innermost left out). */
#define MAX_LINES 64

/* In sample s, location loc_ids[i] is inlined into the next one: that one's Location says it. */
static bool joined(const struct profile *p, const struct profile_sample *s, uint32_t i)
{
	uint32_t id = s->loc_ids[i];

	return p->locations[id - 1].inlined && i + 1 < s->nlocs &&
	       p->locations[s->loc_ids[i + 1] - 1].inner == id;
}

static int strtab__index(struct strtab *st, int64_t *out, const char *s)
{
	struct strtab_key key;
	struct strtab_val *val;
	bool created;
	int err;

	if (!s)
		s = "";
	key.hash = hash_bytes(s, strlen(s));
	for (key.probe = 0;; key.probe++) {
		err = hashmap__upsert(st->map, (void **)&val, &key, &created);
		if (err)
			return err;
		if (!created && strcmp(val->s, s) != 0)
			continue;
		if (!created) {
			*out = val->index;
			return 0;
		}
		break;
	}
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 1024;
		const char **tmp = reallocarray(st->strs, cap, sizeof(*tmp));

		if (!tmp) {
			hashmap__delete(st->map, &key);
			return -ENOMEM;
		}
		st->strs = tmp;
		st->cap = cap;
	}
	val->s = s;
	val->index = (int64_t)st->n;
	st->strs[st->n++] = s;
	*out = val->index;
	return 0;
}

/* Compresses what the top-level buffer holds once it is big enough (always when final). */
static int drain(struct writer *w, bool final)
{
	int err = pbuf__err(&w->top);

	if (err)
		return err;
	if (!final && w->top.len < FLUSH_BYTES)
		return 0;
	err = gzfile__write(w->gz, w->top.data, w->top.len);
	pbuf__reset(&w->top);
	if (!err && final)
		err = gzfile__finish(w->gz);
	return err;
}

static int put_value_type(struct writer *w, uint32_t field, const struct profile_value_type *t)
{
	int64_t type, unit;
	int err;

	err = strtab__index(&w->st, &type, t->type);
	if (err)
		return err;
	err = strtab__index(&w->st, &unit, t->unit);
	if (err)
		return err;
	pbuf__reset(&w->msg);
	if (type)
		pb__field_varint(&w->msg, VALUE_TYPE_TYPE, type);
	if (unit)
		pb__field_varint(&w->msg, VALUE_TYPE_UNIT, unit);
	return pb__field_message(&w->top, field, &w->msg);
}

/* Appends one Label to w->msg: a string one when s is given, else a number. */
static int put_label(struct writer *w, int64_t key, const char *s, int64_t num)
{
	int64_t str;
	int err;

	pbuf__reset(&w->sub);
	pb__field_varint(&w->sub, LABEL_KEY, key);
	if (s) {
		err = strtab__index(&w->st, &str, s);
		if (err)
			return err;
		pb__field_varint(&w->sub, LABEL_STR, str);
	} else {
		pb__field_varint(&w->sub, LABEL_NUM, (uint64_t)num);
	}
	return pb__field_message(&w->msg, SAMPLE_LABEL, &w->sub);
}

/* Container and host modes: where the process runs (none of these in -p / -- CMD runs). */
static int put_process_labels(struct writer *w, const struct profile_process *pp)
{
	int err = 0;

	if (!pp)
		return 0;
	if (pp->ns_pid && pp->ns_pid != pp->pid)
		err = put_label(w, w->key_ns_pid, NULL, pp->ns_pid);
	if (!err && pp->container_id[0])
		err = put_label(w, w->key_container_id, pp->container_id, 0);
	if (!err && pp->cgroup[0])
		err = put_label(w, w->key_cgroup, pp->cgroup, 0);
	return err;
}

static int put_sample(struct writer *w, const struct profile_sample *s)
{
	int err;

	uint32_t n = 0;

	for (uint32_t i = 0; i < s->nlocs; i++)
		if (!joined(w->p, s, i))
			w->ids[n++] = s->loc_ids[i];
	pbuf__reset(&w->msg);
	pb__field_packed_u32(&w->msg, SAMPLE_LOCATION_ID, w->ids, n);
	pb__field_packed_i64(&w->msg, SAMPLE_VALUE, s->values, w->p->ntypes);
	err = put_label(w, w->key_pid, NULL, s->pid);
	if (!err)
		err = put_label(w, w->key_tid, NULL, s->tid);
	if (!err)
		err = put_label(w, w->key_comm, s->comm, 0);
	if (!err)
		err = put_label(w, w->key_process, s->process, 0);
	if (!err && s->partial)
		err = put_label(w, w->key_stack, "partial", 0);
	/* Only profiles with states have the key (offcpu); only Python samples the next two. */
	if (!err && s->state && !w->key_state)
		err = strtab__index(&w->st, &w->key_state,
				    w->p->state_key ? w->p->state_key : "state");
	if (!err && s->state)
		err = put_label(w, w->key_state, s->state, 0);
	if (!err && s->gil && !w->key_gil)
		err = strtab__index(&w->st, &w->key_gil, "gil");
	if (!err && s->gil)
		err = put_label(w, w->key_gil, s->gil, 0);
	if (!err && s->thread_name && !w->key_thread_name)
		err = strtab__index(&w->st, &w->key_thread_name, "thread_name");
	if (!err && s->thread_name)
		err = put_label(w, w->key_thread_name, s->thread_name, 0);
	if (!err)
		err = put_process_labels(w, profile__process(w->p, s->pid));
	for (uint32_t i = 0; !err && i < w->p->nlabels; i++) {
		const struct profile_label *l = &w->p->labels[i];
		int64_t key;

		err = strtab__index(&w->st, &key, l->key);
		if (!err)
			err = put_label(w, key, l->str, l->num);
	}
	if (err)
		return err;
	pb__field_message(&w->top, PROFILE_SAMPLE, &w->msg);
	return drain(w, false);
}

static int put_mapping(struct writer *w, uint32_t id, const struct profile_mapping *m)
{
	int64_t file, build_id;
	int err;

	err = strtab__index(&w->st, &file, m->file);
	if (!err)
		err = strtab__index(&w->st, &build_id, m->build_id);
	if (err)
		return err;
	pbuf__reset(&w->msg);
	pb__field_varint(&w->msg, MAPPING_ID, id);
	if (m->start)
		pb__field_varint(&w->msg, MAPPING_MEMORY_START, m->start);
	if (m->limit)
		pb__field_varint(&w->msg, MAPPING_MEMORY_LIMIT, m->limit);
	if (m->offset)
		pb__field_varint(&w->msg, MAPPING_FILE_OFFSET, m->offset);
	if (file)
		pb__field_varint(&w->msg, MAPPING_FILENAME, file);
	if (build_id)
		pb__field_varint(&w->msg, MAPPING_BUILD_ID, build_id);
	if (m->has_functions)
		pb__field_varint(&w->msg, MAPPING_HAS_FUNCTIONS, 1);
	pb__field_message(&w->top, PROFILE_MAPPING, &w->msg);
	return drain(w, false);
}

/*
 * A mapping's id on the wire: the main executable's mapping (p->main_mapping) is 1, those added
 * before it move up one, the rest keep theirs.
 */
static uint32_t wire_mapping(const struct profile *p, uint32_t id)
{
	if (!p->main_mapping || id > p->main_mapping)
		return id;
	return id == p->main_mapping ? 1 : id + 1;
}

static int put_location(struct writer *w, uint32_t id, const struct profile_location *l)
{
	pbuf__reset(&w->msg);
	pb__field_varint(&w->msg, LOCATION_ID, id);
	if (l->mapping_id)
		pb__field_varint(&w->msg, LOCATION_MAPPING_ID, wire_mapping(w->p, l->mapping_id));
	if (l->address)
		pb__field_varint(&w->msg, LOCATION_ADDRESS, l->address);
	/*
	 * A Line per function inlined here, innermost first (pprof's order), then its own.  No
	 * Line at all for an unsymbolized address: pprof then shows the address.
	 */
	{
		const struct profile_location *chain[MAX_LINES];
		uint32_t n = 0, at = id;

		chain[n++] = l;
		/* Inner locations come first in a stack: lower ids, so the walk ends. */
		while (n < MAX_LINES && l->inner && l->inner < at) {
			at = l->inner;
			l = &w->p->locations[at - 1];
			chain[n++] = l;
		}
		while (n--) {
			if (!chain[n]->function_id)
				continue;
			pbuf__reset(&w->sub);
			pb__field_varint(&w->sub, LINE_FUNCTION_ID, chain[n]->function_id);
			if (chain[n]->line)
				pb__field_varint(&w->sub, LINE_LINE, (uint64_t)chain[n]->line);
			pb__field_message(&w->msg, LOCATION_LINE, &w->sub);
		}
	}
	pb__field_message(&w->top, PROFILE_LOCATION, &w->msg);
	return drain(w, false);
}

static int put_function(struct writer *w, uint32_t id, const struct profile_function *fn)
{
	int64_t name, system_name, file;
	int err;

	err = strtab__index(&w->st, &name, fn->name);
	if (!err)
		err = strtab__index(&w->st, &system_name, fn->system_name);
	if (!err)
		err = strtab__index(&w->st, &file, fn->file);
	if (err)
		return err;
	pbuf__reset(&w->msg);
	pb__field_varint(&w->msg, FUNCTION_ID, id);
	if (name)
		pb__field_varint(&w->msg, FUNCTION_NAME, name);
	/*
	 * Only a system name of its own (a mangled one): pprof takes a function whose two names
	 * are one for a demangled C++ name and cuts what stands in <> and () from it, which left
	 * Python's <module>, <lambda> and <genexpr>, and Ruby's <main>, as empty names.
	 */
	if (system_name && system_name != name)
		pb__field_varint(&w->msg, FUNCTION_SYSTEM_NAME, system_name);
	if (file)
		pb__field_varint(&w->msg, FUNCTION_FILENAME, file);
	if (fn->start_line)
		pb__field_varint(&w->msg, FUNCTION_START_LINE, (uint64_t)fn->start_line);
	pb__field_message(&w->top, PROFILE_FUNCTION, &w->msg);
	return drain(w, false);
}

static int put_comments(struct writer *w)
{
	const struct profile *p = w->p;
	unsigned drops = 0;
	int64_t idx;
	int err;

	for (uint32_t i = 0; i < p->ncomments; i++) {
		err = strtab__index(&w->st, &idx, p->comments[i]);
		if (err)
			return err;
		pb__field_varint(&w->top, PROFILE_COMMENT, idx);
	}
	for (uint32_t i = 0; i < p->ncounters; i++) {
		const struct profile_counter *c = &p->counters[i];
		const char *s;
		char *tmp;

		/* Zeros are noise: a counter absent from the comments is 0.  Bookkeeping too:
		 * `go tool pprof -raw` and -comments show every comment to every reader. */
		if (!c->value || c->kind == PROF_KIND_BOOK)
			continue;
		drops += profile_counter__is_drop(c);
		if (asprintf(&tmp, "%s=%" PRIu64 " (%s)", c->name ? c->name : "", c->value,
			     c->desc ? c->desc : "") < 0)
			return -ENOMEM;
		s = strpool__intern(w->st.own, tmp);
		free(tmp);
		if (!s)
			return -ENOMEM;
		err = strtab__index(&w->st, &idx, s);
		if (err)
			return err;
		pb__field_varint(&w->top, PROFILE_COMMENT, idx);
	}
	if (!drops) {
		err = strtab__index(&w->st, &idx, "no drops");
		if (err)
			return err;
		pb__field_varint(&w->top, PROFILE_COMMENT, idx);
	}
	return drain(w, false);
}

static int put_header(struct writer *w)
{
	const struct profile *p = w->p;
	int64_t idx;
	int err;

	for (uint32_t i = 0; i < p->ntypes; i++) {
		err = put_value_type(w, PROFILE_SAMPLE_TYPE, &p->types[i]);
		if (err)
			return err;
	}
	if (p->ntypes && p->default_type < p->ntypes) {
		err = strtab__index(&w->st, &idx, p->types[p->default_type].type);
		if (err)
			return err;
		if (idx)
			pb__field_varint(&w->top, PROFILE_DEFAULT_SAMPLE_TYPE, idx);
	}
	if (p->time_nanos)
		pb__field_varint(&w->top, PROFILE_TIME_NANOS, (uint64_t)p->time_nanos);
	if (p->duration_nanos)
		pb__field_varint(&w->top, PROFILE_DURATION_NANOS, (uint64_t)p->duration_nanos);
	if (p->period_type.type && *p->period_type.type) {
		err = put_value_type(w, PROFILE_PERIOD_TYPE, &p->period_type);
		if (err)
			return err;
	}
	if (p->period)
		pb__field_varint(&w->top, PROFILE_PERIOD, (uint64_t)p->period);
	return drain(w, false);
}

static int writer_init(struct writer *w, const struct profile *p, FILE *f)
{
	int64_t idx;
	int err;

	memset(w, 0, sizeof(*w));
	w->p = p;
	pbuf__init(&w->top);
	pbuf__init(&w->msg);
	pbuf__init(&w->sub);
	err = hashmap__new(&w->st.map, sizeof(struct strtab_key), sizeof(struct strtab_val));
	if (err)
		return err;
	err = strpool__new(&w->st.own);
	if (err)
		return err;
	err = gzfile__new(&w->gz, f); /* pprof files on disk are gzip'd */
	if (err)
		return err;

	err = strtab__index(&w->st, &idx, ""); /* string_table[0] must be "" */
	if (!err)
		err = strtab__index(&w->st, &w->key_pid, "pid");
	if (!err)
		err = strtab__index(&w->st, &w->key_tid, "tid");
	if (!err)
		err = strtab__index(&w->st, &w->key_comm, "comm");
	if (!err)
		err = strtab__index(&w->st, &w->key_process, "process");
	if (!err)
		err = strtab__index(&w->st, &w->key_stack, "stack");
	/* Only container and host modes have them. */
	if (!err && w->p->nprocesses)
		err = strtab__index(&w->st, &w->key_ns_pid, "ns_pid");
	if (!err && w->p->nprocesses)
		err = strtab__index(&w->st, &w->key_container_id, "container_id");
	if (!err && w->p->nprocesses)
		err = strtab__index(&w->st, &w->key_cgroup, "cgroup");
	return err;
}

static void writer_release(struct writer *w)
{
	gzfile__free(w->gz);
	pbuf__release(&w->top);
	pbuf__release(&w->msg);
	pbuf__release(&w->sub);
	hashmap__free(w->st.map);
	free(w->st.strs);
	strpool__free(w->st.own);
	free(w->ids);
	free(w->alone);
}

int pprof__write(const struct profile *p, FILE *f)
{
	struct writer w;
	int err;

	err = writer_init(&w, p, f);
	if (err)
		goto cleanup;
	err = put_header(&w);
	if (err)
		goto cleanup;
	/* Which inlined locations a sample holds on their own (a stack cut between the two). */
	{
		uint32_t most = 1;

		for (uint32_t i = 0; i < p->nsamples; i++)
			most = p->samples[i].nlocs > most ? p->samples[i].nlocs : most;
		w.ids = malloc(most * sizeof(*w.ids));
		w.alone = calloc(p->nlocations + 1, sizeof(*w.alone));
		if (!w.ids || !w.alone) {
			err = -ENOMEM;
			goto cleanup;
		}
		for (uint32_t i = 0; i < p->nsamples; i++)
			for (uint32_t j = 0; j < p->samples[i].nlocs; j++)
				if (!joined(p, &p->samples[i], j))
					w.alone[p->samples[i].loc_ids[j]] = true;
	}
	for (uint32_t i = 0; i < p->nsamples; i++) {
		err = put_sample(&w, &p->samples[i]);
		if (err)
			goto cleanup;
	}
	/* In wire order: the main executable first. */
	if (p->main_mapping) {
		err = put_mapping(&w, 1, &p->mappings[p->main_mapping - 1]);
		if (err)
			goto cleanup;
	}
	for (uint32_t i = 0; i < p->nmappings; i++) {
		if (i + 1 == p->main_mapping)
			continue;
		err = put_mapping(&w, wire_mapping(p, i + 1), &p->mappings[i]);
		if (err)
			goto cleanup;
	}
	for (uint32_t i = 0; i < p->nlocations; i++) {
		/* An inlined function's location is in its caller's Location. */
		if (p->locations[i].inlined && !w.alone[i + 1])
			continue;
		err = put_location(&w, i + 1, &p->locations[i]);
		if (err)
			goto cleanup;
	}
	for (uint32_t i = 0; i < p->nfunctions; i++) {
		err = put_function(&w, i + 1, &p->functions[i]);
		if (err)
			goto cleanup;
	}
	err = put_comments(&w);
	if (err)
		goto cleanup;
	/* Last, once every index has been handed out (field order does not matter on the wire). */
	for (size_t i = 0; i < w.st.n; i++) {
		pb__field_string(&w.top, PROFILE_STRING_TABLE, w.st.strs[i]);
		err = drain(&w, false);
		if (err)
			goto cleanup;
	}
	err = drain(&w, true);
cleanup:
	writer_release(&w);
	return err;
}
