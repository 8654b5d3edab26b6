// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/otlp.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/hashmap.h"
#include "util/protobuf.h"

/* Field numbers, opentelemetry-proto v1.11.0. */
enum {
	REQ_RESOURCE_PROFILES = 1,
	REQ_DICTIONARY = 2,

	DICT_MAPPING = 1,
	DICT_LOCATION = 2,
	DICT_FUNCTION = 3,
	DICT_LINK = 4,
	DICT_STRING = 5,
	DICT_ATTRIBUTE = 6,
	DICT_STACK = 7,

	RP_RESOURCE = 1,
	RP_SCOPE_PROFILES = 2,
	RESOURCE_ATTRIBUTES = 1,
	KV_KEY = 1,
	KV_VALUE = 2,
	ANY_STRING = 1,
	ANY_INT = 3,
	SP_SCOPE = 1,
	SP_PROFILES = 2,
	SCOPE_NAME = 1,
	SCOPE_VERSION = 2,

	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLES = 2,
	PROFILE_TIME_UNIX_NANO = 3,
	PROFILE_DURATION_NANO = 4,
	PROFILE_PERIOD_TYPE = 5,
	PROFILE_PERIOD = 6,
	VT_TYPE = 1,
	VT_UNIT = 2,

	SAMPLE_STACK = 1,
	SAMPLE_ATTRIBUTES = 2,
	SAMPLE_VALUES = 4,

	MAPPING_START = 1,
	MAPPING_LIMIT = 2,
	MAPPING_OFFSET = 3,
	MAPPING_FILENAME = 4,
	MAPPING_ATTRIBUTES = 5,
	STACK_LOCATIONS = 1,
	LOCATION_MAPPING = 1,
	LOCATION_ADDRESS = 2,
	LOCATION_LINES = 3,
	LINE_FUNCTION = 1,
	LINE_LINE = 2,
	FUNCTION_NAME = 1,
	FUNCTION_SYSTEM_NAME = 2,
	FUNCTION_FILENAME = 3,
	FUNCTION_START_LINE = 4,
	KVU_KEY = 1,
	KVU_VALUE = 2,

	RESP_PARTIAL_SUCCESS = 1,
	PARTIAL_REJECTED = 1,
	PARTIAL_MESSAGE = 2,
};

/* Attributes a sample carries, at most: pid, tid, two names, the executable's path, state, gil,
 * thread_name, partial, and the profile's own labels (an OOM kill's: a few). */
#define SAMPLE_ATTRS_MAX 24

/*
 * One dictionary table: each entry's encoding (a string's bytes, a message's fields) kept once,
 * found again by content, so equal entries share an index.  Entry 0 is the empty encoding: ""
 * or the zero message, as the specification asks.
 */
struct table {
	struct hashmap *index; /* {hash, probe} -> entry */
	struct pbuf bytes;     /* the encodings, back to back */
	size_t *off;	       /* entry i is bytes[off[i], off[i + 1]) */
	uint32_t n, cap;
};

struct table_key {
	uint64_t hash, probe;
};

struct dict {
	struct table mapping, location, function, link, string, attribute, stack;
};

static int table_init(struct table *t)
{
	int err = hashmap__new(&t->index, sizeof(struct table_key), sizeof(uint32_t));

	pbuf__init(&t->bytes);
	t->cap = 64;
	t->off = malloc((t->cap + 1) * sizeof(*t->off));
	if (err || !t->off)
		return -ENOMEM;
	t->off[0] = 0;
	t->off[1] = 0;
	t->n = 1; /* the zero entry */
	return 0;
}

static void table_release(struct table *t)
{
	hashmap__free(t->index);
	pbuf__release(&t->bytes);
	free(t->off);
}

