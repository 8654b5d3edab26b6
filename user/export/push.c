// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/push.h"

#include <ctype.h>
#include <dirent.h>
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

#include "util/json.h"
#include "export/pprof.h"
#include "util/protobuf.h"
#include "profile/profile.h"
#include "profile/split.h"
#include "util/log.h"

#define RESP_KEEP	 512 /* bytes of a response body kept for the error message */
#define SPOOL_MAGIC	 "bpftrace-prof push spool 1\n"
#define SPOOL_HEADER_MAX (64 << 10) /* a spool file's metadata */
#define SPOOL_DATA_MAX	 (64 << 20) /* a profile read back from the spool */
#define SPOOL_MAX_LABELS 64
#define AUTH_FILE_MAX	 4096
#define LABEL_MAX	 1024 /* bytes of a label name or value we send */
#define SPOOL_NAME_LEN	 64

struct push_job {
	char *name;
	struct push_label *labels; /* owned strings */
	uint32_t nlabels;
	int64_t from_ns, until_ns;
	uint8_t *data;
	size_t len;
	char id[37]; /* RawSample.ID: the same on every retry */

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

	int spool_dfd; /* <spool_dir>/spool, or -1 */
	char *spool_path;
	uint64_t spool_files, spool_bytes;
	int64_t spool_due_ms;
	unsigned spool_backoff_ms;
	uint32_t seq;

	char *token, *user, *password, *tenant;
	char hostname[256];
	bool logged_reject, logged_spool_full, logged_auth, failing;
	struct push_stats stats;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool push__url_has_credentials(const char *url)
{
	const char *auth = strstr(url, "://");
	size_t n;

