// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/push_body.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/push.h"
#include "export/spool.h"
#include "util/json.h"
#include "util/protobuf.h"

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
int push_body__pyroscope(void **out, size_t *out_len, const struct spool_rec *r)
{
	struct pbuf req, series, sample;
	int err;

	pbuf__init(&req);
	pbuf__init(&series);
	pbuf__init(&sample);
	encode_label(&series, 1, "__name__", r->name);
	for (uint32_t i = 0; i < r->nlabels; i++)
		encode_label(&series, 1, r->labels[i].name, r->labels[i].value);
	pb__field_bytes(&sample, 1, r->data, r->len);
	pb__field_string(&sample, 2, r->id);
	pb__field_message(&series, 2, &sample);
	pb__field_message(&req, 1, &series);
	err = pbuf__err(&req);
	if (!err) {
		*out = req.data;
		*out_len = req.len;
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
int push_body__ingest_url(char **out, const char *base, const struct spool_rec *r, CURL *easy)
{
	char *key = NULL, *esc = NULL;
	const char *service = "unknown";
	size_t klen = 0;
	bool any = false;
	FILE *f;
	int err = 0;

	for (uint32_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->labels[i].name, "service_name") && *r->labels[i].value)
			service = r->labels[i].value;
	f = open_memstream(&key, &klen);
	if (!f)
		return -ENOMEM;
	ingest_clean(f, service);
	fputc('{', f);
	for (uint32_t i = 0; i < r->nlabels; i++) {
		if (!strcmp(r->labels[i].name, "service_name") || !*r->labels[i].value)
			continue;
		fprintf(f, "%s%s=", any ? "," : "", r->labels[i].name);
		ingest_clean(f, r->labels[i].value);
		any = true;
	}
	fputc('}', f);
	if (fclose(f) || !key)
		return -ENOMEM;
	esc = curl_easy_escape(easy, key, (int)klen);
	if (!esc ||
	    asprintf(out, "%s/ingest?name=%s&from=%" PRId64 "&until=%" PRId64 "&format=pprof", base,
		     esc, r->from_ns, r->until_ns) < 0) {
		*out = NULL;
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
int push_body__parca(void **out, size_t *out_len, const struct spool_rec *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fputs("{\"series\":[{\"labels\":{\"labels\":[{\"name\":\"__name__\",\"value\":", f);
	json_string(f, r->name);
	fputc('}', f);
	for (uint32_t i = 0; i < r->nlabels; i++) {
		fputs(",{\"name\":", f);
		json_string(f, r->labels[i].name);
		fputs(",\"value\":", f);
		json_string(f, r->labels[i].value);
		fputc('}', f);
	}
	fputs("]},\"samples\":[{\"rawProfile\":\"", f);
	base64(f, r->data, r->len);
	fputs("\"}]}],\"normalized\":false}", f);
	if (fclose(f) || !buf) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	*out_len = len;
	return 0;
}