/* *out: the index of the entry encoded as data[0, len), added when new. */
static int table_add(struct table *t, int32_t *out, const void *data, size_t len)
{
	struct table_key k = {hash_bytes(data, len), 0};
	uint32_t *slot;
	bool created;
	int err;

	if (!len) {
		*out = 0;
		return 0;
	}
	for (;; k.probe++) {
		uint32_t *v = hashmap__find(t->index, &k);

		if (!v)
			break;
		if (t->off[*v + 1] - t->off[*v] == len &&
		    !memcmp(t->bytes.data + t->off[*v], data, len)) {
			*out = (int32_t)*v;
			return 0;
		}
	}
	if (t->n >= INT32_MAX)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t *o = realloc(t->off, (2 * (size_t)t->cap + 1) * sizeof(*o));

		if (!o)
			return -ENOMEM;
		t->off = o;
		t->cap *= 2;
	}
	err = pbuf__append(&t->bytes, data, len);
	if (!err)
		err = hashmap__upsert(t->index, (void **)&slot, &k, &created);
	if (err)
		return err;
	*slot = t->n;
	t->off[t->n + 1] = t->bytes.len;
	*out = (int32_t)t->n++;
	return 0;
}

/* Adds the message in m (then emptied for reuse). */
static int table_add_msg(struct table *t, int32_t *out, struct pbuf *m)
{
	int err = pbuf__err(m);

	if (!err)
		err = table_add(t, out, m->data, m->len);
	pbuf__reset(m);
	return err;
}

static int str(struct dict *d, int32_t *out, const char *s)
{
	return table_add(&d->string, out, s ? s : "", s ? strlen(s) : 0);
}

static void write_table(struct pbuf *b, uint32_t field, const struct table *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		pb__field_bytes(b, field, t->bytes.data + t->off[i], t->off[i + 1] - t->off[i]);
}

/* A KeyValueAndUnit of the attribute table: a string value when s is set, else the integer. */
static int attr(struct dict *d, int32_t *out, struct pbuf *tmp, const char *key, const char *s,
		int64_t num)
{
	struct pbuf any;
	int32_t k;
	int err = str(d, &k, key);

	if (err)
		return err;
	pbuf__init(&any);
	if (s)
		pb__field_string(&any, ANY_STRING, s);
	else
		pb__field_varint(&any, ANY_INT, (uint64_t)num);
	pb__field_varint(tmp, KVU_KEY, (uint64_t)k);
	pb__field_message(tmp, KVU_VALUE, &any);
	pbuf__release(&any);
	return table_add_msg(&d->attribute, out, tmp);
}

/* A resource's KeyValue (resources carry their attributes inline). */
static void resource_attr(struct pbuf *res, const char *key, const char *value)
{
	struct pbuf kv, any;

	pbuf__init(&kv);
	pbuf__init(&any);
	pb__field_string(&any, ANY_STRING, value);
	pb__field_string(&kv, KV_KEY, key);
	pb__field_message(&kv, KV_VALUE, &any);
	pb__field_message(res, RESOURCE_ATTRIBUTES, &kv);
	pbuf__release(&kv);
	pbuf__release(&any);
}

/* The profile's own tables mapped to the dictionary's indexes (ids are 1-based, 0 = none). */
struct part_maps {
	int32_t *mapping, *function, *location;
};

static int add_mappings(struct dict *d, struct part_maps *m, const struct profile *p,
			struct pbuf *tmp)
{
	int err = 0;