	auth = auth ? auth + 3 : url;
	n = strcspn(auth, "/?#");
	return memchr(auth, '@', n) != NULL;
}

bool push__is_secret_env(const char *entry)
{
	return !strncmp(entry, PUSH_ENV_PREFIX, sizeof(PUSH_ENV_PREFIX) - 1);
}

int push__parse_protocol(enum push_protocol *out, const char *s)
{
	if (!strcmp(s, "pyroscope"))
		*out = PUSH_PYROSCOPE;
	else if (!strcmp(s, "pyroscope-ingest"))
		*out = PUSH_PYROSCOPE_INGEST;
	else if (!strcmp(s, "parca"))
		*out = PUSH_PARCA;
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
	for (uint32_t i = 0; i < j->nlabels; i++) {
		free((char *)j->labels[i].name);
		free((char *)j->labels[i].value);
	}
	free(j->labels);
	free(j->name);
	free(j->data);
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
		uint64_t x =
			prof_mix64((uint64_t)now_ms() ^ ++fallback ^ ((uint64_t)getpid() << 32));
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
	j->name = clean_dup(it->name, true);
	j->data = malloc(it->len);
	j->labels = calloc(it->nlabels + 1, sizeof(*j->labels));
	if (!j->name || !j->data || !j->labels)
		goto cleanup;
	memcpy(j->data, it->data, it->len);
	j->len = it->len;
	for (uint32_t i = 0; i < it->nlabels; i++) {
		struct push_label *l = &j->labels[j->nlabels];

		l->name = clean_dup(it->labels[i].name, true);
		l->value = clean_dup(it->labels[i].value, false);
		j->nlabels++;
		if (!l->name || !l->value)
			goto cleanup;
	}
	j->from_ns = it->from_ns;
	j->until_ns = it->until_ns;
	make_id(j->id);
	*out = j;
	return 0;
cleanup:
	job_free(j);
	return err;
}

/* ---- request bodies ---- */

static int encode_label(struct pbuf *series, uint32_t field, const char *name, const char *value)
{
	struct pbuf lp;
	int err;

	pbuf__init(&lp);
	pb__field_string(&lp, 1, name);
	pb__field_string(&lp, 2, value);
	err = pb__field_message(series, field, &lp);
	pbuf__release(&lp);
	return err;
}

/* push.v1.PushRequest{series: [RawProfileSeries{labels, samples: [RawSample]}]}: the labels
 * sent are __name__ first, then the job's own. */
static int body_pyroscope(struct push_job *j)
{
	struct pbuf req, series, sample;
	int err;

	pbuf__init(&req);
	pbuf__init(&series);
	pbuf__init(&sample);
	encode_label(&series, 1, "__name__", j->name);
	for (uint32_t i = 0; i < j->nlabels; i++)
		encode_label(&series, 1, j->labels[i].name, j->labels[i].value);
	pb__field_bytes(&sample, 1, j->data, j->len);
	pb__field_string(&sample, 2, j->id);
	pb__field_message(&series, 2, &sample);
	pb__field_message(&req, 1, &series);
	err = pbuf__err(&req);
	if (!err) {
		j->body = req.data;
		j->body_len = req.len;
	} else {
		pbuf__release(&req);
	}
	pbuf__release(&series);
	pbuf__release(&sample);
	return err;
}

/* Pyroscope's segment keys take these characters in names and values. */
static void ingest_clean(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(isalnum((unsigned char)*s) || strchr("_.:/-", *s) ? *s : '_', f);
}

/* The /ingest URL: name=SERVICE{k=v,…}&from&until in Unix nanoseconds (19 digits, which the
 * handler reads as ns), format=pprof.  __name__ is not in it: Pyroscope derives the profile
 * type from the pprof's sample types on this endpoint. */
static int url_ingest(struct push *p, struct push_job *j, CURL *easy)
{
	char *key = NULL, *esc = NULL;
	const char *service = "unknown";
	size_t klen = 0;
	bool any = false;
	FILE *f;
	int err = 0;

	for (uint32_t i = 0; i < j->nlabels; i++)
		if (!strcmp(j->labels[i].name, "service_name") && *j->labels[i].value)
			service = j->labels[i].value;
	f = open_memstream(&key, &klen);
	if (!f)
		return -ENOMEM;
	ingest_clean(f, service);
	fputc('{', f);
	for (uint32_t i = 0; i < j->nlabels; i++) {
		if (!strcmp(j->labels[i].name, "service_name") || !*j->labels[i].value)
			continue;
		fprintf(f, "%s%s=", any ? "," : "", j->labels[i].name);
		ingest_clean(f, j->labels[i].value);
		any = true;
	}
	fputc('}', f);
	if (fclose(f) || !key)
		return -ENOMEM;
	esc = curl_easy_escape(easy, key, (int)klen);
	if (!esc ||
	    asprintf(&j->url, "%s/ingest?name=%s&from=%" PRId64 "&until=%" PRId64 "&format=pprof",
		     p->url, esc, j->from_ns, j->until_ns) < 0) {
		j->url = NULL;
		err = -ENOMEM;
	}
	curl_free(esc);
	free(key);
	return err;
}

static void json_string(FILE *f, const char *s)
{
	json__write_string(f, s, strlen(s));
}

static void base64(FILE *f, const uint8_t *d, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)d[i + 1] << 8;
		if (i + 2 < n)
			v |= d[i + 2];
		fputc(tab[v >> 18 & 63], f);
		fputc(tab[v >> 12 & 63], f);
		fputc(i + 1 < n ? tab[v >> 6 & 63] : '=', f);
		fputc(i + 2 < n ? tab[v & 63] : '=', f);
	}
}

