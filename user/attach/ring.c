/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ring.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <limits.h>
#include <linux/bpf.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#define BACKLOG_CHUNK	(1u << 20) /* bytes of a chunk of the backlog (more for a larger record) */
#define BACKLOG_IDLE_MS 50	   /* the thread looks at the ring at least this often */

/* Records moved out of the ring, each as backlog_rec_bytes lays it out. */
struct backlog_chunk {
	struct backlog_chunk *next;
	size_t size;   /* bytes of data */
	size_t rd, wr; /* read, written */
	uint8_t data[];
};

struct ring {
	ring_record_fn fn;
	void *ctx;
	int epfd;
	int map_fd; /* the loader's, open while the ring is */
	size_t page;
	uint64_t mask;	      /* data bytes - 1 (a power of two) */
	uint64_t *consumer;   /* our position: the page mapped writable at offset 0 */
	const uint64_t *prod; /* the producers' position, at the start of the next page */
	const uint8_t *data;  /* the data, mapped twice in a row: a record never wraps */
	size_t prod_len;      /* bytes mapped at prod */
	uint64_t pos;	      /* read up to here */
	uint64_t released;    /* published to the producers up to here */
	uint64_t release;     /* publish once this many bytes are read */

	/* The backlog (ring__backlog): a thread moves records from the ring into chunks of memory
	 * as the producers wake it; the consumer takes them from there.  lock guards the chunks,
	 * the ring's position while one side moves records, and the counts. */
	bool backlog_on;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t room; /* a chunk was read through (or the end asked) */
	int thread_ep;	     /* the thread's epoll: the ring (edge-triggered), stop_fd */
	int ready_fd;	     /* eventfd: records moved */
	int stop_fd;	     /* eventfd: the thread's end */
	bool stopping;
	struct backlog_chunk *head, *tail; /* read from head, written at tail */
	struct backlog_chunk *retired;	   /* read through while a callback ran: freed after it */
	struct backlog_chunk *spare;	   /* one read-through chunk kept for the next */
	unsigned depth;			   /* callbacks under way (a callback may consume) */
	struct ring_backlog_stats stats;
};

struct ring *ring__open(int map_fd, ring_record_fn fn, void *ctx, size_t release)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	struct epoll_event ev = {.events = EPOLLIN};
	struct ring *r;
	uint64_t sz;
	void *p;
	int err;

	if (bpf_obj_get_info_by_fd(map_fd, &info, &len))
		return NULL;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1))) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->fn = fn;
	r->ctx = ctx;
	r->epfd = r->thread_ep = r->ready_fd = r->stop_fd = -1;
	r->map_fd = map_fd;
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	r->mask = info.max_entries - 1;
	r->release = release ? release : info.max_entries / 256;
	sz = r->page + 2 * (uint64_t)info.max_entries;
	if (sz > SIZE_MAX) {
		err = E2BIG;
		goto fail;
	}
	p = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto fail;
	}
	r->consumer = p;
	p = mmap(NULL, (size_t)sz, PROT_READ, MAP_SHARED, map_fd, (off_t)r->page);
	if (p == MAP_FAILED) {
		err = errno;
		goto fail;
	}
	r->prod = p;
	r->prod_len = (size_t)sz;
	r->data = (const uint8_t *)p + r->page;
	r->pos = r->released = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, map_fd, &ev)) {
		err = errno;
		goto fail;
	}
	return r;
fail:
	ring__free(r);
	errno = err;
	return NULL;
}

static void chunks_free(struct backlog_chunk *c)
{
	while (c) {
		struct backlog_chunk *next = c->next;

		free(c);
		c = next;
	}
}

void ring__free(struct ring *r)
{
	if (!r)
		return;
	if (r->backlog_on) {
		pthread_mutex_lock(&r->lock);
		r->stopping = true;
		pthread_cond_broadcast(&r->room);
		pthread_mutex_unlock(&r->lock);
		(void)eventfd_write(r->stop_fd, 1);
		pthread_join(r->thread, NULL);
		pthread_cond_destroy(&r->room);
		pthread_mutex_destroy(&r->lock);
	}
	chunks_free(r->head);
	chunks_free(r->retired);
	free(r->spare);
	if (r->thread_ep >= 0)
		close(r->thread_ep);
	if (r->ready_fd >= 0)
		close(r->ready_fd);
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->prod)
		munmap((void *)r->prod, r->prod_len);
	if (r->consumer)
		munmap(r->consumer, r->page);
	free(r);
}

static void publish(struct ring *r)
{
	if (r->released != r->pos) {
		__atomic_store_n(r->consumer, r->pos, __ATOMIC_RELEASE);
		r->released = r->pos;
	}
}

