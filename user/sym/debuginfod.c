// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/debuginfod.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/hashmap.h"
#include "util/log.h"

#define BUILD_ID_HEX_MAX 128 /* a 64-byte note; GNU build ids are 20 bytes */
#define NS_PER_S	 1000000000LL

struct bid_key {
	char hex[BUILD_ID_HEX_MAX + 2]; /* NUL-padded: compared whole */
};

struct request {
	struct request *next;
	struct bid_key key;
};

/* Why the progress callback cut a fetch. */
enum cut {
	CUT_NONE,
	CUT_STOP,
	CUT_TIMEOUT,
	CUT_SIZE,
};

struct dbgfetch {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a request queued, or stop */
	pthread_cond_t idle; /* a request done */
	pthread_t thread;
	bool started, stop;
	struct hashmap *asked; /* bid_key -> int64_t: when it may be asked again (0: never) */
	struct request *head, *tail;
	unsigned pending; /* queued and under way */
	struct dbgfetch_file *files;
	size_t nfiles, files_cap;
	bool arrived; /* nfiles != 0, read without the lock */
	struct dbgfetch_stats stats;
	/* The fetch under way (the fetch thread's; stop is read under no lock there). */
	int64_t deadline_ns;
	uint64_t max_bytes;
	unsigned timeout_s;
	enum cut cut;
	bool warned;
};