/* parca.profilestore.v1alpha1.WriteRawRequest as grpc-gateway JSON (bytes as base64). */
static int body_parca(struct push_job *j)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fputs("{\"series\":[{\"labels\":{\"labels\":[{\"name\":\"__name__\",\"value\":", f);
	json_string(f, j->name);
	fputc('}', f);
	for (uint32_t i = 0; i < j->nlabels; i++) {
		fputs(",{\"name\":", f);
		json_string(f, j->labels[i].name);
		fputs(",\"value\":", f);
		json_string(f, j->labels[i].value);
		fputc('}', f);
	}
	fputs("]},\"samples\":[{\"rawProfile\":\"", f);
	base64(f, j->data, j->len);
	fputs("\"}]}],\"normalized\":false}", f);
	if (fclose(f) || !buf) {
		free(buf);
		return -ENOMEM;
	}
	j->body = buf;
	j->body_len = len;
	return 0;
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
		err = url_ingest(p, j, e);
		break;
	case PUSH_PARCA:
		ctype = "Content-Type: application/json";
		err = body_parca(j);
		if (!err && asprintf(&j->url, "%s/api/profiles/writeraw", p->url) < 0) {
			j->url = NULL;
			err = -ENOMEM;
		}
		break;
	case PUSH_PYROSCOPE:
	default:
		ctype = "Content-Type: application/proto";
		err = body_pyroscope(j);
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
	if (!err && p->token)
		err = add_header(&j->headers, "Authorization: Bearer %s", p->token);
	if (!err && p->tenant)
		err = add_header(&j->headers, "X-Scope-OrgID: %s", p->tenant);
	if (err)
		goto cleanup;

	curl_easy_setopt(e, CURLOPT_URL, j->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, j->headers);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "bpftrace-prof/" PROF_VERSION);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	if (p->o.protocol == PUSH_PYROSCOPE_INGEST) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->data);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->len);
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
	if (p->user) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERNAME, p->user);
		curl_easy_setopt(e, CURLOPT_PASSWORD, p->password ? p->password : "");
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

static void spool_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c == '%' || c == 0x7f)
			fprintf(f, "%%%02x", c);
		else
			fputc(c, f);
	}
}

static int spool_header(struct push_job *j, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);

	if (!f)
		return -ENOMEM;
	fputs(SPOOL_MAGIC, f);
	fprintf(f, "id %s\nname ", j->id);
	spool_escape(f, j->name);
	fprintf(f, "\nfrom %" PRId64 "\nuntil %" PRId64 "\n", j->from_ns, j->until_ns);
	for (uint32_t i = 0; i < j->nlabels; i++) {
		fputs("label ", f);
		spool_escape(f, j->labels[i].name);
		fputc(' ', f);
		spool_escape(f, j->labels[i].value);
		fputc('\n', f);
	}
	fprintf(f, "data %zu\n", j->len);
	if (fclose(f) || !*out) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *b = buf;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes j into the spool as one file, atomically: a 0600 temporary created O_EXCL|O_NOFOLLOW
 * in the spool directory, renamed (never over an existing name) once complete. */
static int spool_write(struct push *p, struct push_job *j)
{
	char tmp[64], name[SPOOL_NAME_LEN], *hdr = NULL;
	size_t hlen = 0;
	int fd = -1, err;

	if (p->spool_dfd < 0)
		return -ENOENT;
	err = spool_header(j, &hdr, &hlen);
	if (err)
		return err;
	if (p->spool_files + 1 > p->o.spool_max_files ||
	    p->spool_bytes + hlen + j->len > p->o.spool_max_bytes) {
		if (!p->logged_spool_full)
			pr_warn("push: spool %s full (%" PRIu64 " files, %" PRIu64
				" bytes): dropping profiles\n",
				p->spool_path, p->spool_files, p->spool_bytes);
		p->logged_spool_full = true;
		err = -ENOSPC;
		goto cleanup;
	}
	snprintf(tmp, sizeof(tmp), ".tmp-%d-%u", (int)getpid(), ++p->seq);
	fd = openat(p->spool_dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	err = write_all(fd, hdr, hlen);
	if (!err)
		err = write_all(fd, j->data, j->len);
	if (!err && fdatasync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	fd = -1;
	for (int attempt = 0; !err; attempt++) {
		/* The data's start time first, so names sort oldest first. */
		snprintf(name, sizeof(name), "%019" PRId64 "-%d-%u.spool",
			 j->from_ns > 0 ? j->from_ns : 0, (int)getpid(), ++p->seq);
		if (!renameat2(p->spool_dfd, tmp, p->spool_dfd, name, RENAME_NOREPLACE))
			break;
		err = -errno;
		if (err == -EEXIST && attempt < 8)
			err = 0;
	}
	if (err) {
		unlinkat(p->spool_dfd, tmp, 0);
	} else {
		/* The rename is durable once the directory is: without this a crash can lose a
		 * profile counted as spooled.  Failing, the file is in place all the same. */
		if (fsync(p->spool_dfd))
			pr_warn("push: cannot sync the spool %s: %s\n", p->spool_path,
				strerror(errno));
		p->spool_files++;
		p->spool_bytes += hlen + j->len;
	}
cleanup:
	if (err && err != -ENOSPC)
		pr_warn("push: cannot write to the spool %s: %s\n", p->spool_path, strerror(-err));
	free(hdr);
	return err;
}

static void spool_unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			char hex[3] = {s[1], s[2], 0};

			*d++ = (char)strtoul(hex, NULL, 16);
			s += 2;
		} else {
			*d++ = *s;
		}
	}
	*d = 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A spool file back into a job.  Our own format, but in a directory on disk: every length is
 * checked before use. */
