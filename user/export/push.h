/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --push: sends each interval's profiles to Grafana Pyroscope or Parca over http(s), with
 * libcurl's multi interface so the collection loop never waits on the network.
 *
 * A submitted profile is copied into a bounded queue; push__poll (called from the loop) starts
 * and finishes transfers without blocking.  Connection errors, timeouts, 5xx and 429 are retried
 * with doubling back-off; after max_tries (or when the queue is full) a profile goes to the
 * spool (export/spool.h), <spool_dir>/spool/, one file per profile written atomically (0600,
 * never through a symlink), sent later oldest first and deleted unsent once older than
 * max_age_s (Pyroscope refuses data older than an hour).  401 and 403 say our credentials are
 * wrong: said once as an error, the profile kept in the spool (sent when a later run has the right
 * ones).  Other 4xx are the backend's final word: counted, logged once, not retried.  Every outcome
 * is counted (PROF_PUSH_STATS).
 *
 * Protocols (the request bodies are built here, with util/protobuf.h):
 *   PUSH_PYROSCOPE         POST {url}/push.v1.PusherService/Push, Connect unary, application/proto
 *   PUSH_PYROSCOPE_INGEST  POST {url}/ingest?name=SERVICE{k=v,…}&from=NS&until=NS&format=pprof
 *   PUSH_PARCA             POST {url}/api/profiles/writeraw, grpc-gateway JSON (base64 profile)
 *   PUSH_OTLP              POST {url}/v1development/profiles, an OTLP ExportProfilesServiceRequest
 *                          (export/otlp.h), gzip; retried only on 429, 502, 503, 504 and
 *                          connection errors (OTLP/HTTP), Retry-After honoured (at most
 *                          backoff_max_ms); profiles a partial_success rejects are counted.
 *                          The URL may come from OTEL_EXPORTER_OTLP_(PROFILES_)ENDPOINT, headers
 *                          from OTEL_EXPORTER_OTLP_(PROFILES_)HEADERS: taken and kept from CMD
 *                          like ours once "otlp" is parsed.
 *
 * Credentials come from the environment or an auth file, never from the command line (a URL
 * with user:password@ is refused: the command line is in every profile's comments):
 * BPFTRACE_PROF_PUSH_TOKEN (bearer), BPFTRACE_PROF_PUSH_USER / BPFTRACE_PROF_PUSH_PASSWORD
 * (basic), BPFTRACE_PROF_PUSH_TENANT (X-Scope-OrgID); an auth file holds token=, user=,
 * password=, tenant= lines and wins over the environment key by key.  Every variable read here
 * starts with PUSH_ENV_PREFIX, so that the programs we start can be given none of them; push__new
 * also takes them out of our own environment (unset, the values wiped: /proc/PID/environ).
 */
#ifndef PROF_PUSH_H
#define PROF_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof_common.h"

struct profile;
struct push;

#define PUSH_ENV_PREFIX "BPFTRACE_PROF_PUSH_"
/* Where credentials go, for the error that refuses them in a URL. */
#define PUSH_CREDENTIALS_HINT                                                          \
	"give them in " PUSH_ENV_PREFIX "TOKEN (or _USER and _PASSWORD) or in a file " \
	"named by --push-auth-file"

enum push_protocol {
	PUSH_PYROSCOPE,
	PUSH_PYROSCOPE_INGEST,
	PUSH_PARCA,
	PUSH_OTLP, /* export/otlp.h */
};

struct push_opts {
	const char *url; /* base URL, http:// or https://; otlp: NULL takes the environment's */
	enum push_protocol protocol;
	const char *auth_file; /* NULL: credentials from the environment only */
	const char *spool_dir; /* NULL: no spool (failures are counted as failed/dropped) */
	/* 0 = the default shown */
	unsigned queue_max;	     /* 256 profiles waiting or in flight (4 modes x max_series) */
	unsigned max_parallel;	     /* 4 transfers at once */
	unsigned max_tries;	     /* 5 attempts before a profile is spooled */
	unsigned backoff_ms;	     /* 500: first retry delay, doubled each time */
	unsigned backoff_max_ms;     /* 60000 */
	unsigned timeout_ms;	     /* 15000: a whole request, connect included */
	unsigned connect_timeout_ms; /* 5000 */
	unsigned spool_max_files;    /* 1000 */
	uint64_t spool_max_bytes;    /* 256 MiB */
	unsigned max_age_s;	     /* 3600: spooled files older than this are deleted unsent */
	unsigned max_series;	     /* 64 series (services) per profile: the rest share "other" */
};

struct push_label {
	const char *name, *value;
};

/* One profile to send; push__submit copies everything. */
struct push_item {
	const void *data; /* gzip-compressed pprof (otlp: the gzip-compressed request) */
	size_t len;
	const char *name;		 /* __name__: process_cpu, memory, wall, … */
	const struct push_label *labels; /* series labels; service_name among them */
	uint32_t nlabels;
	int64_t from_ns, until_ns; /* the time range the profile covers (Unix ns) */
};

#define PUSH_STAT_FIELD(f, n, d, k) uint64_t f;
struct push_stats {
	PROF_PUSH_STATS(PUSH_STAT_FIELD)
};
#undef PUSH_STAT_FIELD

/* Prints one line on stderr and returns -EINVAL/-EPERM/… when an option, the auth file or the
 * spool directory is unusable. */
int push__new(struct push **out, const struct push_opts *opts);
/* Aborts transfers in flight (call push__flush first to keep them).  NULL is a no-op. */
void push__free(struct push *p);

/* Queues a copy of item; never blocks.  A full queue spools it (or drops it, counted).
 * 0, or -ENOMEM / -EINVAL (empty profile or name: counted as dropped). */
int push__submit(struct push *p, const struct push_item *item);
/*
 * Splits prof by service (profile/split.h, at most max_series parts) and submits one profile per
 * service with the series labels service_name, __name__ (from prof->mode: cpu → process_cpu,
 * heap → memory, calls → wall, else the mode), container_id when the service is a container, and
 * hostname.  A profile (or part) that cannot be split or encoded is counted in build_failed.
 */
int push__submit_profile(struct push *p, const struct profile *prof);
/* Starts due transfers, completes finished ones, sends spooled files; never blocks. */
int push__poll(struct push *p);
/* Milliseconds until push__poll has work (a retry falls due, curl wants to be called), -1 when
 * nothing is pending: a loop may shorten its own sleep to this. */
long push__timeout_ms(struct push *p);
/* At exit: keeps sending for at most timeout_ms, then spools what is left (or counts it
 * dropped without a spool).  Does not wait for the spool's backlog. */
int push__flush(struct push *p, unsigned timeout_ms);
void push__stats(const struct push *p, struct push_stats *out);
/* One line on stderr: what --push did, a warning when something did not get through (yet). */
void push__log(const struct push *p);

/* --push-protocol otlp without --push: OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT, else
 * OTEL_EXPORTER_OTLP_ENDPOINT (push__new appends the path to the latter); NULL when neither is
 * set.  The environment's string: push__new unsets the variable, which leaves it in place
 * (glibc never frees environment strings), and does not wipe it (an endpoint is no secret). */
const char *push__otlp_env_url(void);

/* A URL with credentials in it (user[:password]@host): refused, they would be in the command line.
 */
bool push__url_has_credentials(const char *url);
/* A "NAME=value" environment entry that push reads (PUSH_ENV_PREFIX): never handed on. */
bool push__is_secret_env(const char *entry);

/* "pyroscope", "pyroscope-ingest", "parca", "otlp" -> *out; -EINVAL for anything else.  "otlp"
 * also makes push__is_secret_env name the OTEL_EXPORTER_OTLP_* variables we read. */
int push__parse_protocol(enum push_protocol *out, const char *s);

#endif /* PROF_PUSH_H */
