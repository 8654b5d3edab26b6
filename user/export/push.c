// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/push.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "export/otlp.h"
#include "export/pprof.h"
#include "export/push_auth.h"
#include "export/push_body.h"
#include "util/protobuf.h"
#include "export/spool.h"
#include "profile/profile.h"
#include "profile/split.h"
#include "util/clock.h"
#include "util/gzfile.h"
#include "util/log.h"

#define RESP_KEEP	  1024 /* bytes of a response body kept (message, OTLP partial_success) */
#define LABEL_MAX	  1024 /* bytes of a label name or value we send */
#define PUSH_EXTRA_LABELS 4    /* a profile's own series labels sent, at most */

struct push_job {
	struct spool_rec r; /* what is sent */

	unsigned tries;
	int64_t due_ms;			 /* monotonic ms before which it is not sent */
	char spool_name[SPOOL_NAME_LEN]; /* from the spool: its file, else "" */
	uint64_t spool_size;		 /* that file's size */

	CURL *easy; /* in flight when set */
	struct curl_slist *headers;
	char *url;
	void *body;
	size_t body_len;
	char resp[RESP_KEEP + 1];
	size_t resp_len;
	char errbuf[CURL_ERROR_SIZE];
};

struct push {
	struct push_opts o;
	char *url;  /* without a trailing '/' */
	char *host; /* the URL's host[:port], for messages */
	CURLM *multi;
	struct push_job **queue; /* live jobs: waiting or in flight */
	unsigned nqueue;
	struct push_job *spool_job; /* the one spooled file being sent */
	unsigned inflight;

	struct spool *spool; /* NULL without one */
	int64_t spool_due_ms;
	unsigned spool_backoff_ms;

	struct push_secrets sec;
	char *otlp_url;	     /* the endpoint, OTLP_PROFILES_PATH included */
	char **otlp_headers; /* "k: v" lines from OTEL_EXPORTER_OTLP_(PROFILES_)HEADERS */
	char hostname[256];
	bool logged_reject, logged_auth, logged_partial, failing;
	struct push_stats stats;
};

bool push__url_has_credentials(const char *url)
{
	const char *auth = strstr(url, "://");
	size_t n;

	auth = auth ? auth + 3 : url;
	n = strcspn(auth, "/?#");
	return memchr(auth, '@', n) != NULL;
}

/* Set once "otlp" is parsed: the target's own OTel variables stay its own otherwise. */
static bool otlp_env_ours;

bool push__is_secret_env(const char *entry)
{
	static const char *const otel[] = {OTLP_ENV_ENDPOINT, OTLP_ENV_HEADERS,
					   OTLP_ENV_PROFILES_ENDPOINT, OTLP_ENV_PROFILES_HEADERS};

	for (size_t i = 0; otlp_env_ours && i < sizeof(otel) / sizeof(otel[0]); i++)
		if (!strncmp(entry, otel[i], strlen(otel[i])) && entry[strlen(otel[i])] == '=')
			return true;
	return !strncmp(entry, PUSH_ENV_PREFIX, sizeof(PUSH_ENV_PREFIX) - 1);
}

const char *push__otlp_env_url(void)
{
	bool exact;

	return otlp__env_endpoint(&exact);
}

int push__parse_protocol(enum push_protocol *out, const char *s)
{
	otlp_env_ours = !strcmp(s, "otlp");
	if (!strcmp(s, "pyroscope"))
		*out = PUSH_PYROSCOPE;
	else if (!strcmp(s, "pyroscope-ingest"))
		*out = PUSH_PYROSCOPE_INGEST;
	else if (!strcmp(s, "parca"))
		*out = PUSH_PARCA;
	else if (!strcmp(s, "otlp"))
		*out = PUSH_OTLP;
	else
		return -EINVAL;
	return 0;
}

/* ---- jobs ---- */

