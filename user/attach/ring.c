/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ring.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <limits.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

struct ring {
	ring_record_fn fn;
	void *ctx;
	int epfd;
	size_t page;
	uint64_t mask;	      /* data bytes - 1 (a power of two) */
	uint64_t *consumer;   /* our position: the page mapped writable at offset 0 */
	const uint64_t *prod; /* the producers' position, at the start of the next page */
	const uint8_t *data;  /* the data, mapped twice in a row: a record never wraps */
	size_t prod_len;      /* bytes mapped at prod */
	uint64_t pos;	      /* read up to here */
	uint64_t released;    /* published to the producers up to here */
	uint64_t release;     /* publish once this many bytes are read */
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
	r->epfd = -1;
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

void ring__free(struct ring *r)
{
	if (!r)
		return;
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

int ring__consume(struct ring *r)
{
	uint64_t n = 0, prod;
	bool more;
	int err = 0;

	do {
		more = false;
		prod = __atomic_load_n(r->prod, __ATOMIC_ACQUIRE);
		while (r->pos < prod) {
			const uint32_t *hdr = (const uint32_t *)(r->data + (r->pos & r->mask));
			uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);

			if (len & BPF_RINGBUF_BUSY_BIT)
				break; /* reserved, not yet submitted: records behind it wait */
			more = true;
			r->pos += ((len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT)) +
				   BPF_RINGBUF_HDR_SZ + 7) &
				  ~7ULL;
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				err = r->fn(r->ctx, (void *)(hdr + 2),
					    len & ~BPF_RINGBUF_DISCARD_BIT);
				n++;
				if (err < 0)
					goto out;
			}
			if (r->pos - r->released >= r->release)
				publish(r);
		}
	} while (more);
out:
	publish(r);
	if (err < 0)
		return err;
	return n > INT_MAX ? INT_MAX : (int)n;
}

int ring__poll(struct ring *r, int timeout_ms)
{
	struct epoll_event ev;
	int n = epoll_wait(r->epfd, &ev, 1, timeout_ms);

	if (n < 0 && errno != EINTR)
		return -errno;
	return ring__consume(r);
}