/* The complete record at the ring's position (its header, and the length word with its
 * discard bit), or false: none yet (a reserved one holds back the records behind it). */
static bool ring_next(struct ring *r, uint64_t prod, const uint32_t **hdr, uint32_t *len)
{
	if (r->pos >= prod)
		return false;
	*hdr = (const uint32_t *)(r->data + (r->pos & r->mask));
	*len = __atomic_load_n(*hdr, __ATOMIC_ACQUIRE);
	return !(*len & BPF_RINGBUF_BUSY_BIT);
}

/* A record's bytes in a backlog chunk: its length word, padding, its data rounded up to 8. */
static size_t backlog_rec_bytes(uint32_t size)
{
	return 8 + (((size_t)size + 7) & ~(size_t)7);
}

/* Past the record whose length word is len: the position, published once per batch. */
static void ring_skip(struct ring *r, uint32_t len)
{
	r->pos += ((len & ~BPF_RINGBUF_DISCARD_BIT) + BPF_RINGBUF_HDR_SZ + 7) & ~7ULL;
	if (r->pos - r->released >= r->release)
		publish(r);
}

/* Read straight from the ring: the records handed over, or the callback's error. */
static int ring_drain(struct ring *r)
{
	const uint32_t *hdr;
	uint64_t n = 0;
	uint32_t len;
	int err = 0;

	while (ring_next(r, __atomic_load_n(r->prod, __ATOMIC_ACQUIRE), &hdr, &len)) {
		ring_skip(r, len);
		if (len & BPF_RINGBUF_DISCARD_BIT)
			continue;
		err = r->fn(r->ctx, (void *)(hdr + 2), len);
		n++;
		if (err < 0)
			break;
	}
	publish(r);
	if (err < 0)
		return err;
	return n > INT_MAX ? INT_MAX : (int)n;
}

/* A chunk with room for need bytes at the backlog's tail, or NULL at its cap. Under lock. */
static struct backlog_chunk *backlog_room(struct ring *r, size_t need)
{
	struct backlog_chunk *c = r->tail;
	size_t size = need > BACKLOG_CHUNK ? need : BACKLOG_CHUNK;

	if (c && c->size - c->wr >= need)
		return c;
	if (r->spare && r->spare->size >= need) {
		c = r->spare;
		r->spare = NULL;
	} else {
		if (r->stats.held + size > r->stats.max && r->stats.held)
			return NULL;
		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		r->stats.held += size;
		if (r->stats.held > r->stats.peak)
			r->stats.peak = r->stats.held;
	}
	c->next = NULL;
	c->rd = c->wr = 0;
	if (r->tail)
		r->tail->next = c;
	else
		r->head = c;
	r->tail = c;
	return c;
}

/*
 * Move every complete record from the ring into the backlog, as long as it has room: the records
 * moved.  *blocked: records wait that found no room.  Under lock.
 */
static uint64_t backlog_move(struct ring *r, bool *blocked)
{
	uint64_t prod, n = 0;
	const uint32_t *hdr;
	struct backlog_chunk *c;
	uint32_t len, size;

	*blocked = false;
	do {
		prod = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
		while (ring_next(r, prod, &hdr, &len)) {
			size = len & ~BPF_RINGBUF_DISCARD_BIT;
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				c = backlog_room(r, backlog_rec_bytes(size));
				if (!c) {
					*blocked = true;
					r->stats.full++;
					goto out;
				}
				memcpy(c->data + c->wr, &size, sizeof(size));
				memcpy(c->data + c->wr + 8, hdr + 2, size);
				c->wr += backlog_rec_bytes(size);
				n++;
				r->stats.moved++;
			}
			ring_skip(r, len);
		}
	} while (prod != __atomic_load_n(r->prod, __ATOMIC_ACQUIRE));
out:
	publish(r);
	return n;
}

/* Chunks read through while no callback runs: one kept, the rest freed.  Under lock. */
static void backlog_tidy(struct ring *r)
{
	struct backlog_chunk *c;

	if (r->depth)
		return;
	while ((c = r->retired)) {
		r->retired = c->next;
		if (!r->spare) {
			r->spare = c;
			continue;
		}
		r->stats.held -= c->size;
		free(c);
	}
}

