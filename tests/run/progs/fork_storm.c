/* tests/run/progs/fork_storm.c: 4 threads, all allocating and freeing,
 * each fork 13 children while the others keep going; each child leaks 32
 * bytes and exits. The reporter must reconcile every stream exactly: a
 * child's inherited blocks are the parent's at the moment of its fork, not
 * a few events earlier or later. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define FORKS_PER_THREAD 13
#define RING 16

void *child_leak(void);
__attribute__((noinline)) void *child_leak(void)
{
	return malloc(32); /* LEAK-STORM-CHILD */
}

static void churn(void **ring, unsigned *next, int rounds)
{
	for (int i = 0; i < rounds; i++, *next = (*next + 1) % RING) {
		free(ring[*next]);
		ring[*next] = malloc(16 + (*next * 8));
	}
}

static void *storm(void *arg)
{
	void *ring[RING] = { 0 };
	unsigned next = 0;
	int failed = 0;

	for (int f = 0; f < FORKS_PER_THREAD; f++) {
		churn(ring, &next, 200);
		pid_t pid = fork();
		if (pid == 0) {
			void *volatile p = child_leak();

			p = NULL;
			exit(0);
		}
		int status = 0;
		failed |= pid < 0 || waitpid(pid, &status, 0) != pid || status != 0;
	}
	for (unsigned i = 0; i < RING; i++)
		free(ring[i]);
	*(int *)arg = failed;
	return NULL;
}

int main(void)
{
	pthread_t threads[THREADS];
	int failed[THREADS] = { 0 };

	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&threads[i], NULL, storm, &failed[i]))
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < THREADS; i++)
		if (failed[i])
			return 1;
	return 0;
}
