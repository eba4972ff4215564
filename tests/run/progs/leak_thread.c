/* tests/run/progs/leak_thread.c: a leak made in a second thread. */
#include <pthread.h>
#include <stdlib.h>

void *thread_leaker(void *arg);
__attribute__((noinline)) void *thread_leaker(void *arg)
{
	void *volatile p = malloc(48); /* LEAK-THREAD */

	p = NULL;
	return arg;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread_leaker, NULL))
		return 1;
	pthread_join(t, NULL);
	return 0;
}