/* Hand over the backlog's records, oldest first; the records, or the callback's error. */
static int backlog_drain(struct ring *r)
{
	struct backlog_chunk *c;
	uint64_t n = 0, v;
	uint32_t size;
	bool blocked;
	void *rec;
	int err = 0;

	(void)eventfd_read(r->ready_fd, &v); /* a wait after this sees only later moves */
	pthread_mutex_lock(&r->lock);
	backlog_move(r, &blocked);
	for (;;) {
		c = r->head;
		if (c && c->rd == c->wr && c != r->tail) {
			/* Read through: retired, for a callback under way may hold its bytes. */
			r->head = c->next;
			c->next = r->retired;
			r->retired = c;
			backlog_tidy(r);
			pthread_cond_signal(&r->room);
			continue;
		}
		if (!c || c->rd == c->wr)
			break;
		memcpy(&size, c->data + c->rd, sizeof(size));
		rec = c->data + c->rd + 8;
		c->rd += backlog_rec_bytes(size);
		r->depth++;
		pthread_mutex_unlock(&r->lock);
		err = r->fn(r->ctx, rec, size);
		n++;
		pthread_mutex_lock(&r->lock);
		r->depth--;
		if (err < 0)
			break;
	}
	/* All read: the tail chunk starts over (not under a callback, which may hold its bytes) */
	if (c && c->rd == c->wr && c == r->tail && !r->depth) {
		c->rd = c->wr = 0;
		pthread_cond_signal(&r->room);
	}
	backlog_tidy(r);
	pthread_mutex_unlock(&r->lock);
	if (err < 0)
		return err;
	return n > INT_MAX ? INT_MAX : (int)n;
}

/* The backlog's thread: wakes with the producers' wake-ups, moves, tells the consumer. */
static void *backlog_main(void *arg)
{
	struct ring *r = arg;
	struct epoll_event ev;
	bool blocked;
	uint64_t n;
	int k;

	/* Moves first: records queued before the thread began raised no edge it could see. */
	for (;;) {
		pthread_mutex_lock(&r->lock);
		for (;;) {
			n = backlog_move(r, &blocked);
			if (n)
				(void)eventfd_write(r->ready_fd, 1);
			if (!blocked || r->stopping)
				break;
			/* At the cap: the ring fills meanwhile (its producers count what it cannot
			 * hold) until the consumer reads a chunk through. */
			pthread_cond_wait(&r->room, &r->lock);
			if (r->stopping)
				break;
		}
		k = r->stopping;
		pthread_mutex_unlock(&r->lock);
		if (k)
			break;
		/* Not forever: a record submitted without a wake-up (a producer that found us not
		 * caught up) raises no edge, and would wait for the next one. */
		do
			k = epoll_wait(r->thread_ep, &ev, 1, BACKLOG_IDLE_MS);
		while (k < 0 && errno == EINTR);
		if (k < 0 || (k == 1 && ev.data.fd == r->stop_fd))
			break;
	}
	return NULL;
}

int ring__backlog(struct ring *r, size_t max_bytes)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
	sigset_t all, old;
	int err;

	if (r->backlog_on)
		return -EALREADY;
	r->stats.max = max_bytes;
	r->thread_ep = epoll_create1(EPOLL_CLOEXEC);
	r->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->thread_ep < 0 || r->ready_fd < 0 || r->stop_fd < 0)
		return -errno;
	ev.data.fd = r->stop_fd;
	if (epoll_ctl(r->thread_ep, EPOLL_CTL_ADD, r->stop_fd, &ev))
		return -errno;
	ev.data.fd = r->map_fd;
	if (epoll_ctl(r->thread_ep, EPOLL_CTL_ADD, r->map_fd, &ev))
		return -errno;
	err = pthread_mutex_init(&r->lock, NULL);
	if (err)
		return -err;
	err = pthread_cond_init(&r->room, NULL);
	if (err) {
		pthread_mutex_destroy(&r->lock);
		return -err;
	}
	/* Signals are the main thread's (the session's signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&r->thread, NULL, backlog_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pthread_cond_destroy(&r->room);
		pthread_mutex_destroy(&r->lock);
		return -err;
	}
	pthread_setname_np(r->thread, "prof-backlog");
	r->backlog_on = true;
	return 0;
}

struct ring_backlog_stats ring__backlog_stats(struct ring *r)
{
	struct ring_backlog_stats st = {0};

	if (!r || !r->backlog_on)
		return st;
	pthread_mutex_lock(&r->lock);
	st = r->stats;
	pthread_mutex_unlock(&r->lock);
	return st;
}

int ring__consume(struct ring *r)
{
	return r->backlog_on ? backlog_drain(r) : ring_drain(r);
}

int ring__poll(struct ring *r, int timeout_ms)
{
	struct epoll_event ev;
	struct pollfd p;
	int n;

	if (r->backlog_on) {
		p = (struct pollfd){.fd = r->ready_fd, .events = POLLIN};
		n = poll(&p, 1, timeout_ms);
	} else {
		n = epoll_wait(r->epfd, &ev, 1, timeout_ms);
	}
	if (n < 0 && errno != EINTR)
		return -errno;
	return ring__consume(r);
}