static void job_end_transfer(struct push_job *j)
{
	curl_easy_cleanup(j->easy);
	j->easy = NULL;
	curl_slist_free_all(j->headers);
	j->headers = NULL;
	free(j->url);
	j->url = NULL;
	free(j->body);
	j->body = NULL;
	j->body_len = 0;
	j->resp_len = 0;
	j->resp[0] = 0;
	j->errbuf[0] = 0;
}

static void job_free(struct push_job *j)
{
	if (!j)
		return;
	job_end_transfer(j);
	spool_rec__clear(&j->r);
	free(j);
}

/* Control characters would break headers, query strings and our spool format. */
static char *clean_dup(const char *s, bool is_name)
{
	size_t n = strnlen(s, LABEL_MAX);
	char *d = malloc(n + 1);

	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (is_name)
			d[i] = isalnum(c) || c == '_' ? (char)c : '_';
		else
			d[i] = c < 0x20 || c == 0x7f ? '_' : (char)c;
	}
	d[n] = 0;
	return d;
}

static void make_id(char *out)
{
	uint8_t b[16];
	static uint64_t fallback;

	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != sizeof(b)) {
		uint64_t x = prof_mix64((uint64_t)clock__mono_ms() ^ ++fallback ^
					((uint64_t)getpid() << 32));
		uint64_t y = prof_mix64(x + 0x9e3779b97f4a7c15ULL);

		memcpy(b, &x, 8);
		memcpy(b + 8, &y, 8);
	}
	b[6] = (b[6] & 0x0f) | 0x40; /* version 4 */
	b[8] = (b[8] & 0x3f) | 0x80; /* RFC 4122 variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

static int job_new(struct push_job **out, const struct push_item *it)
{
	struct push_job *j = calloc(1, sizeof(*j));
	int err = -ENOMEM;

	if (!j)
		return -ENOMEM;
	j->r.name = clean_dup(it->name, true);
	j->r.data = malloc(it->len);
	j->r.labels = calloc(it->nlabels + 1, sizeof(*j->r.labels));
	if (!j->r.name || !j->r.data || !j->r.labels)
		goto cleanup;
	memcpy(j->r.data, it->data, it->len);
	j->r.len = it->len;
	for (uint32_t i = 0; i < it->nlabels; i++) {
		struct push_label *l = &j->r.labels[j->r.nlabels];

		l->name = clean_dup(it->labels[i].name, true);
		l->value = clean_dup(it->labels[i].value, false);
		j->r.nlabels++;
		if (!l->name || !l->value)
			goto cleanup;
	}
	j->r.from_ns = it->from_ns;
	j->r.until_ns = it->until_ns;
	make_id(j->r.id);
	*out = j;
	return 0;
cleanup:
	job_free(j);
	return err;
}

/* ---- transfers ---- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct push_job *j = arg;
	size_t len = size * n, room = RESP_KEEP - j->resp_len;

	/* Keep the start for the error message; swallow the rest. */
	if (room) {
		size_t k = len < room ? len : room;

		memcpy(j->resp + j->resp_len, data, k);
		j->resp_len += k;
		j->resp[j->resp_len] = 0;
	}
	return len;
}

/* As long as v is: a fixed buffer cut long tokens, and the backend answered 401 to every
 * profile.  curl copies the line; ours is wiped, it may hold a secret. */
static int add_header(struct curl_slist **list, const char *fmt, const char *v)
{
	struct curl_slist *n;
	char *line;
	int len;

	len = asprintf(&line, fmt, v);
	if (len < 0)
		return -ENOMEM;
	n = curl_slist_append(*list, line);
	explicit_bzero(line, (size_t)len);
	free(line);
	if (!n)
		return -ENOMEM;
	*list = n;
	return 0;
}