	for (uint32_t i = 0; i < p->nmappings && !err; i++) {
		const struct profile_mapping *pm = &p->mappings[i];
		int32_t file, build_id = 0;

		err = str(d, &file, pm->file);
		if (!err && pm->build_id && *pm->build_id)
			err = attr(d, &build_id, tmp, "process.executable.build_id.gnu",
				   pm->build_id, 0);
		if (err)
			break;
		if (pm->start)
			pb__field_varint(tmp, MAPPING_START, pm->start);
		if (pm->limit)
			pb__field_varint(tmp, MAPPING_LIMIT, pm->limit);
		if (pm->offset)
			pb__field_varint(tmp, MAPPING_OFFSET, pm->offset);
		if (file)
			pb__field_varint(tmp, MAPPING_FILENAME, (uint64_t)file);
		if (build_id)
			pb__field_packed_u32(tmp, MAPPING_ATTRIBUTES, (uint32_t *)&build_id, 1);
		err = table_add_msg(&d->mapping, &m->mapping[i + 1], tmp);
	}
	for (uint32_t i = 0; i < p->nfunctions && !err; i++) {
		const struct profile_function *f = &p->functions[i];
		int32_t name, sys, file;

		err = str(d, &name, f->name);
		if (!err)
			err = str(d, &sys, f->system_name);
		if (!err)
			err = str(d, &file, f->file);
		if (err)
			break;
		if (name)
			pb__field_varint(tmp, FUNCTION_NAME, (uint64_t)name);
		/* As pprof.c: a system name only when it is not the name. */
		if (sys && sys != name)
			pb__field_varint(tmp, FUNCTION_SYSTEM_NAME, (uint64_t)sys);
		if (file)
			pb__field_varint(tmp, FUNCTION_FILENAME, (uint64_t)file);
		if (f->start_line)
			pb__field_varint(tmp, FUNCTION_START_LINE, (uint64_t)f->start_line);
		err = table_add_msg(&d->function, &m->function[i + 1], tmp);
	}
	for (uint32_t i = 0; i < p->nlocations && !err; i++) {
		const struct profile_location *l = &p->locations[i];
		uint32_t mid = l->mapping_id, fid = l->function_id;
		int32_t mi = mid && mid <= p->nmappings ? m->mapping[mid] : 0;
		int32_t fi = fid && fid <= p->nfunctions ? m->function[fid] : 0;

		if (mi)
			pb__field_varint(tmp, LOCATION_MAPPING, (uint64_t)mi);
		if (l->address)
			pb__field_varint(tmp, LOCATION_ADDRESS, l->address);
		if (fi) {
			struct pbuf line;

			pbuf__init(&line);
			pb__field_varint(&line, LINE_FUNCTION, (uint64_t)fi);
			if (l->line)
				pb__field_varint(&line, LINE_LINE, (uint64_t)l->line);
			pb__field_message(tmp, LOCATION_LINES, &line);
			pbuf__release(&line);
		}
		err = table_add_msg(&d->location, &m->location[i + 1], tmp);
	}
	return err;
}

/* The sample's stack and attributes as dictionary indexes. */
static int sample_refs(struct dict *d, const struct part_maps *m, const struct profile *p,
		       const struct profile_sample *s, struct pbuf *tmp, int32_t *stack,
		       int32_t *attrs, uint32_t *nattrs)
{
	const char *state_key = p->state_key ? p->state_key : "state";
	uint32_t n = 0;
	int err = 0;

	for (uint32_t i = 0; i < s->nlocs && !err; i++) {
		uint32_t id = s->loc_ids[i];
		int32_t li = id && id <= p->nlocations ? m->location[id] : 0;

		err = pb__varint(tmp, (uint64_t)li);
	}
	if (!err && tmp->len) {
		struct pbuf st;

		pbuf__init(&st);
		pb__field_bytes(&st, STACK_LOCATIONS, tmp->data, tmp->len);
		pbuf__reset(tmp);
		err = table_add_msg(&d->stack, stack, &st);
		pbuf__release(&st);
	} else {
		*stack = 0;
	}
	pbuf__reset(tmp);
	if (!err && s->pid)
		err = attr(d, &attrs[n++], tmp, "process.pid", NULL, s->pid);
	if (!err && s->process && *s->process)
		err = attr(d, &attrs[n++], tmp, "process.executable.name", s->process, 0);
	if (!err && s->exe && *s->exe)
		err = attr(d, &attrs[n++], tmp, "process.executable.path", s->exe, 0);
	if (!err && s->tid)
		err = attr(d, &attrs[n++], tmp, "thread.id", NULL, s->tid);
	if (!err && s->comm && *s->comm)
		err = attr(d, &attrs[n++], tmp, "thread.name", s->comm, 0);
	if (!err && s->state)
		err = attr(d, &attrs[n++], tmp, state_key, s->state, 0);
	if (!err && s->gil)
		err = attr(d, &attrs[n++], tmp, "gil", s->gil, 0);
	if (!err && s->thread_name)
		err = attr(d, &attrs[n++], tmp, "thread_name", s->thread_name, 0);
	if (!err && s->partial)
		err = attr(d, &attrs[n++], tmp, "partial", "true", 0);
	for (uint32_t i = 0; i < p->nlabels && n < SAMPLE_ATTRS_MAX && !err; i++)
		err = attr(d, &attrs[n++], tmp, p->labels[i].key, p->labels[i].str,
			   p->labels[i].num);
	*nattrs = n;
	return err;
}

