/*
 * tests/libhook/fork_threads.c: fork() while other threads are in the middle
 * of malloc and free. The child must find a usable heap (no lock left held
 * by a thread that does not exist in it), allocate, free, and exit 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 8
#define FORKS 40

static atomic_bool stop;

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg;
	void *held[64] = { 0 };
	while (!atomic_load(&stop)) {
		int i = rand_r(&seed) % 64;
		free(held[i]);
		size_t size = (size_t)(rand_r(&seed) % 5000);
		if (rand_r(&seed) % 200 == 0)
			size = 2u << 20;
		held[i] = malloc(size);
		if (held[i])
			memset(held[i], 1, size < 64 ? size : 64);
	}
	for (int i = 0; i < 64; i++)
		free(held[i]);
	return NULL;
}

static int child_work(void)
{
	void *blocks[1000];
	for (int i = 0; i < 1000; i++) {
		blocks[i] = malloc((size_t)(i * 37 % 4000) + 1);
		if (blocks[i] == NULL)
			return 2;
	}
	for (int i = 0; i < 1000; i++)
		free(blocks[i]);
	void *big = malloc(3u << 20);
	if (big == NULL)
		return 3;
	free(big);
	return 0;
}

int main(void)
{
	pthread_t threads[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&threads[i], NULL, churn, (void *)(size_t)(i + 1));
	int bad = 0;
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(child_work());
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "fork %d: child failed (status %#x)\n", i, status);
			bad++;
		}
	}
	atomic_store(&stop, true);
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	printf("fork_threads: %d forks, %d bad children\n", FORKS, bad);
	return bad == 0 ? 0 : 1;
}