static int spool_parse(struct push_job **out, char *buf, size_t len)
{
	struct push_job *j;
	char *line, *nl, *end = buf + len;
	int err = -EINVAL;
	bool have_data = false;
	int64_t v;

	if (len < sizeof(SPOOL_MAGIC) - 1 || memcmp(buf, SPOOL_MAGIC, sizeof(SPOOL_MAGIC) - 1))
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->labels = calloc(SPOOL_MAX_LABELS, sizeof(*j->labels));
	if (!j->labels) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (line = buf + sizeof(SPOOL_MAGIC) - 1; line < end && !have_data; line = nl + 1) {
		char *arg;

		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl || nl - buf > SPOOL_HEADER_MAX)
			goto cleanup;
		*nl = 0;
		arg = strchr(line, ' ');
		if (!arg)
			goto cleanup;
		*arg++ = 0;
		if (!strcmp(line, "id") && strlen(arg) < sizeof(j->id)) {
			strcpy(j->id, arg);
		} else if (!strcmp(line, "name") && !j->name) {
			spool_unescape(arg);
			j->name = strdup(arg);
			if (!j->name) {
				err = -ENOMEM;
				goto cleanup;
			}
		} else if (!strcmp(line, "from") && !parse_i64(arg, &v)) {
			j->from_ns = v;
		} else if (!strcmp(line, "until") && !parse_i64(arg, &v)) {
			j->until_ns = v;
		} else if (!strcmp(line, "label") && j->nlabels < SPOOL_MAX_LABELS) {
			char *value = strchr(arg, ' ');
			struct push_label *l = &j->labels[j->nlabels];

			if (!value)
				goto cleanup;
			*value++ = 0;
			spool_unescape(arg);
			spool_unescape(value);
			l->name = strdup(arg);
			l->value = strdup(value);
			j->nlabels++;
			if (!l->name || !l->value) {
				err = -ENOMEM;
				goto cleanup;
			}
		} else if (!strcmp(line, "data") && !parse_i64(arg, &v)) {
			if (v <= 0 || v != end - (nl + 1))
				goto cleanup;
			j->len = (size_t)v;
			have_data = true;
		} else {
			goto cleanup;
		}
	}
	if (!have_data || !j->name || !*j->name)
		goto cleanup;
	j->data = malloc(j->len);
	if (!j->data) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(j->data, end - j->len, j->len);
	if (!j->id[0])
		make_id(j->id);
	*out = j;
	return 0;
cleanup:
	job_free(j);
	return err;
}

static void spool_forget(struct push *p, uint64_t size)
{
	if (p->spool_files)
		p->spool_files--;
	p->spool_bytes = p->spool_bytes > size ? p->spool_bytes - size : 0;
}

/*
 * Walks the spool: deletes files older than max_age_s (and leftover temporaries of that age),
 * recounts files and bytes, and names the oldest file left ("" when none).
 */