static int job_start(struct push *p, struct push_job *j)
{
	const char *ctype;
	CURL *e;
	int err;

	e = curl_easy_init();
	if (!e)
		return -ENOMEM;
	j->easy = e;
	switch (p->o.protocol) {
	case PUSH_PYROSCOPE_INGEST:
		ctype = "Content-Type: application/octet-stream";
		err = push_body__ingest_url(&j->url, p->url, &j->r, e);
		break;
	case PUSH_OTLP:
		ctype = "Content-Type: application/x-protobuf";
		j->url = strdup(p->otlp_url);
		err = j->url ? add_header(&j->headers, "%s", "Content-Encoding: gzip") : -ENOMEM;
		for (size_t i = 0; !err && p->otlp_headers && p->otlp_headers[i]; i++)
			err = add_header(&j->headers, "%s", p->otlp_headers[i]);
		break;
	case PUSH_PARCA:
		ctype = "Content-Type: application/json";
		err = push_body__parca(&j->body, &j->body_len, &j->r);
		if (!err && asprintf(&j->url, "%s/api/profiles/writeraw", p->url) < 0) {
			j->url = NULL;
			err = -ENOMEM;
		}
		break;
	case PUSH_PYROSCOPE:
	default:
		ctype = "Content-Type: application/proto";
		err = push_body__pyroscope(&j->body, &j->body_len, &j->r);
		if (!err && asprintf(&j->url, "%s/push.v1.PusherService/Push", p->url) < 0) {
			j->url = NULL;
			err = -ENOMEM;
		}
		if (!err)
			err = add_header(&j->headers, "%s", "Connect-Protocol-Version: 1");
		break;
	}
	if (!err)
		err = add_header(&j->headers, "%s", ctype);
	/* No "Expect: 100-continue" round trip before the body. */
	if (!err)
		err = add_header(&j->headers, "%s", "Expect:");
	if (!err && p->sec.token)
		err = add_header(&j->headers, "Authorization: Bearer %s", p->sec.token);
	if (!err && p->sec.tenant)
		err = add_header(&j->headers, "X-Scope-OrgID: %s", p->sec.tenant);
	if (err)
		goto cleanup;

	curl_easy_setopt(e, CURLOPT_URL, j->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, j->headers);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "bpftrace-prof/" PROF_VERSION);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	if (p->o.protocol == PUSH_PYROSCOPE_INGEST || p->o.protocol == PUSH_OTLP) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->r.data);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->r.len);
	} else {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->body_len);
	}
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)p->o.timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)p->o.connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf);
	curl_easy_setopt(e, CURLOPT_PRIVATE, j);
	if (p->sec.user) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, p->sec.user);
		curl_easy_setopt(e, CURLOPT_PASSWORD, p->sec.password ? p->sec.password : "");
	}
	if (curl_multi_add_handle(p->multi, e) != CURLM_OK) {
		err = -ENOMEM;
		goto cleanup;
	}
	p->inflight++;
	return 0;
cleanup:
	job_end_transfer(j);
	return err;
}

/* ---- spool ---- */

/* Loads the oldest spooled file into p->spool_job and starts sending it. */
static int spool_start_oldest(struct push *p)
{
	struct push_job *j = calloc(1, sizeof(*j));
	int err;

	if (!j)
		return -ENOMEM;
	err = spool__read_oldest(p->spool, &j->r, j->spool_name, &j->spool_size);
	if (!err && j->spool_name[0]) {
		if (!j->r.id[0])
			make_id(j->r.id);
		err = job_start(p, j);
	}
	if (err || !j->spool_name[0]) {
		job_free(j);
		return err;
	}
	p->spool_job = j;
	return 0;
}

/* A live job leaves the queue for the spool, or is counted as lost (lost_count). */
static void spool_or_count(struct push *p, struct push_job *j, uint64_t *lost_count)
{
	if (p->spool && !spool__write(p->spool, &j->r)) {
		p->stats.spooled++;
		if (p->spool_due_ms < clock__mono_ms())
			p->spool_due_ms = clock__mono_ms() + p->spool_backoff_ms;
	} else {
		(*lost_count)++;
	}
}

/* ---- completion ---- */

static unsigned backoff(const struct push *p, unsigned tries)
{
	uint64_t d = p->o.backoff_ms;

	for (unsigned i = 1; i < tries && d < p->o.backoff_max_ms; i++)
		d *= 2;
	return d > p->o.backoff_max_ms ? p->o.backoff_max_ms : (unsigned)d;
}

