/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The request bodies (and the /ingest URL) of push's older protocols, built from one queued or
 * spooled profile (export/spool.h's spool_rec); the OTLP request is export/otlp.h's.  Each
 * returns 0 or -ENOMEM; *out is malloc'd, the caller's.
 */
#ifndef PROF_PUSH_BODY_H
#define PROF_PUSH_BODY_H

#include <stddef.h>

#include <curl/curl.h>

struct spool_rec;

/* push.v1.PushRequest (Pyroscope's Connect Push). */
int push_body__pyroscope(void **out, size_t *out_len, const struct spool_rec *r);
/* parca.profilestore.v1alpha1.WriteRawRequest as grpc-gateway JSON. */
int push_body__parca(void **out, size_t *out_len, const struct spool_rec *r);
/* {base}/ingest?name=SERVICE{k=v,...}&from=NS&until=NS&format=pprof (easy: for escaping). */
int push_body__ingest_url(char **out, const char *base, const struct spool_rec *r, CURL *easy);

#endif /* PROF_PUSH_BODY_H */
