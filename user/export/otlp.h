/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --push-protocol otlp: the OpenTelemetry profiles signal over OTLP/HTTP, written from
 * opentelemetry-proto v1.11.0 (2026-07-21): opentelemetry/proto/collector/profiles/
 * v1development/profiles_service.proto and profiles/v1development/profiles.proto.
 *
 * One ExportProfilesServiceRequest per profile of ours: one ResourceProfiles per service
 * (profile/split.h's parts: service.name, container.id when the service is a container, host.name),
 * one Profile per sample type, and one ProfilesDictionary shared by all of them, every table
 * starting with its zero value and holding each distinct entry once.  Process and thread identity
 * are sample attributes (process.pid, process.executable.name, thread.id, thread.name), so a busy
 * host is a handful of resources, not one per process; mapping build ids are
 * process.executable.build_id.gnu attributes of the mappings.
 */
#ifndef PROF_OTLP_H
#define PROF_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pbuf;
struct profile;

/* The signal's path under an OTLP/HTTP base URL. */
#define OTLP_PROFILES_PATH	   "/v1development/profiles"
/* The standard variables we read (and keep from CMD while --push-protocol otlp is in use). */
#define OTLP_ENV_ENDPOINT	   "OTEL_EXPORTER_OTLP_ENDPOINT"
#define OTLP_ENV_HEADERS	   "OTEL_EXPORTER_OTLP_HEADERS"
#define OTLP_ENV_PROFILES_ENDPOINT "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT"
#define OTLP_ENV_PROFILES_HEADERS  "OTEL_EXPORTER_OTLP_PROFILES_HEADERS"
/* A response body read, at most: ours are a few bytes; the rest is not parsed. */
#define OTLP_RESPONSE_MAX	   4096

struct otlp_part {
	const char *service;
	bool is_container; /* service is a container id */
	const struct profile *profile;
};

/* ExportProfilesServiceRequest (uncompressed) for parts, appended to out.  host: host.name
 * ("" or NULL: none).  0 or -ENOMEM. */
int otlp__encode(struct pbuf *out, const struct otlp_part *parts, uint32_t nparts,
		 const char *host);

/* What an ExportProfilesServiceResponse says. */
struct otlp_response {
	int64_t rejected_profiles; /* partial_success.rejected_profiles; 0 when absent */
	char message[256];	   /* partial_success.error_message, printable, cut; "" */
};

/* Parses a response body (foreign bytes: at most OTLP_RESPONSE_MAX read).  An empty body is a
 * full success.  A body cut short (the caller kept its start) is read as far as it goes: a
 * partial_success or error_message running past the end is clipped.  0, or -EBADMSG for
 * anything else that is not the message. */
int otlp__parse_response(struct otlp_response *out, const void *data, size_t len);

/* OTLP/HTTP: only 429, 502, 503 and 504 are retried; any other 4xx or 5xx is final. */
bool otlp__status_retryable(long status);

/*
 * The endpoint: url as given when it already ends with OTLP_PROFILES_PATH or exact is set (the
 * signal's own variable is a full URL), else url + OTLP_PROFILES_PATH (a trailing '/' dropped).
 * 0 or -ENOMEM.
 */
int otlp__url(char **out, const char *url, bool exact);

/*
 * The endpoint from the environment when --push gives none: OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT
 * as it is (*exact set), else OTEL_EXPORTER_OTLP_ENDPOINT (the path appended later).  NULL when
 * neither is set.  The string is the environment's: copy it before push__new wipes it.
 */
const char *otlp__env_endpoint(bool *exact);

/*
 * OTEL_EXPORTER_OTLP_HEADERS' syntax, "k1=v1,k2=v2" with %XX escapes in values, into "k: v"
 * header lines (*out: a NULL-terminated array of malloc'd lines, free each and it).  -EINVAL for
 * an entry without '=', an empty key, a key with characters a header name may not have, or a
 * line break in a value.
 */
int otlp__parse_headers(char ***out, const char *spec);
void otlp__free_headers(char **lines);

#endif /* PROF_OTLP_H */