/* The first line of the server's message, printable. */
static const char *one_line(struct push_job *j)
{
	char *s = j->resp;

	for (size_t i = 0; i < j->resp_len; i++) {
		if (s[i] == '\n' || s[i] == '\r' || !s[i]) {
			s[i] = 0;
			break;
		}
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	}
	return s;
}

static void queue_remove(struct push *p, struct push_job *j)
{
	for (unsigned i = 0; i < p->nqueue; i++) {
		if (p->queue[i] == j) {
			memmove(&p->queue[i], &p->queue[i + 1],
				(p->nqueue - i - 1) * sizeof(*p->queue));
			p->nqueue--;
			return;
		}
	}
}

/* A spooled file that did not go: the next one waits longer (doubling, at most backoff_max). */
static void spool_later(struct push *p, int64_t now)
{
	p->spool_due_ms = now + p->spool_backoff_ms;
	p->spool_backoff_ms = p->spool_backoff_ms >= p->o.backoff_max_ms / 2
				      ? p->o.backoff_max_ms
				      : p->spool_backoff_ms * 2;
}

/* An accepted OTLP request may still reject profiles: counted as lost, said once. */
static void otlp_partial(struct push *p, struct push_job *j)
{
	struct otlp_response r;

	if (otlp__parse_response(&r, j->resp, j->resp_len)) {
		pr_debug("push: %s: an OTLP response we cannot read\n", p->host);
		return;
	}
	if (r.rejected_profiles <= 0)
		return;
	p->stats.rejected += (uint64_t)r.rejected_profiles;
	if (!p->logged_partial)
		pr_warn("push: %s rejected %" PRId64 " profiles of a request (%s)\n", p->host,
			r.rejected_profiles, r.message[0] ? r.message : "no message");
	p->logged_partial = true;
}

static void job_done(struct push *p, struct push_job *j, CURLcode res)
{
	bool spooled = j->spool_name[0] != 0, ok = false, retry = false, auth = false;
	bool otlp = p->o.protocol == PUSH_OTLP;
	long status = 0;
	char why[RESP_KEEP + 64];
	int64_t now = clock__mono_ms();
	curl_off_t retry_after = 0;

	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
	if (res != CURLE_OK) {
		retry = true;
		snprintf(why, sizeof(why), "%s",
			 j->errbuf[0] ? j->errbuf : curl_easy_strerror(res));
	} else if (status >= 200 && status < 300) {
		ok = true;
		if (otlp)
			otlp_partial(p, j);
	} else if (otlp) {
		/* OTLP/HTTP: only these say "later", with the delay in Retry-After. */
		retry = otlp__status_retryable(status);
		curl_easy_getinfo(j->easy, CURLINFO_RETRY_AFTER, &retry_after);
		snprintf(why, sizeof(why), "HTTP %ld", status);
	} else {
		/* 429 and 5xx say "later"; 401 and 403 that our credentials are wrong, which no
		 * retry mends; any other answer is final. */
		retry = status == 429 || status >= 500;
		auth = status == 401 || status == 403;
		snprintf(why, sizeof(why), "HTTP %ld: %s", status, one_line(j));
	}
	curl_multi_remove_handle(p->multi, j->easy);
	p->inflight--;
	job_end_transfer(j);

	if (ok) {
		p->stats.sent_bytes += j->r.len;
		if (p->failing)
			pr_info("push: %s accepts profiles again\n", p->url);
		p->failing = false;
		if (spooled) {
			p->stats.spool_sent++;
			spool__remove(p->spool, j->spool_name, j->spool_size);
			p->spool_backoff_ms = p->o.backoff_ms;
		} else {
			p->stats.sent++;
		}
		/* The backend is up: the spool's backlog can go now. */
		p->spool_due_ms = now;
	} else if (retry) {
		if (!p->failing)
			pr_warn("push: %s: %s; retrying%s%s\n", p->url, why,
				p->spool ? ", then spooling to " : "",
				p->spool ? spool__path(p->spool) : "");
		p->failing = true;
		if (spooled) {
			spool_later(p, now);
		} else if (++j->tries < p->o.max_tries) {
			int64_t ra_ms = (int64_t)retry_after * 1000;

			p->stats.retried++;
			j->due_ms = now + backoff(p, j->tries);
			if (ra_ms > (int64_t)p->o.backoff_max_ms)
				ra_ms = p->o.backoff_max_ms;
			if (now + ra_ms > j->due_ms)
				j->due_ms = now + ra_ms;
			return;
		} else {
			spool_or_count(p, j, &p->stats.failed);
		}
	} else if (auth) {
		/* A configuration error: said once, as an error; the profiles wait in the spool
		 * (until they age out) for a run with the right credentials. */
		p->stats.auth_failed++;
		if (!p->logged_auth)
			pr_err("push: %s refuses our credentials (%s): check "
			       "BPFTRACE_PROF_PUSH_TOKEN (or _USER and _PASSWORD), _TENANT or "
			       "--push-auth-file; profiles are %s%s\n",
			       p->host, why, p->spool ? "kept in " : "lost: no spool",
			       p->spool ? spool__path(p->spool) : "");
		p->logged_auth = true;
		p->failing = true;
		if (spooled)
			spool_later(p, now);
		else
			spool_or_count(p, j, &p->stats.failed);
	} else {
		if (!p->logged_reject)
			pr_warn("push: %s refused a profile (%s); not retried\n", p->url, why);
		else
			pr_debug("push: %s refused a profile (%s)\n", p->url, why);
		p->logged_reject = true;
		p->stats.failed++;
		if (spooled)
			spool__remove(p->spool, j->spool_name, j->spool_size);
	}
	if (spooled) {
		p->spool_job = NULL;
	} else {
		queue_remove(p, j);
	}
	job_free(j);
}