static bool valid_hex(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n > BUILD_ID_HEX_MAX || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* libdebuginfod calls this about once a second while it fetches: a nonzero return cuts it. */
static int progress(debuginfod_client *c, long got, long total)
{
	struct dbgfetch *f = debuginfod_get_user_data(c);

	if (__atomic_load_n(&f->stop, __ATOMIC_RELAXED))
		f->cut = CUT_STOP;
	else if (clock__mono_ns() > f->deadline_ns)
		f->cut = CUT_TIMEOUT;
	else if ((got > 0 && (uint64_t)got > f->max_bytes) ||
		 (total > 0 && (uint64_t)total > f->max_bytes))
		f->cut = CUT_SIZE;
	return f->cut != CUT_NONE;
}

static int add_file(struct dbgfetch *f, const char *hex, const char *path)
{
	struct dbgfetch_file *v;

	if (f->nfiles == f->files_cap) {
		size_t cap = f->files_cap ? 2 * f->files_cap : 16;

		v = realloc(f->files, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->files = v;
		f->files_cap = cap;
	}
	v = &f->files[f->nfiles];
	v->build_id = strdup(hex);
	v->path = strdup(path);
	if (!v->build_id || !v->path) {
		free(v->build_id);
		free(v->path);
		return -ENOMEM;
	}
	f->nfiles++;
	__atomic_store_n(&f->arrived, true, __ATOMIC_RELEASE);
	return 0;
}

/*
 * libdebuginfod 0.188 takes a fetch our progress callback cut for a miss and leaves a negative
 * entry, <cache>/<build id>/debuginfo of 0 bytes, that would answer "no such file" for 10 min
 * to this run and the next: removed (its cache found as libdebuginfod finds it; no link
 * followed on the way).
 */
static void forget_miss(const char *hex)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME");
	const char *xdg = getenv("XDG_CACHE_HOME");
	char dir[PATH_MAX];
	int dfd, bfd = -1, n;
	struct stat st;

	if (env && env[0])
		n = snprintf(dir, sizeof(dir), "%s", env);
	else {
		n = snprintf(dir, sizeof(dir), "%s/.debuginfod_client_cache", home ? home : "");
		if (n > 0 && (size_t)n < sizeof(dir) && stat(dir, &st) < 0)
			n = xdg && xdg[0]
				    ? snprintf(dir, sizeof(dir), "%s/debuginfod_client", xdg)
				    : snprintf(dir, sizeof(dir), "%s/.cache/debuginfod_client",
					       home ? home : "");
	}
	if (n <= 0 || (size_t)n >= sizeof(dir))
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		bfd = openat(dfd, hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd >= 0 && !fstatat(bfd, "debuginfo", &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISREG(st.st_mode) && st.st_size == 0)
		unlinkat(bfd, "debuginfo", 0);
	if (bfd >= 0)
		close(bfd);
	if (dfd >= 0)
		close(dfd);
}

/* One fetch's outcome, counted (under the lock). */
static void settle(struct dbgfetch *f, const struct request *r, int rc, const char *path)
{
	int64_t *retry = hashmap__find(f->asked, &r->key);
	bool failed = false;

	if (rc < 0 && f->cut != CUT_NONE)
		forget_miss(r->key.hex);
	if (rc >= 0) {
		if (add_file(f, r->key.hex, path))
			failed = true; /* out of memory: asked again later */
		else
			f->stats.fetched++;
		pr_info("debuginfod: debug file of build id %s received\n", r->key.hex);
	} else if (f->cut == CUT_STOP) {
		f->stats.timeouts++; /* not there when the run's last profile was written */
		return;
	} else if (f->cut == CUT_NONE && rc == -ENOENT) {
		f->stats.missing++;
		pr_info("debuginfod: no server has build id %s\n", r->key.hex);
	} else if (f->cut == CUT_TIMEOUT || rc == -ETIME || rc == -ETIMEDOUT) {
		f->stats.timeouts++;
		failed = true;
		if (!f->warned)
			pr_warn("debuginfod: no debug file of build id %s within %u s; its frames "
				"keep "
				"file offsets for names (counted: debuginfod_timeouts)\n",
				r->key.hex, f->timeout_s);
		f->warned = true;
	} else {
		f->stats.failed++;
		failed = true;
		pr_info("debuginfod: build id %s: %s\n", r->key.hex,
			f->cut == CUT_SIZE ? "over the size cap" : strerror(-rc));
	}
	if (failed && retry)
		*retry = clock__mono_ns() + DBGFETCH_RETRY_S * NS_PER_S;
}

static void *fetch_main(void *arg)
{
	struct dbgfetch *f = arg;
	debuginfod_client *c = debuginfod_begin();
	struct request *r;

	if (c) {
		debuginfod_set_user_data(c, f);
		debuginfod_set_progressfn(c, progress);
	}
	pthread_mutex_lock(&f->lock);
	for (;;) {
		char *path = NULL;
		int rc;

		while (!f->head && !f->stop)
			pthread_cond_wait(&f->work, &f->lock);
		if (f->stop)
			break;
		r = f->head;
		f->head = r->next;
		if (!f->head)
			f->tail = NULL;
		f->cut = CUT_NONE;
		f->deadline_ns = clock__mono_ns() + (int64_t)f->timeout_s * NS_PER_S;
		pthread_mutex_unlock(&f->lock);

		rc = c ? debuginfod_find_debuginfo(c, (const unsigned char *)r->key.hex, 0, &path)
		       : -ENOMEM;
		if (rc >= 0)
			close(rc); /* read again by path, through safe_open, with its caps */

		pthread_mutex_lock(&f->lock);
		settle(f, r, rc, path);
		free(path);
		free(r);
		f->pending--;
		pthread_cond_broadcast(&f->idle);
	}
	pthread_mutex_unlock(&f->lock);
	if (c)
		debuginfod_end(c);
	return NULL;
}

int dbgfetch__new(struct dbgfetch **out, const struct dbgfetch_opts *opts)
{
	const char *urls = getenv("DEBUGINFOD_URLS"), *max = getenv("DEBUGINFOD_MAXSIZE");
	pthread_condattr_t ca;
	struct dbgfetch *f;
	int err;

	*out = NULL;
	if (!urls || !urls[strspn(urls, " \t")])
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	err = hashmap__new(&f->asked, sizeof(struct bid_key), sizeof(int64_t));
	if (err) {
		free(f);
		return err;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* dbgfetch__wait's deadline */
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->idle, &ca);
	pthread_condattr_destroy(&ca);
	f->timeout_s = opts && opts->timeout_s ? opts->timeout_s : DBGFETCH_TIMEOUT_S;
	f->max_bytes = opts && opts->max_bytes ? opts->max_bytes : DBGFETCH_MAX_BYTES;
	if (max && strtoull(max, NULL, 10) > 0 && strtoull(max, NULL, 10) < f->max_bytes)
		f->max_bytes = strtoull(max, NULL, 10);
	*out = f;
	return 0;
}

void dbgfetch__free(struct dbgfetch *f)
{
	struct request *r;

	if (!f)
		return;
	if (f->started) {
		pthread_mutex_lock(&f->lock);
		__atomic_store_n(&f->stop, true, __ATOMIC_RELAXED);
		pthread_cond_signal(&f->work);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->thread, NULL);
	}
	while ((r = f->head)) {
		f->head = r->next;
		free(r);
	}
	dbgfetch__free_files(f->files, f->nfiles);
	hashmap__free(f->asked);
	pthread_cond_destroy(&f->idle);
	pthread_cond_destroy(&f->work);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int dbgfetch__want(struct dbgfetch *f, const char *build_id)
{
	struct request *r = NULL;
	struct bid_key key = {0};
	bool created;
	int64_t *retry;
	int err = 0;

	if (!valid_hex(build_id))
		return -EINVAL;
	strcpy(key.hex, build_id);
	pthread_mutex_lock(&f->lock);
	if (f->stop)
		goto cleanup; /* finished: the last profile is written */
	if (hashmap__upsert(f->asked, (void **)&retry, &key, &created)) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (!created && (!*retry || clock__mono_ns() < *retry))
		goto cleanup;
	*retry = 0;
	r = calloc(1, sizeof(*r));
	if (!r) {
		hashmap__delete(f->asked, &key);
		err = -ENOMEM;
		goto cleanup;
	}
	r->key = key;
	if (!f->started) {
		err = -pthread_create(&f->thread, NULL, fetch_main, f);
		if (err) {
			hashmap__delete(f->asked, &key);
			free(r);
			goto cleanup;
		}
		f->started = true;
	}
	if (f->tail)
		f->tail->next = r;
	else
		f->head = r;
	f->tail = r;
	f->pending++;
	pthread_cond_signal(&f->work);
cleanup:
	pthread_mutex_unlock(&f->lock);
	return err;
}

unsigned dbgfetch__pending(struct dbgfetch *f)
{
	unsigned n;

	pthread_mutex_lock(&f->lock);
	n = f->pending;
	pthread_mutex_unlock(&f->lock);
	return n;
}

/* Until none is pending or the deadline; the lock held. */
static void wait_idle(struct dbgfetch *f, int64_t deadline_ns)
{
	struct timespec until;

	clock__timespec(&until, deadline_ns);
	while (f->pending && pthread_cond_timedwait(&f->idle, &f->lock, &until) != ETIMEDOUT)
		;
}

bool dbgfetch__wait(struct dbgfetch *f, unsigned ms)
{
	bool idle;

	pthread_mutex_lock(&f->lock);
	wait_idle(f, clock__mono_ns() + (int64_t)ms * 1000000);
	idle = !f->pending;
	pthread_mutex_unlock(&f->lock);
	return idle;
}

void dbgfetch__finish(struct dbgfetch *f, unsigned ms)
{
	struct request *r;

	pthread_mutex_lock(&f->lock);
	wait_idle(f, clock__mono_ns() + (int64_t)ms * 1000000);
	__atomic_store_n(&f->stop, true, __ATOMIC_RELAXED);
	while ((r = f->head)) {
		f->head = r->next;
		free(r);
		f->pending--;
		f->stats.timeouts++;
	}
	f->tail = NULL;
	/* The fetch under way is cut at its next progress call, about a second away. */
	wait_idle(f, clock__mono_ns() + 3 * NS_PER_S);
	pthread_mutex_unlock(&f->lock);
}

bool dbgfetch__arrived(const struct dbgfetch *f)
{
	return __atomic_load_n(&f->arrived, __ATOMIC_ACQUIRE);
}

int dbgfetch__take(struct dbgfetch *f, struct dbgfetch_file **out, size_t *n)
{
	pthread_mutex_lock(&f->lock);
	*out = f->files;
	*n = f->nfiles;
	f->files = NULL;
	f->nfiles = f->files_cap = 0;
	__atomic_store_n(&f->arrived, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&f->lock);
	return 0;
}

void dbgfetch__free_files(struct dbgfetch_file *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(files[i].build_id);
		free(files[i].path);
	}
	free(files);
}

void dbgfetch__stats(struct dbgfetch *f, struct dbgfetch_stats *out)
{
	pthread_mutex_lock(&f->lock);
	*out = f->stats;
	pthread_mutex_unlock(&f->lock);
}

unsigned dbgfetch__timeout_s(const struct dbgfetch *f)
{
	return f->timeout_s;
}
