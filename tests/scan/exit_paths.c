/*
 * tests/scan/exit_paths.c MODE: programs that end where valgrind still scans
 * (check_exit_paths.py runs each under valgrind and under heapledger and
 * compares the classes of every process). Each leaks a known block and
 * keeps another reachable, so a scan that did not run, or read the wrong
 * roots, shows.
 *
 *   runner    a forking test runner: each child runs a "test" and ends with
 *             _exit (one with _Exit); a child keeps a pointer to a block it
 *             inherited, and the runner itself ends with _exit
 *   threads   a forked child starts and joins threads, then exits
 *   segv      writes through a null pointer (SIGSEGV, "Access not within
 *             mapped region at address 0x0") in crash_site()
 *   abort     calls abort() (SIGABRT) over dead stack that holds the lost
 *             block's address
 *   bus       touches a page of an empty memfd mapping (SIGBUS,
 *             "Non-existent physical address")
 *   term      a forked helper server blocks until its parent sends SIGTERM;
 *             the parent waits for it and exits 0
 *   fpe       divides by zero (SIGFPE, "Integer divide by zero")
 *   ill       executes ud2 (SIGILL, "Illegal opcode")
 *   int, hup  raise SIGINT / SIGHUP, whose default action ends the process
 *   redefault sets its own SIGTERM handler, then SIG_DFL again, then raises
 *             SIGTERM: the default action ends it
 *   handlers  the program's own signal actions under the hook: sigaction
 *             answers SIG_DFL where it set none, its own SIGTERM handler
 *             runs, and a SIGHUP it ignores stays ignored across exec (it
 *             runs itself again as `ignored`, which raises SIGHUP); prints
 *             what it saw, so a difference shows in stdout
 *   ignored   raises SIGHUP (ignored since before exec) and carries on
 *   rawexit   ends with syscall(SYS_exit_group, 5), no libc exit path
 *   fread     reads its own executable whole with one large fread() (a
 *             stream never oriented, its buffer freed by freeres after
 *             exit's stdio cleanup, as under valgrind) and exits 0
 *   uring     an io_uring with a kernel SQPOLL thread and an io-wq worker
 *             (a NOP forced async) still alive at exit: threads of the
 *             process that run only kernel code; prints through stdio (a
 *             buffer only freeres frees) and exits 0. Exits 77 (skipped)
 *             where the kernel refuses io_uring
 *   leader    main calls pthread_exit while a thread runs on; that thread
 *             waits until the leader has ended (a zombie: /proc/self names
 *             it, and its maps read empty), prints through stdio and calls
 *             exit(0): the scan's roots and freeres must be as with main
 *             alive
 */
#define _GNU_SOURCE
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void *kept;                /* still reachable */
static void *volatile sink;       /* defeats dead-store elimination */
#define HIDDEN ((uintptr_t)0x5555555555555555u)
static volatile uintptr_t last_lost; /* the latest lost block ^ HIDDEN: not a pointer */

static __attribute__((noinline)) void leak(size_t size)
{
	void *p = malloc(size);
	memset(p, 0x5a, size);
	sink = p;
	sink = NULL; /* the only pointer is gone: definitely lost */
	last_lost = (uintptr_t)p ^ HIDDEN;
}

/* Dead stack full of the lost block's address, where the next calls' frames
 * will lie (a program's earlier deep calls leave such words; memcheck takes
 * a new frame's unwritten slots as undefined and never reads them). */
static __attribute__((noinline)) int stale_words(void)
{
	volatile uintptr_t words[512];
	for (size_t i = 0; i < 512; i++)
		words[i] = last_lost ^ HIDDEN;
	return words[511] != 0;
}

static void child_test(int n)
{
	char **inherited = kept;
	kept = malloc(48); /* the child's own, reachable */
	((void **)kept)[0] = inherited; /* the parent's, still reached */
	leak(80 + (size_t)n);
	printf("test %d done\n", n); /* buffered: _exit must not write it */
	if (n == 2)
		_Exit(0);
	_exit(0);
}

static int runner(void)
{
	kept = malloc(200);
	leak(33);
	setenv("EXIT_PATHS_RUNNER", "1", 1); /* glibc's, freed by freeres */
	printf("runner: "); /* pending in the parent: not written by any child */
	for (int n = 0; n < 3; n++) {
		pid_t pid = fork();
		if (pid == 0)
			child_test(n);
		int status;
		waitpid(pid, &status, 0);
	}
	printf("done\n");
	fflush(stdout);
	_exit(0);
}

static void *thread_main(void *arg)
{
	void *p = malloc(24);
	free(p);
	return arg;
}

static int threads(void)
{
	kept = malloc(100);
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, thread_main, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		leak(56);
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	return 0;
}