static int spool_scan(struct push *p, char *oldest)
{
	time_t limit = time(NULL) - (time_t)p->o.max_age_s;
	uint64_t files = 0, bytes = 0;
	struct dirent *de;
	DIR *d;
	int fd;

	oldest[0] = 0;
	fd = openat(p->spool_dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		bool tmp = !strncmp(de->d_name, ".tmp-", 5);
		struct stat st;

		if (!tmp && (de->d_name[0] == '.' || n < 7 || n >= SPOOL_NAME_LEN ||
			     strcmp(de->d_name + n - 6, ".spool")))
			continue;
		if (fstatat(p->spool_dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (st.st_mtime < limit) {
			if (!unlinkat(p->spool_dfd, de->d_name, 0) && !tmp)
				p->stats.aged_out++;
			continue;
		}
		if (tmp)
			continue;
		files++;
		bytes += (uint64_t)st.st_size;
		if (!oldest[0] || strcmp(de->d_name, oldest) < 0)
			strcpy(oldest, de->d_name);
	}
	closedir(d);
	p->spool_files = files;
	p->spool_bytes = bytes;
	return 0;
}

/* Loads the oldest spooled file into p->spool_job and starts sending it. */
static int spool_start_oldest(struct push *p)
{
	char name[SPOOL_NAME_LEN], *buf = NULL;
	struct push_job *j = NULL;
	struct stat st;
	int fd, err;

	err = spool_scan(p, name);
	if (err || !name[0])
		return err;
	fd = openat(p->spool_dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size > SPOOL_HEADER_MAX + SPOOL_DATA_MAX) {
		err = -EINVAL;
	} else {
		buf = malloc((size_t)st.st_size + 1);
		if (!buf)
			err = -ENOMEM;
		else if (read(fd, buf, (size_t)st.st_size) != st.st_size)
			err = -EIO;
	}
	close(fd);
	if (!err)
		err = spool_parse(&j, buf, (size_t)st.st_size);
	free(buf);
	if (err == -ENOMEM)
		return err;
	if (err) {
		/* Not ours or damaged: it would block the queue for ever. */
		pr_warn("push: spool file %s/%s unreadable, deleted\n", p->spool_path, name);
		if (!unlinkat(p->spool_dfd, name, 0))
			spool_forget(p, (uint64_t)st.st_size);
		p->stats.dropped++;
		return 0;
	}
	snprintf(j->spool_name, sizeof(j->spool_name), "%s", name);
	j->spool_size = (uint64_t)st.st_size;
	err = job_start(p, j);
	if (err) {
		job_free(j);
		return err;
	}
	p->spool_job = j;
	return 0;
}

/* A live job leaves the queue for the spool, or is counted as lost (lost_count). */
static void spool_or_count(struct push *p, struct push_job *j, uint64_t *lost_count)
{
	if (!spool_write(p, j)) {
		p->stats.spooled++;
		if (p->spool_due_ms < now_ms())
			p->spool_due_ms = now_ms() + p->spool_backoff_ms;
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

static void job_done(struct push *p, struct push_job *j, CURLcode res)
{
	bool spooled = j->spool_name[0] != 0, ok = false, retry = false, auth = false;
	long status = 0;
	char why[RESP_KEEP + 64];
	int64_t now = now_ms();

	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
	if (res != CURLE_OK) {
		retry = true;
		snprintf(why, sizeof(why), "%s",
			 j->errbuf[0] ? j->errbuf : curl_easy_strerror(res));
	} else if (status >= 200 && status < 300) {
		ok = true;
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
		p->stats.sent_bytes += j->len;
		if (p->failing)
			pr_info("push: %s accepts profiles again\n", p->url);
		p->failing = false;
		if (spooled) {
			p->stats.spool_sent++;
			if (!unlinkat(p->spool_dfd, j->spool_name, 0))
				spool_forget(p, j->spool_size);
			p->spool_backoff_ms = p->o.backoff_ms;
		} else {
			p->stats.sent++;
		}
		/* The backend is up: the spool's backlog can go now. */
		p->spool_due_ms = now;
	} else if (retry) {
		if (!p->failing)
			pr_warn("push: %s: %s; retrying%s%s\n", p->url, why,
				p->spool_dfd >= 0 ? ", then spooling to " : "",
				p->spool_dfd >= 0 ? p->spool_path : "");
		p->failing = true;
		if (spooled) {
			spool_later(p, now);
		} else if (++j->tries < p->o.max_tries) {
			p->stats.retried++;
			j->due_ms = now + backoff(p, j->tries);
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
			       p->host, why, p->spool_dfd >= 0 ? "kept in " : "lost: no spool",
			       p->spool_dfd >= 0 ? p->spool_path : "");
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
		if (spooled && !unlinkat(p->spool_dfd, j->spool_name, 0))
			spool_forget(p, j->spool_size);
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
	j->due_ms = now_ms();
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
	/* A part that cannot be encoded is counted; the others still go. */
	for (uint32_t i = 0; i < nparts; i++) {
		struct push_label labels[3];
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
	now = now_ms();
	for (unsigned i = 0; i < p->nqueue && p->inflight < p->o.max_parallel; i++) {
		struct push_job *j = p->queue[i];

		if (j->easy || j->due_ms > now)
			continue;
		err = job_start(p, j);
		if (err)
			break;
	}
	if (!err && p->spool_dfd >= 0 && p->spool_files && !p->spool_job &&
	    p->inflight < p->o.max_parallel && now >= p->spool_due_ms) {
		err = spool_start_oldest(p);
		if (err)
			pr_debug("push: spool %s: %s\n", p->spool_path, strerror(-err));
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
	int64_t now = now_ms(), best = -1;
	long t = -1;

	if (p->inflight && curl_multi_timeout(p->multi, &t) == CURLM_OK && t >= 0)
		best = t;
	for (unsigned i = 0; i < p->nqueue; i++) {
		int64_t d = p->queue[i]->due_ms - now;

		if (!p->queue[i]->easy && (best < 0 || d < best))
			best = d < 0 ? 0 : d;
	}
	if (p->spool_dfd >= 0 && p->spool_files && !p->spool_job) {
		int64_t d = p->spool_due_ms - now;

		if (best < 0 || d < best)
			best = d < 0 ? 0 : d;
	}
	return (long)best;
}

int push__flush(struct push *p, unsigned timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	int err = 0;

	while (p->nqueue && now_ms() < deadline) {
		long wait;

		err = push__poll(p);
		if (err)
			break;
		if (!p->nqueue)
			break;
		wait = push__timeout_ms(p);
		if (wait < 0 || wait > 50)
			wait = 50;
		if (wait > deadline - now_ms())
			wait = (long)(deadline - now_ms());
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
}

/* ---- set-up ---- */

static int check_secret(const char *what, const char *v)
{
	if (strpbrk(v, "\r\n")) {
		pr_err("%s holds a line break\n", what);
		return -EINVAL;
	}
	return 0;
}

static int set_secret(char **slot, const char *what, const char *v)
{
	int err;

	if (!v || !*v)
		return 0;
	err = check_secret(what, v);
	if (err)
		return err;
	free(*slot);
	*slot = strdup(v);
	return *slot ? 0 : -ENOMEM;
}

/*
 * A secret from the environment, then gone from it: the value's bytes wiped where they are, so
 * that our /proc/PID/environ (which reads the original strings) no longer shows it, and the
 * variable unset.
 */
static int take_env_secret(char **slot, const char *name)
{
	char *v = getenv(name);
	int err;

	if (!v)
		return 0;
	err = set_secret(slot, name, v);
	explicit_bzero(v, strlen(v));
	unsetenv(name);
	return err;
}

/* key=value lines (token, user, password, tenant; # comments): a file only we or root own,
 * unreadable by group and others, so no other user can read or plant credentials. */
static int read_auth_file(struct push *p, const char *path)
{
	char buf[AUTH_FILE_MAX + 1], *line, *save = NULL;
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		pr_err("cannot open --push-auth-file %s: %s\n", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		pr_err("--push-auth-file %s is not a regular file\n", path);
		err = -EINVAL;
		goto cleanup;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		pr_err("--push-auth-file %s is owned by another user (uid %u)\n", path,
		       (unsigned)st.st_uid);
		err = -EPERM;
		goto cleanup;
	}
	if (st.st_mode & 077) {
		pr_err("--push-auth-file %s is accessible to group or others "
		       "(mode %03o); chmod 600 it\n",
		       path, (unsigned)(st.st_mode & 0777));
		err = -EPERM;
		goto cleanup;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0 || n > AUTH_FILE_MAX) {
		pr_err("--push-auth-file %s: %s\n", path,
		       n < 0 ? strerror(errno) : "larger than 4096 bytes");
		err = n < 0 ? -EIO : -EFBIG;
		goto cleanup;
	}
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line && !err; line = strtok_r(NULL, "\n", &save)) {
		char *eq, *v;
		size_t len = strlen(line);

		if (len && line[len - 1] == '\r')
			line[--len] = 0;
		if (!*line || *line == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			pr_err("--push-auth-file %s: a line without '='\n", path);
			err = -EINVAL;
			break;
		}
		*eq = 0;
		v = eq + 1;
		if (!strcmp(line, "token"))
			err = set_secret(&p->token, "the push token", v);
		else if (!strcmp(line, "user"))
			err = set_secret(&p->user, "the push user", v);
		else if (!strcmp(line, "password"))
			err = set_secret(&p->password, "the push password", v);
		else if (!strcmp(line, "tenant"))
			err = set_secret(&p->tenant, "the push tenant", v);
		else {
			/* The "key" may be a token written without "token=": named only when it
			 * looks like a key. */
			bool named = strlen(line) <= 16 &&
				     strspn(line, "abcdefghijklmnopqrstuvwxyz_") == strlen(line);

			pr_err("--push-auth-file %s: unknown key%s%s%s (token, user, password, "
			       "tenant)\n",
			       path, named ? " '" : "", named ? line : "", named ? "'" : "");
			err = -EINVAL;
		}
	}
	memset(buf, 0, sizeof(buf));
cleanup:
	close(fd);
	return err;
}

static int open_spool(struct push *p, const char *dir)
{
	struct stat st;
	int dfd, err;

	if (mkdir(dir, 0700) && errno != EEXIST)
		goto fail;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		goto fail;
	if (mkdirat(dfd, "spool", 0700) && errno != EEXIST) {
		err = -errno;
		close(dfd);
		errno = -err;
		goto fail;
	}
	p->spool_dfd = openat(dfd, "spool", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = -errno;
	close(dfd);
	if (p->spool_dfd < 0) {
		errno = -err;
		goto fail;
	}
	/* Our own files are read back from here: nobody else may write in it. */
	if (fstat(p->spool_dfd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		pr_err("push spool %s/spool is not ours or is writable by others\n", dir);
		return -EPERM;
	}
	if (asprintf(&p->spool_path, "%s/spool", dir) < 0) {
		p->spool_path = NULL;
		return -ENOMEM;
	}
	return 0;
fail:
	err = -errno;
	pr_err("cannot use %s/spool for --push: %s\n", dir, strerror(-err));
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
	char oldest[SPOOL_NAME_LEN];
	struct push *p;
	size_t n;
	int err;

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
	p->spool_dfd = -1;
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
	err = take_env_secret(&p->token, PUSH_ENV_PREFIX "TOKEN");
	if (!err)
		err = take_env_secret(&p->user, PUSH_ENV_PREFIX "USER");
	if (!err)
		err = take_env_secret(&p->password, PUSH_ENV_PREFIX "PASSWORD");
	if (!err)
		err = take_env_secret(&p->tenant, PUSH_ENV_PREFIX "TENANT");
	if (!err && o.auth_file)
		err = read_auth_file(p, o.auth_file);
	if (err)
		goto cleanup;
	if (p->token && p->user) {
		pr_err("push credentials: give a token or a user, not both\n");
		err = -EINVAL;
		goto cleanup;
	}
	if ((p->token || p->password) && !strncmp(p->url, "http://", 7))
		pr_warn("push: credentials go to %s unencrypted (plain http)\n", p->url);
	if (o.spool_dir) {
		err = open_spool(p, o.spool_dir);
		if (!err)
			err = spool_scan(p, oldest); /* age out, count what a previous run left */
		if (err)
			goto cleanup;
	}
	*out = p;
	return 0;
cleanup:
	push__free(p);
	return err;
}

static void free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
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
	if (p->spool_dfd >= 0)
		close(p->spool_dfd);
	free(p->spool_path);
	free(p->queue);
	free(p->url);
	free(p->host);
	free_secret(p->token);
	free_secret(p->user);
	free_secret(p->password);
	free_secret(p->tenant);
	free(p);
	curl_global_cleanup();
}
