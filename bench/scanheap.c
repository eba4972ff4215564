/*
 * scanheap: the leak scan's workload. Builds a heap of BLOCKS live blocks
 * (8..200 B, about 100 B each: 10 M blocks hold about 1 GiB) and exits, so
 * the tool's exit leak scan runs over all of them:
 *  - 80% in singly linked lists of 100 blocks whose heads are kept in a
 *    heap array (reachable); every tenth list's head is dropped (its head
 *    definitely lost, the 99 behind it indirectly lost);
 *  - 15% single blocks kept in a heap array (reachable);
 *  - 5% single blocks whose pointer is dropped (definitely lost).
 * With "check THREADS N" it then starts THREADS threads that keep
 * allocating and freeing, runs the tool's on-demand leak check N times
 * while they do (heapledger_check_leaks, or LSan's
 * __lsan_do_recoverable_leak_check, found with dlsym) and prints the time
 * of each.
 *
 * usage: scanheap BLOCKS [check THREADS N]
 * When the environment names a file descriptor in HL_BENCH_EXIT_FD (exittime
 * sets it), the CLOCK_MONOTONIC time at which main returns is written there,
 * so the time the tool spends after the program's last instruction (its exit
 * scan and report) can be measured. Prints "checksum HEX" from the blocks'
 * contents (independent of addresses).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define LIST_LENGTH 100

struct node {
	struct node *next;
	uint64_t value;
};

static struct node **lists;  /* heads; a dropped list's slot is NULL */
static void **singles;       /* the reachable single blocks */
static atomic_int stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t block_size(struct bench_rng *rng)
{
	return 8 + (size_t)(bench_rng_next(rng) % 193);
}

static void *fill(void *p, size_t bytes, uint64_t value)
{
	if (p == NULL) {
		fprintf(stderr, "scanheap: out of memory\n");
		exit(2);
	}
	memset(p, 0, bytes);
	((struct node *)p)->value = value;
	return p;
}

static void *churn(void *arg)
{
	struct bench_rng rng;
	void *window[64] = { 0 };
	bench_rng_seed(&rng, (uintptr_t)arg);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned slot = (unsigned)(bench_rng_next(&rng) % 64);
		free(window[slot]);
		window[slot] = malloc(block_size(&rng));
	}
	for (unsigned i = 0; i < 64; i++)
		free(window[i]);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void run_checks(unsigned threads, unsigned n)
{
	int (*hl_check)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "heapledger_check_leaks");
	int (*lsan_check)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "__lsan_do_recoverable_leak_check");
	if (hl_check == NULL && lsan_check == NULL) {
		printf("check n/a\n");
		return;
	}
	pthread_t *tids = calloc(threads, sizeof(*tids));
	double *ms = calloc(n, sizeof(*ms));
	if (tids == NULL || ms == NULL)
		exit(2);
	for (unsigned i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, churn, (void *)(uintptr_t)(i + 1)) != 0) {
			fprintf(stderr, "scanheap: pthread_create failed\n");
			exit(2);
		}
	usleep(100000);
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		if (hl_check)
			hl_check();
		else
			lsan_check();
		ms[i] = (double)(now_ns() - t0) / 1e6;
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	qsort(ms, n, sizeof(*ms), cmp_double);
	printf("check_ms median %.1f min %.1f max %.1f threads %u checks %u\n", ms[n / 2], ms[0],
	       ms[n - 1], threads, n);
	free(tids);
	free(ms);
}

int main(int argc, char **argv)
{
	if (argc != 2 && !(argc == 5 && strcmp(argv[2], "check") == 0)) {
		fprintf(stderr, "usage: scanheap BLOCKS [check THREADS N]\n");
		return 2;
	}
	size_t blocks = strtoull(argv[1], NULL, 10);
	size_t nlists = blocks * 8 / 10 / LIST_LENGTH;
	size_t nsingles = blocks * 15 / 100;
	size_t nlost = blocks - nlists * LIST_LENGTH - nsingles;
	struct bench_rng rng;
	bench_rng_seed(&rng, 21);
	uint64_t built = now_ns(), value = 0;

	lists = fill(malloc(nlists * sizeof(*lists) + 8), nlists * sizeof(*lists) + 8, 0);
	singles = fill(malloc(nsingles * sizeof(*singles) + 8), nsingles * sizeof(*singles) + 8, 0);
	for (size_t l = 0; l < nlists; l++) {
		struct node *head = NULL;
		for (unsigned k = 0; k < LIST_LENGTH; k++) {
			size_t bytes = block_size(&rng) + sizeof(struct node);
			struct node *n = fill(malloc(bytes), bytes, ++value);
			n->next = head;
			head = n;
		}
		lists[l] = l % 10 == 9 ? NULL : head; /* every tenth list is lost */
	}
	for (size_t i = 0; i < nsingles; i++) {
		size_t bytes = block_size(&rng);
		singles[i] = fill(malloc(bytes), bytes, ++value);
	}
	for (size_t i = 0; i < nlost; i++) {
		size_t bytes = block_size(&rng);
		void *volatile p = fill(malloc(bytes), bytes, ++value);
		(void)p;
	}

	uint64_t sum = 0;
	for (size_t l = 0; l < nlists; l++)
		for (struct node *n = lists[l]; n; n = n->next)
			sum = sum * 31 + n->value;
	for (size_t i = 0; i < nsingles; i++)
		sum = sum * 31 + ((struct node *)singles[i])->value;
	printf("checksum %016" PRIx64 "\n", sum);
	fprintf(stderr, "scanheap: %zu blocks built in %.2f s\n", blocks, (double)(now_ns() - built) / 1e9);
	if (argc == 5)
		run_checks((unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]));
	fflush(stdout);

	const char *fd = getenv("HL_BENCH_EXIT_FD");
	if (fd) {
		char line[32];
		int len = snprintf(line, sizeof(line), "%llu\n", (unsigned long long)now_ns());
		if (write(atoi(fd), line, (size_t)len) != len)
			return 2;
	}
	return 0;
}