static int value_type(struct dict *d, struct pbuf *out, uint32_t field,
		      const struct profile_value_type *vt)
{
	struct pbuf m;
	int32_t t, u;
	int err = str(d, &t, vt->type);

	if (!err)
		err = str(d, &u, vt->unit);
	if (err)
		return err;
	pbuf__init(&m);
	if (t)
		pb__field_varint(&m, VT_TYPE, (uint64_t)t);
	if (u)
		pb__field_varint(&m, VT_UNIT, (uint64_t)u);
	err = pb__field_message(out, field, &m);
	pbuf__release(&m);
	return err;
}

/* One ResourceProfiles: the part's resource, one Profile per sample type. */
static int encode_part(struct dict *d, struct pbuf *out, const struct otlp_part *part,
		       const char *host)
{
	const struct profile *p = part->profile;
	struct part_maps m = {
		calloc(p->nmappings + 1, sizeof(int32_t)),
		calloc(p->nfunctions + 1, sizeof(int32_t)),
		calloc(p->nlocations + 1, sizeof(int32_t)),
	};
	/* The messages being built, and each sample type's samples. */
	enum { RES, SCOPE, SP, RP, TMP, SAMPLES, NBUF = SAMPLES + PROFILE_MAX_VALUES };
	struct pbuf b[NBUF], *tmp = &b[TMP], *samples = &b[SAMPLES];
	int err = -ENOMEM;

	for (int i = 0; i < NBUF; i++)
		pbuf__init(&b[i]);
	if (!m.mapping || !m.function || !m.location)
		goto cleanup;
	err = add_mappings(d, &m, p, tmp);
	/* Each sample once into every type's list where its value is not zero. */
	for (uint32_t i = 0; i < p->nsamples && !err; i++) {
		const struct profile_sample *s = &p->samples[i];
		int32_t stack, attrs[SAMPLE_ATTRS_MAX];
		uint32_t nattrs;

		err = sample_refs(d, &m, p, s, tmp, &stack, attrs, &nattrs);
		for (uint32_t t = 0; t < p->ntypes && t < PROFILE_MAX_VALUES && !err; t++) {
			if (!s->values[t])
				continue;
			pbuf__reset(tmp);
			if (stack)
				pb__field_varint(tmp, SAMPLE_STACK, (uint64_t)stack);
			pb__field_packed_u32(tmp, SAMPLE_ATTRIBUTES, (uint32_t *)attrs, nattrs);
			pb__field_packed_i64(tmp, SAMPLE_VALUES, &s->values[t], 1);
			err = pb__field_message(&samples[t], PROFILE_SAMPLES, tmp);
		}
		pbuf__reset(tmp);
	}
	if (err)
		goto cleanup;

	resource_attr(&b[RES], "service.name", part->service);
	if (part->is_container)
		resource_attr(&b[RES], "container.id", part->service);
	if (host && *host)
		resource_attr(&b[RES], "host.name", host);
	pb__field_message(&b[RP], RP_RESOURCE, &b[RES]);
	pb__field_string(&b[SCOPE], SCOPE_NAME, "bpftrace-prof");
	pb__field_string(&b[SCOPE], SCOPE_VERSION, PROF_VERSION);
	pb__field_message(&b[SP], SP_SCOPE, &b[SCOPE]);
	for (uint32_t t = 0; t < p->ntypes && t < PROFILE_MAX_VALUES && !err; t++) {
		pbuf__reset(tmp);
		err = value_type(d, tmp, PROFILE_SAMPLE_TYPE, &p->types[t]);
		pbuf__append(tmp, samples[t].data, samples[t].len);
		pb__field_fixed64(tmp, PROFILE_TIME_UNIX_NANO, (uint64_t)p->time_nanos);
		if (p->duration_nanos > 0)
			pb__field_varint(tmp, PROFILE_DURATION_NANO, (uint64_t)p->duration_nanos);
		if (!err && p->period_type.type)
			err = value_type(d, tmp, PROFILE_PERIOD_TYPE, &p->period_type);
		if (p->period)
			pb__field_varint(tmp, PROFILE_PERIOD, (uint64_t)p->period);
		if (!err)
			err = pb__field_message(&b[SP], SP_PROFILES, tmp);
	}
	pb__field_message(&b[RP], RP_SCOPE_PROFILES, &b[SP]);
	if (!err)
		err = pb__field_message(out, REQ_RESOURCE_PROFILES, &b[RP]);
cleanup:
	free(m.mapping);
	free(m.function);
	free(m.location);
	for (int i = 0; i < NBUF; i++)
		pbuf__release(&b[i]);
	return err;
}