/* ---- public ---- */

int push__submit(struct push *p, const struct push_item *item)
{
	struct push_job *j;
	int err;

	p->stats.submitted++;
	if (!item->len || !item->data || !item->name || !*item->name) {
		p->stats.dropped++;
		return -EINVAL;
	}
	err = job_new(&j, item);
	if (err) {
		p->stats.dropped++;
		return err;
	}
	if (p->nqueue >= p->o.queue_max) {
		spool_or_count(p, j, &p->stats.dropped);
		job_free(j);
		return 0;
	}
	j->due_ms = clock__mono_ms();
	p->queue[p->nqueue++] = j;
	return 0;
}

static const char *profile_name(const char *mode)
{
	if (!strcmp(mode, "cpu"))
		return "process_cpu";
	if (!strcmp(mode, "heap"))
		return "memory";
	if (!strcmp(mode, "calls"))
		return "wall";
	return mode;
}

/* All the parts in one OTLP request, gzip-compressed: one job, one spool file. */
static int submit_otlp(struct push *p, const struct profile *prof, const struct split_part *parts,
		       uint32_t nparts)
{
	struct otlp_part *op = calloc(nparts ? nparts : 1, sizeof(*op));
	struct push_label host = {"hostname", p->hostname};
	struct push_item item = {
		.name = profile_name(prof->mode),
		.labels = &host,
		.nlabels = p->hostname[0] ? 1 : 0,
		.from_ns = prof->time_nanos,
		.until_ns = prof->time_nanos + prof->duration_nanos,
	};
	struct pbuf req;
	struct gzfile *gz = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int err = -ENOMEM;

	pbuf__init(&req);
	if (!op)
		goto cleanup;
	for (uint32_t i = 0; i < nparts; i++)
		op[i] = (struct otlp_part){parts[i].service, parts[i].is_container,
					   parts[i].profile};
	err = otlp__encode(&req, op, nparts, p->hostname);
	f = err ? NULL : open_memstream(&buf, &len);
	if (!err && !f)
		err = -ENOMEM;
	if (!err)
		err = gzfile__new(&gz, f);
	if (!err)
		err = gzfile__write(gz, req.data, req.len);
	if (!err)
		err = gzfile__finish(gz);
	gzfile__free(gz);
	if (f && fclose(f) && !err)
		err = -ENOMEM;
	if (err) {
		p->stats.build_failed++;
		goto cleanup;
	}
	item.data = buf;
	item.len = len;
	err = push__submit(p, &item); /* counts its own failures */
cleanup:
	free(buf);
	free(op);
	pbuf__release(&req);
	return err;
}

