/* tests/scan/scan_check_churn.c: on-demand leak checks while 8 threads
 * allocate and free as fast as they can: 10 heapledger_check_leaks() calls,
 * then one check through check_signal=SIGUSR2 (run by the hook's helper
 * thread; we wait until the log shows it). A block leaked before the first
 * check must be definitely lost in every check, and nothing may hang or
 * crash. check_churn.sh reads the log. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapledger.h"

#define THREADS 8
#define CHECKS 10

static atomic_int stop;

static void *churn(void *arg)
{
	void *ring[64] = { 0 };
	unsigned next = (unsigned)(uintptr_t)arg;
	while (!atomic_load(&stop)) {
		next = (next * 1103515245u + 12345u);
		unsigned i = next % 64;
		free(ring[i]);
		ring[i] = malloc(16 + next % 2000);
	}
	for (unsigned i = 0; i < 64; i++)
		free(ring[i]);
	return NULL;
}

__attribute__((noinline)) static void leak(void)
{
	void *p = malloc(4242);
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* True once the log holds the text of check number `n`. */
static int log_has_check(const char *path, int n)
{
	static char text[1 << 20];
	char want[32];
	snprintf(want, sizeof(want), "leak check %d", n);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[got > 0 ? got : 0] = '\0';
	return strstr(text, want) != NULL;
}

int main(void)
{
	pthread_t threads[THREADS];
	leak();
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&threads[i], NULL, churn, (void *)(uintptr_t)(i + 1)))
			return 1;
	for (int i = 0; i < CHECKS; i++)
		if (heapledger_check_leaks() != 0)
			return 3;
	raise(SIGUSR2);
	const char *log = getenv("HEAPLEDGER_LOG");
	for (int waited = 0; log && !log_has_check(log, CHECKS + 1); waited++) {
		if (waited == 600)
			return 4; /* a minute: the signal's check never ran */
		usleep(100000);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