int otlp__encode(struct pbuf *out, const struct otlp_part *parts, uint32_t nparts, const char *host)
{
	struct dict d = {0};
	struct table *all[] = {&d.mapping, &d.location,	 &d.function, &d.link,
			       &d.string,  &d.attribute, &d.stack};
	struct pbuf dict;
	int err = 0;

	pbuf__init(&dict);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && !err; i++)
		err = table_init(all[i]);
	for (uint32_t i = 0; i < nparts && !err; i++)
		err = encode_part(&d, out, &parts[i], host);
	if (!err) {
		/* Our tables in the order of the fields (DICT_MAPPING = 1 …). */
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			write_table(&dict, (uint32_t)(DICT_MAPPING + i), all[i]);
		err = pb__field_message(out, REQ_DICTIONARY, &dict);
	}
	if (!err)
		err = pbuf__err(out);
	pbuf__release(&dict);
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		table_release(all[i]);
	return err;
}

/* ---- the response ---- */

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* The fields of [p, end): partial_success's two taken (partial: inside it), every other field
 * skipped; groups (wire types 3 and 4), field 0 and anything cut short are -EBADMSG.  Nesting is
 * one level: the depth is bounded by the message, not by the bytes. */
static int walk(const uint8_t *p, const uint8_t *end, struct otlp_response *r, bool partial)
{
	while (p < end) {
		uint64_t tag, v = 0;
		int err = read_varint(&p, end, &tag);

		if (err || !(tag >> 3) || tag >> 32)
			return -EBADMSG;
		switch (tag & 7) {
		case PB_WIRE_VARINT:
			if (read_varint(&p, end, &v))
				return -EBADMSG;
			if (partial && tag >> 3 == PARTIAL_REJECTED)
				r->rejected_profiles = (int64_t)v;
			break;
		case PB_WIRE_I64:
			if (end - p < 8)
				return -EBADMSG;
			p += 8;
			break;
		case 5: /* I32 */
			if (end - p < 4)
				return -EBADMSG;
			p += 4;
			break;
		case PB_WIRE_LEN:
			if (read_varint(&p, end, &v))
				return -EBADMSG;
			/* A body kept only in part: partial_success read as far as it goes. */
			if (v > (uint64_t)(end - p) &&
			    tag >> 3 == (partial ? PARTIAL_MESSAGE : RESP_PARTIAL_SUCCESS))
				v = (uint64_t)(end - p);
			if (v > (uint64_t)(end - p))
				return -EBADMSG;
			if (!partial && tag >> 3 == RESP_PARTIAL_SUCCESS) {
				err = walk(p, p + v, r, true);
				if (err)
					return err;
			} else if (partial && tag >> 3 == PARTIAL_MESSAGE) {
				size_t n = v < sizeof(r->message) - 1 ? v : sizeof(r->message) - 1;

				for (size_t i = 0; i < n; i++)
					r->message[i] = isprint(p[i]) ? (char)p[i] : '?';
				r->message[n] = 0;
			}
			p += v;
			break;
		default:
			return -EBADMSG;
		}
	}
	return 0;
}