/* The state letter of task tid of this process ('?' if unreadable). */
static char task_state(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static void *last_thread(void *arg)
{
	pid_t leader = (pid_t)(intptr_t)arg;
	for (int i = 0; i < 5000 && task_state(leader) != 'Z'; i++)
		usleep(1000);
	leak(56);
	printf("the last thread exits\n");
	exit(0);
}

static int leader(void)
{
	kept = malloc(100);
	pthread_t t;
	if (pthread_create(&t, NULL, last_thread, (void *)(intptr_t)getpid()))
		return 1;
	pthread_exit(NULL);
}

/* Something kept and something lost before each crash. */
static void before_crash(void)
{
	kept = malloc(64);
	leak(40);
}

static volatile sig_atomic_t fired;

static void on_signal(int sig)
{
	fired = sig;
}

static __attribute__((noinline)) void crash_site(const char *mode)
{
	if (!strcmp(mode, "segv")) {
		*(volatile int *)sink = 1; /* sink is NULL */
	} else if (!strcmp(mode, "abort")) {
		if (stale_words())
			abort();
	} else if (!strcmp(mode, "bus")) {
		int fd = memfd_create("exit_paths", 0); /* empty: no page behind the mapping */
		volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		p[0] = 1;
	} else if (!strcmp(mode, "fpe")) {
		volatile int one = 1, zero = 0; /* both read: gcc makes 1 / x a compare */
		sink = (void *)(intptr_t)(one / zero);
	} else if (!strcmp(mode, "ill")) {
		__builtin_trap();
	} else if (!strcmp(mode, "int")) {
		raise(SIGINT);
	} else if (!strcmp(mode, "hup")) {
		raise(SIGHUP);
	} else if (!strcmp(mode, "redefault")) {
		signal(SIGTERM, on_signal);
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
	}
}

static int helper_server(void)
{
	int ready[2];
	if (pipe(ready) != 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		before_crash();
		close(ready[0]);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause(); /* serves until told to stop */
	}
	char c;
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return 1;
	kill(pid, SIGTERM);
	int status;
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 0 : 1;
}

static const char *action_name(const struct sigaction *sa)
{
	if (sa->sa_handler == SIG_DFL)
		return "default";
	if (sa->sa_handler == SIG_IGN)
		return "ignored";
	return sa->sa_handler == on_signal ? "the program's handler" : "another handler";
}

static int handlers(const char *self)
{
	struct sigaction now;
	int status;
	before_crash();
	sigaction(SIGTERM, NULL, &now);
	printf("SIGTERM at start: %s\n", action_name(&now));
	sigaction(SIGSEGV, NULL, &now);
	printf("SIGSEGV at start: %s\n", action_name(&now));
	signal(SIGTERM, on_signal);
	raise(SIGTERM);
	printf("own handler ran for signal %d\n", (int)fired);
	sigaction(SIGTERM, NULL, &now);
	printf("SIGTERM now: %s\n", action_name(&now));
	printf("SIGHUP was: %s\n", signal(SIGHUP, SIG_IGN) == SIG_DFL ? "default" : "other");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "ignored", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		printf("child killed by signal %d\n", WTERMSIG(status));
	else
		printf("child exited %d\n", WEXITSTATUS(status));
	return 0;
}

static int ignored(void)
{
	struct sigaction now;
	sigaction(SIGHUP, NULL, &now);
	printf("SIGHUP after exec: %s\n", action_name(&now));
	fflush(stdout);
	raise(SIGHUP);
	printf("SIGHUP raised, still running\n");
	return 0;
}

static int read_whole(const char *self)
{
	static char image[16 << 20];
	FILE *f = fopen(self, "r");
	if (f == NULL || fread(image, 1, sizeof(image), f) == 0 || !feof(f))
		return 1;
	kept = f; /* still reachable, as valgrind says of the FILE */
	leak(32);
	return 0;
}

/* Raw system calls: liburing is not needed for one NOP. */
static int uring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQPOLL;
	p.sq_thread_idle = 10000; /* ms: the SQPOLL thread outlives main */
	int fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (fd < 0) {
		perror("io_uring_setup");
		return 77;
	}
	size_t ring_size = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	char *ring = mmap(NULL, ring_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
			  IORING_OFF_SQ_RING);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (ring == MAP_FAILED || sqes == MAP_FAILED) {
		perror("mmap");
		return 77;
	}
	unsigned *tail = (unsigned *)(ring + p.sq_off.tail);
	unsigned *array = (unsigned *)(ring + p.sq_off.array);
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_NOP;
	sqes[0].flags = IOSQE_ASYNC; /* through an io-wq worker thread */
	array[0] = 0;
	__atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
	syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_SQ_WAKEUP,
		NULL, 0);
	kept = malloc(40);
	leak(24);
	printf("uring done\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "segv") || !strcmp(mode, "abort") || !strcmp(mode, "bus") ||
	    !strcmp(mode, "fpe") || !strcmp(mode, "ill") || !strcmp(mode, "int") ||
	    !strcmp(mode, "hup") || !strcmp(mode, "redefault")) {
		before_crash();
		crash_site(mode);
		return 3; /* not reached */
	}
	if (!strcmp(mode, "term"))
		return helper_server();
	if (!strcmp(mode, "rawexit")) {
		before_crash();
		syscall(SYS_exit_group, 5);
	}
	if (!strcmp(mode, "handlers"))
		return handlers(argv[0]);
	if (!strcmp(mode, "ignored"))
		return ignored();
	if (!strcmp(mode, "runner"))
		return runner();
	if (!strcmp(mode, "threads"))
		return threads();
	if (!strcmp(mode, "uring"))
		return uring();
	if (!strcmp(mode, "fread"))
		return read_whole(argv[0]);
	if (!strcmp(mode, "leader"))
		return leader();
	fprintf(stderr, "usage: exit_paths runner|threads|segv|abort|bus|term|redefault|handlers|ignored|rawexit|uring|fread|leader\n");
	return 2;
}
