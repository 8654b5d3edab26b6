// The demo `make demo` profiles: a tiny "server" that caches responses (and leaks some),
// parses requests with short-lived buffers and keeps a growing log.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

struct entry {
	char *key, *value;
	struct entry *next;
};

static struct entry *cache;
static char *log_buf;
static size_t log_len, log_cap;

static NOINLINE char *parse_request(int i)
{
	char *buf = malloc(256);

	snprintf(buf, 256, "GET /item/%d HTTP/1.1", i % 500);
	return buf;
}

static NOINLINE void cache_response(const char *key)
{
	struct entry *e = malloc(sizeof(*e));

	e->key = strdup(key);
	e->value = calloc(1, 1024);
	e->next = cache;
	cache = e;
}

static NOINLINE void append_log(const char *line)
{
	size_t n = strlen(line);

	if (log_len + n + 1 > log_cap) {
		log_cap = log_cap ? log_cap * 2 : 4096;
		log_buf = realloc(log_buf, log_cap);
	}
	memcpy(log_buf + log_len, line, n + 1);
	log_len += n;
}

static NOINLINE void handle(int i)
{
	char *req = parse_request(i);

	append_log(req);
	if (i % 10 == 0)
		cache_response(req); /* never evicted: the "leak" the report should show */
	free(req);
}

int main(void)
{
	for (int i = 0; i < 20000; i++)
		handle(i);
	printf("demo: handled 20000 requests, log %zu bytes\n", log_len);
	return 0;
}