int otlp__parse_response(struct otlp_response *out, const void *data, size_t len)
{
	const uint8_t *p = data;

	memset(out, 0, sizeof(*out));
	if (len > OTLP_RESPONSE_MAX)
		len = OTLP_RESPONSE_MAX;
	if (!len)
		return 0;
	return walk(p, p + len, out, false);
}

bool otlp__status_retryable(long status)
{
	return status == 429 || status == 502 || status == 503 || status == 504;
}

/* ---- configuration ---- */

int otlp__url(char **out, const char *url, bool exact)
{
	size_t n = strlen(url), plen = strlen(OTLP_PROFILES_PATH);

	while (n > 8 && url[n - 1] == '/')
		n--;
	if (exact || (n >= plen && !strncmp(url + n - plen, OTLP_PROFILES_PATH, plen)))
		*out = exact ? strdup(url) : strndup(url, n);
	else if (asprintf(out, "%.*s%s", (int)n, url, OTLP_PROFILES_PATH) < 0)
		*out = NULL;
	return *out ? 0 : -ENOMEM;
}

const char *otlp__env_endpoint(bool *exact)
{
	const char *v = getenv(OTLP_ENV_PROFILES_ENDPOINT);

	*exact = v && *v;
	if (*exact)
		return v;
	v = getenv(OTLP_ENV_ENDPOINT);
	return v && *v ? v : NULL;
}

void otlp__free_headers(char **lines)
{
	for (size_t i = 0; lines && lines[i]; i++) {
		explicit_bzero(lines[i], strlen(lines[i]));
		free(lines[i]);
	}
	free(lines);
}

static int hexval(char c)
{
	return isdigit((unsigned char)c)    ? c - '0'
	       : isxdigit((unsigned char)c) ? (tolower((unsigned char)c) - 'a' + 10)
					    : -1;
}

/* One "key=value" entry (trimmed) into "key: value" with the value's %XX decoded. */
static int header_line(char **out, const char *e, size_t len)
{
	const char *eq;
	size_t klen, i, o;
	char *line;

	while (len && isspace((unsigned char)*e))
		e++, len--;
	while (len && isspace((unsigned char)e[len - 1]))
		len--;
	eq = memchr(e, '=', len);
	if (!eq)
		return -EINVAL;
	klen = (size_t)(eq - e);
	while (klen && isspace((unsigned char)e[klen - 1]))
		klen--;
	if (!klen)
		return -EINVAL;
	for (i = 0; i < klen; i++)
		if (!isalnum((unsigned char)e[i]) && !strchr("!#$%&'*+-.^_`|~", e[i]))
			return -EINVAL;
	line = malloc(len + 3);
	if (!line)
		return -ENOMEM;
	memcpy(line, e, klen);
	memcpy(line + klen, ": ", 2);
	o = klen + 2;
	for (i = (size_t)(eq - e) + 1; i < len && isspace((unsigned char)e[i]); i++)
		;
	for (; i < len; i++) {
		char c = e[i];

		if (c == '%' && i + 2 < len && hexval(e[i + 1]) >= 0 && hexval(e[i + 2]) >= 0) {
			c = (char)(hexval(e[i + 1]) << 4 | hexval(e[i + 2]));
			i += 2;
		}
		if (c == '\r' || c == '\n' || !c) {
			explicit_bzero(line, o);
			free(line);
			return -EINVAL;
		}
		line[o++] = c;
	}
	line[o] = 0;
	*out = line;
	return 0;
}

int otlp__parse_headers(char ***out, const char *spec)
{
	size_t n = 0, cap = 1;
	char **lines;
	int err = 0;

	for (const char *s = spec; *s; s++)
		cap += *s == ',';
	lines = calloc(cap + 1, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (const char *s = spec; *s && !err;) {
		size_t len = strcspn(s, ",");
		size_t blank = 0;

		while (blank < len && isspace((unsigned char)s[blank]))
			blank++;
		if (blank < len)
			err = header_line(&lines[n++], s, len);
		s += len;
		if (*s)
			s++;
	}
	if (err) {
		otlp__free_headers(lines);
		return err;
	}
	*out = lines;
	return 0;
}
