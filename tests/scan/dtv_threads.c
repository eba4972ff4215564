/* tests/scan/dtv_threads.c MODE: the thread DTVs glibc's dynamic linker
 * allocates for pthread_create, in the shapes valgrind reports differently:
 *   detached  a detached thread still running at exit (its DTV: possibly
 *             lost, reached only through the thread's descriptor + 8);
 *   joined    threads started and joined (their DTVs: cached with the stacks,
 *             freed by freeres);
 *   forkjoin  a fork child that starts and joins threads and exits.
 * Built with OWN_TLS the program has a TLS module of its own (one more DTV
 * entry). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef OWN_TLS
static __thread char own_tls[64];
#define TOUCH_TLS() (own_tls[0]++)
#else
#define TOUCH_TLS() ((void)0)
#endif

static void *run_forever(void *arg)
{
	TOUCH_TLS();
	for (;;)
		pause();
	return arg;
}

static void *run_once(void *arg)
{
	TOUCH_TLS();
	return arg;
}

static int detached(void)
{
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, run_forever, NULL))
		return 1;
	pthread_attr_destroy(&attr);
	usleep(50000); /* started: its stack is in use at exit */
	return 0;
}

static int joined(void)
{
	pthread_t t[4];

	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, run_once, NULL))
			return 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int forkjoin(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 1;
	if (pid == 0)
		exit(joined());
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	TOUCH_TLS();
	if (argc != 2)
		return 2;
	if (!strcmp(argv[1], "detached"))
		return detached();
	if (!strcmp(argv[1], "joined"))
		return joined();
	if (!strcmp(argv[1], "forkjoin"))
		return forkjoin();
	return 2;
}