int push__submit_profile(struct push *p, const struct profile *prof)
{
	struct split_part *parts = NULL;
	uint32_t nparts = 0, nfolded = 0;
	int err, first_err = 0;

	err = split__by_service(&parts, &nparts, &nfolded, prof, p->o.max_series);
	if (err) {
		p->stats.build_failed++;
		return err;
	}
	p->stats.series_folded += nfolded;
	if (p->o.protocol == PUSH_OTLP && nparts) {
		err = submit_otlp(p, prof, parts, nparts);
		split__free(parts, nparts);
		return err;
	}
	/* A part that cannot be encoded is counted; the others still go. */
	for (uint32_t i = 0; i < nparts; i++) {
		struct push_label labels[3 + PUSH_EXTRA_LABELS];
		struct push_item item = {
			.name = profile_name(prof->mode),
			.labels = labels,
			.from_ns = prof->time_nanos,
			.until_ns = prof->time_nanos + prof->duration_nanos,
		};
		char *buf = NULL;
		size_t len = 0;
		FILE *f;

		labels[item.nlabels++] = (struct push_label){"service_name", parts[i].service};
		if (parts[i].is_container)
			labels[item.nlabels++] =
				(struct push_label){"container_id", parts[i].service};
		if (p->hostname[0])
			labels[item.nlabels++] = (struct push_label){"hostname", p->hostname};
		/* An event's profile (an OOM kill's) names its series too. */
		for (uint32_t k = 0; k < prof->nlabels && item.nlabels < 3 + PUSH_EXTRA_LABELS; k++)
			if (prof->labels[k].series && prof->labels[k].str)
				labels[item.nlabels++] = (struct push_label){prof->labels[k].key,
									     prof->labels[k].str};
		f = open_memstream(&buf, &len);
		if (!f) {
			err = -ENOMEM;
		} else {
			err = pprof__write(parts[i].profile, f);
			if (fclose(f) && !err)
				err = -ENOMEM;
		}
		if (err) {
			p->stats.build_failed++;
		} else {
			item.data = buf;
			item.len = len;
			err = push__submit(p, &item); /* counts its own failures */
		}
		if (err && !first_err)
			first_err = err;
		free(buf);
	}
	split__free(parts, nparts);
	return first_err;
}

int push__poll(struct push *p)
{
	struct CURLMsg *m;
	int running, left;
	int64_t now;
	int err = 0;

	if (p->inflight)
		curl_multi_perform(p->multi, &running);
	while ((m = curl_multi_info_read(p->multi, &left))) {
		struct push_job *j = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
		job_done(p, j, m->data.result);
	}
	now = clock__mono_ms();
	for (unsigned i = 0; i < p->nqueue && p->inflight < p->o.max_parallel; i++) {
		struct push_job *j = p->queue[i];

		if (j->easy || j->due_ms > now)
			continue;
		err = job_start(p, j);
		if (err)
			break;
	}
	if (!err && p->spool && spool__files(p->spool) && !p->spool_job &&
	    p->inflight < p->o.max_parallel && now >= p->spool_due_ms) {
		err = spool_start_oldest(p);
		if (err)
			pr_debug("push: spool %s: %s\n", spool__path(p->spool), strerror(-err));
		/* Whatever went wrong, try again later rather than every poll. */
		if (err || !p->spool_job)
			p->spool_due_ms = now + p->spool_backoff_ms;
		err = 0;
	}
	if (p->inflight)
		curl_multi_perform(p->multi, &running);
	return err;
}

