// Frees told late by our preloaded sampler (tests/e2e/test_sampling.sh): run at --sample-bytes
// 1024, where a 32 KiB block is always sampled (p = 1 - e^-32) with a weight of exactly its size,
// so every in-use value below is exact.  A sampled free is held by the sampler (32 KiB is under
// its 128 KiB limit) and told with a later sampled allocation or in a batch.
//
//   keep_some     4 threads x 2,000 x malloc(32768): every fourth kept to the end, the others
//                 freed at once.  glibc hands a freed 32 KiB chunk to the next malloc of that
//                 size, so a block given back before its free was told would come back as the
//                 next sampled block and the late free would take it out of use: keep_some's
//                 in-use must be exactly 2,000 blocks, 65,536,000 bytes.
//   churn         the same threads, 2,000 x malloc(32768) each, all freed: in use 0.
//   tail_free     100 x malloc(32768) kept, then all freed after the threads end, with no
//                 allocation after them: told in batches of 16 and, the last 4, at exit.
//   big_free      20 x malloc(1 MiB) freed at once: over the limit, told at once.  In use 0.
//
// Usage: held_frees
#include <pthread.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define THREADS	 4
#define ROUNDS	 2000
#define BLOCK	 32768

static void *volatile sink;
static void *kept[THREADS][ROUNDS / 4];
static void *tail[100];

NOINLINE void *keep_some(int i)
{
	char *p = malloc(BLOCK);

	p[0] = (char)i;
	return p;
}

NOINLINE void churn(void)
{
	char *p = malloc(BLOCK);

	p[BLOCK - 1] = 1;
	sink = p;
	free(p);
}

static void *worker(void *arg)
{
	int t = (int)(long)arg;

	for (int i = 0; i < ROUNDS; i++) {
		void *p = keep_some(i);

		if (i % 4 == 0)
			kept[t][i / 4] = p;
		else
			free(p);
		churn();
	}
	return NULL;
}

NOINLINE void tail_free(void)
{
	for (int i = 0; i < 100; i++)
		tail[i] = malloc(BLOCK);
	for (int i = 0; i < 100; i++)
		free(tail[i]);
}

NOINLINE void big_free(void)
{
	for (int i = 0; i < 20; i++) {
		char *p = malloc(1 << 20);

		p[0] = 1;
		sink = p;
		free(p);
	}
}

int main(void)
{
	pthread_t th[THREADS];

	big_free();
	for (long t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)t))
			return 1;
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	tail_free();
	return 0;
}
