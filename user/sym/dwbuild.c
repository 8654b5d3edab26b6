// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "sym/dwbuild.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/dwarf_lines.h"
#include "util/bgprio.h"
#include "util/log.h"

struct dwbuild_req {
	char *build_id, *path; /* owned; path NULL: fd */
	int fd;
	struct dwbuild_req *next;
};

struct dwbuild {
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	pthread_t thread;
	struct bgprio prio; /* in the background unless dwbuild__wait waits */
	bool started, stop, building;
	bool opened; /* the queue is built (dwbuild__open): until then it only gathers */
	struct dwbuild_req *head, **tail; /* the queue, oldest first */
	struct dwbuild_done *done;	  /* built, newest first */
	bool ready;			  /* done is not empty (read without the lock) */
	char *debug_dir;		  /* where alternate files are looked for */
};

static void free_req(struct dwbuild_req *q)
{
	if (q->fd >= 0)
		close(q->fd);
	free(q->build_id);
	free(q->path);
	free(q);
}

static void *builder(void *arg)
{
	struct dwbuild *b = arg;

	bgprio__worker(&b->prio, "prof-dwarf");
	pthread_mutex_lock(&b->lock);
	for (;;) {
		struct dwbuild_req *q;
		struct dwbuild_done *r;
		struct dwlines *d = NULL;
		int err;

		while ((!b->head || !b->opened) && !b->stop)
			pthread_cond_wait(&b->work, &b->lock);
		if (!b->head || !b->opened)
			break;
		q = b->head;
		b->head = q->next;
		if (!b->head)
			b->tail = &b->head;
		b->building = true;
		pthread_mutex_unlock(&b->lock);

		err = q->path ? dwlines__open(&d, q->path, b->debug_dir)
			      : dwlines__open_fd(&d, q->fd, b->debug_dir);
		if (err)
			d = NULL;
		r = calloc(1, sizeof(*r));
		if (r) {
			r->build_id = q->build_id;
			q->build_id = NULL;
			r->d = d;
			r->err = err;
		} else {
			dwlines__free(d); /* asked again when its file is loaded again */
		}
		free_req(q);

		pthread_mutex_lock(&b->lock);
		if (r) {
			r->next = b->done;
			b->done = r;
			__atomic_store_n(&b->ready, true, __ATOMIC_RELEASE);
		}
		b->building = false;
		if (!b->head)
			pthread_cond_broadcast(&b->idle);
	}
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

int dwbuild__new(struct dwbuild **out, const char *debug_dir)
{
	struct dwbuild *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (b && debug_dir && !(b->debug_dir = strdup(debug_dir))) {
		free(b);
		b = NULL;
	}
	if (!b)
		return -ENOMEM;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->work, NULL);
	pthread_cond_init(&b->idle, NULL);
	bgprio__init(&b->prio);
	b->tail = &b->head;
	*out = b;
	return 0;
}

static void free_done(struct dwbuild_done *r)
{
	while (r) {
		struct dwbuild_done *next = r->next;

		dwlines__free(r->d);
		free(r->build_id);
		free(r);
		r = next;
	}
}

void dwbuild__free(struct dwbuild *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	b->stop = true;
	/* What is only queued is not built: nothing will take it. */
	while (b->head) {
		struct dwbuild_req *q = b->head;

		b->head = q->next;
		free_req(q);
	}
	b->tail = &b->head;
	pthread_cond_broadcast(&b->work);
	pthread_mutex_unlock(&b->lock);
	if (b->started) {
		bgprio__raise(&b->prio); /* the build under way ends first */
		pthread_join(b->thread, NULL);
	}
	bgprio__destroy(&b->prio);
	free_done(b->done);
	pthread_cond_destroy(&b->idle);
	pthread_cond_destroy(&b->work);
	pthread_mutex_destroy(&b->lock);
	free(b->debug_dir);
	free(b);
}

int dwbuild__submit(struct dwbuild *b, const char *bid, const char *path, int fd)
{
	struct dwbuild_req *q = calloc(1, sizeof(*q));
	int err = 0;

	if (!q) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	q->fd = fd;
	q->build_id = strdup(bid);
	q->path = path ? strdup(path) : NULL;
	if (!q->build_id || (path && !q->path)) {
		free_req(q);
		return -ENOMEM;
	}
	pthread_mutex_lock(&b->lock);
	if (!b->started) {
		err = -pthread_create(&b->thread, NULL, builder, b);
		b->started = !err;
	}
	if (!err) {
		*b->tail = q;
		b->tail = &q->next;
		pthread_cond_signal(&b->work);
	}
	pthread_mutex_unlock(&b->lock);
	if (err) {
		pr_warn("cannot start the DWARF indexing thread: %s\n", strerror(-err));
		free_req(q);
	}
	return err == -ENOMEM ? err : 0;
}

bool dwbuild__ready(const struct dwbuild *b)
{
	return b && __atomic_load_n(&b->ready, __ATOMIC_ACQUIRE);
}

struct dwbuild_done *dwbuild__take(struct dwbuild *b)
{
	struct dwbuild_done *r;

	pthread_mutex_lock(&b->lock);
	r = b->done;
	b->done = NULL;
	__atomic_store_n(&b->ready, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&b->lock);
	return r;
}

void dwbuild__open(struct dwbuild *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&b->lock);
	__atomic_store_n(&b->opened, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&b->work);
	pthread_mutex_unlock(&b->lock);
}

bool dwbuild__is_open(const struct dwbuild *b)
{
	return !b || __atomic_load_n(&b->opened, __ATOMIC_ACQUIRE);
}

void dwbuild__wait(struct dwbuild *b)
{
	if (!b)
		return;
	dwbuild__open(b);
	bgprio__raise(&b->prio);
	pthread_mutex_lock(&b->lock);
	while (b->head || b->building)
		pthread_cond_wait(&b->idle, &b->lock);
	pthread_mutex_unlock(&b->lock);
	bgprio__lower(&b->prio);
}