long push__timeout_ms(struct push *p)
{
	int64_t now = clock__mono_ms(), best = -1;
	long t = -1;

	if (p->inflight && curl_multi_timeout(p->multi, &t) == CURLM_OK && t >= 0)
		best = t;
	for (unsigned i = 0; i < p->nqueue; i++) {
		int64_t d = p->queue[i]->due_ms - now;

		if (!p->queue[i]->easy && (best < 0 || d < best))
			best = d < 0 ? 0 : d;
	}
	if (p->spool && spool__files(p->spool) && !p->spool_job) {
		int64_t d = p->spool_due_ms - now;

		if (best < 0 || d < best)
			best = d < 0 ? 0 : d;
	}
	return (long)best;
}

int push__flush(struct push *p, unsigned timeout_ms)
{
	int64_t deadline = clock__mono_ms() + timeout_ms;
	int err = 0;

	while (p->nqueue && clock__mono_ms() < deadline) {
		long wait;

		err = push__poll(p);
		if (err)
			break;
		if (!p->nqueue)
			break;
		wait = push__timeout_ms(p);
		if (wait < 0 || wait > 50)
			wait = 50;
		if (wait > deadline - clock__mono_ms())
			wait = (long)(deadline - clock__mono_ms());
		if (wait > 0)
			curl_multi_poll(p->multi, NULL, 0, (int)wait, NULL);
	}
	/* Out of time: whatever is left waits in the spool for the next run. */
	while (p->nqueue) {
		struct push_job *j = p->queue[--p->nqueue];

		if (j->easy) {
			curl_multi_remove_handle(p->multi, j->easy);
			p->inflight--;
		}
		spool_or_count(p, j, &p->stats.dropped);
		job_free(j);
	}
	if (p->spool_job) {
		curl_multi_remove_handle(p->multi, p->spool_job->easy);
		p->inflight--;
		job_free(p->spool_job);
		p->spool_job = NULL;
	}
	return err;
}

void push__stats(const struct push *p, struct push_stats *out)
{
	*out = p->stats;
	if (p->spool)
		spool__add_stats(p->spool, out);
}

/* ---- set-up ---- */

/* The endpoint and headers; the OTEL_EXPORTER_OTLP_* variables then gone from our environment
 * as our own secrets are.  The signal's own variable wins over the generic one. */
static int otlp_setup(struct push *p, bool exact)
{
	char *headers = NULL, *generic = NULL;
	int err = otlp__url(&p->otlp_url, p->o.url, exact);

	if (!err)
		err = push_auth__take_env(&headers, OTLP_ENV_PROFILES_HEADERS);
	if (!err)
		err = push_auth__take_env(&generic, OTLP_ENV_HEADERS);
	if (!err && (headers || generic)) {
		err = otlp__parse_headers(&p->otlp_headers, headers ? headers : generic);
		if (err == -EINVAL)
			pr_err("%s: not key=value[,key=value...]\n",
			       headers ? OTLP_ENV_PROFILES_HEADERS : OTLP_ENV_HEADERS);
	}
	push_auth__free_secret(headers);
	push_auth__free_secret(generic);
	if (getenv(OTLP_ENV_PROFILES_ENDPOINT))
		unsetenv(OTLP_ENV_PROFILES_ENDPOINT);
	if (getenv(OTLP_ENV_ENDPOINT))
		unsetenv(OTLP_ENV_ENDPOINT);
	return err;
}

#define DEFAULT(field, v)            \
	do {                         \
		if (!o.field)        \
			o.field = v; \
	} while (0)

int push__new(struct push **out, const struct push_opts *opts)
{
	struct push_opts o = *opts;
	struct push *p;
	size_t n;
	int err;

	bool exact = false;

	if (o.protocol == PUSH_OTLP) {
		const char *env_url = otlp__env_endpoint(&exact);

		/* The signal's own variable names the whole endpoint, also when the CLI copied it.
		 */
		if (!o.url)
			o.url = env_url;
		exact = exact && o.url && !strcmp(o.url, env_url);
	}
	if (!o.url || (strncmp(o.url, "http://", 7) && strncmp(o.url, "https://", 8))) {
		pr_err("--push takes an http:// or https:// URL\n");
		return -EINVAL;
	}
	if (push__url_has_credentials(o.url)) {
		pr_err("--push URL holds credentials: " PUSH_CREDENTIALS_HINT "\n");
		return -EINVAL;
	}
	DEFAULT(max_series, 64);
	/* Every part of one interval's profiles, four modes of them, fits. */
	DEFAULT(queue_max, 4 * o.max_series);
	DEFAULT(max_parallel, 4);
	DEFAULT(max_tries, 5);
	DEFAULT(backoff_ms, 500);
	DEFAULT(backoff_max_ms, 60000);
	DEFAULT(timeout_ms, 15000);
	DEFAULT(connect_timeout_ms, 5000);
	DEFAULT(spool_max_files, 1000);
	DEFAULT(spool_max_bytes, 256ULL << 20);
	DEFAULT(max_age_s, 3600);
	if (curl_global_init(CURL_GLOBAL_DEFAULT))
		return -ENOMEM;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = o;
	p->spool_backoff_ms = o.backoff_ms;
	p->url = strdup(o.url);
	p->host = strndup(strstr(o.url, "://") + 3, strcspn(strstr(o.url, "://") + 3, "/?#"));
	p->queue = calloc(o.queue_max, sizeof(*p->queue));
	p->multi = curl_multi_init();
	if (!p->url || !p->host || !p->queue || !p->multi) {
		err = -ENOMEM;
		goto cleanup;
	}
	p->o.url = p->url;
	n = strlen(p->url);
	while (n > 8 && p->url[n - 1] == '/')
		p->url[--n] = 0;
	if (gethostname(p->hostname, sizeof(p->hostname) - 1))
		p->hostname[0] = 0;

	/* Under PUSH_ENV_PREFIX, each of them: push__is_secret_env keeps them from children. */
	err = push_auth__take_env(&p->sec.token, PUSH_ENV_PREFIX "TOKEN");
	if (!err)
		err = push_auth__take_env(&p->sec.user, PUSH_ENV_PREFIX "USER");
	if (!err)
		err = push_auth__take_env(&p->sec.password, PUSH_ENV_PREFIX "PASSWORD");
	if (!err)
		err = push_auth__take_env(&p->sec.tenant, PUSH_ENV_PREFIX "TENANT");
	if (!err && o.auth_file)
		err = push_auth__read_file(&p->sec, o.auth_file);
	if (!err && o.protocol == PUSH_OTLP)
		err = otlp_setup(p, exact);
	if (err)
		goto cleanup;
	if (p->sec.token && p->sec.user) {
		pr_err("push credentials: give a token or a user, not both\n");
		err = -EINVAL;
		goto cleanup;
	}
	if ((p->sec.token || p->sec.password) && !strncmp(p->url, "http://", 7))
		pr_warn("push: credentials go to %s unencrypted (plain http)\n", p->url);
	if (o.spool_dir) {
		err = spool__open(
			&p->spool, o.spool_dir,
			&(struct spool_opts){o.spool_max_files, o.spool_max_bytes, o.max_age_s});
		if (err)
			goto cleanup;
	}
	*out = p;
	return 0;
cleanup:
	push__free(p);
	return err;
}

void push__free(struct push *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nqueue; i++) {
		if (p->queue[i]->easy)
			curl_multi_remove_handle(p->multi, p->queue[i]->easy);
		job_free(p->queue[i]);
	}
	if (p->spool_job) {
		curl_multi_remove_handle(p->multi, p->spool_job->easy);
		job_free(p->spool_job);
	}
	if (p->multi)
		curl_multi_cleanup(p->multi);
	spool__free(p->spool);
	free(p->queue);
	free(p->url);
	free(p->host);
	push_auth__free_secret(p->sec.token);
	push_auth__free_secret(p->sec.user);
	push_auth__free_secret(p->sec.password);
	push_auth__free_secret(p->sec.tenant);
	free(p->otlp_url);
	otlp__free_headers(p->otlp_headers);
	free(p);
	curl_global_cleanup();
}
