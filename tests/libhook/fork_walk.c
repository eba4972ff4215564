/*
 * tests/libhook/fork_walk.c: fork() while another thread of the program is
 * inside the hook's stack walk, blocked in dl_iterate_phdr (whose lock
 * glibc does not reset in the child). The child's own first capture
 * through a new call site must not wait for that lock forever.
 *
 * A third thread holds dl_iterate_phdr's lock (its callback waits on a
 * pipe), so the walker stays inside its walk as long as the test wants:
 *   drain: the lock is let go while the fork waits, so the walk ends
 *          before the fork and the child walks as usual;
 *   busy:  the lock is let go only after the fork has returned, so the
 *          fork goes on without waiting for the walk, and the child makes
 *          no walk of its own (its stacks count as lost) instead of hanging;
 *   held:  no walk, only the program's own thread inside dl_iterate_phdr
 *          at fork (let go after it): the child's first capture must not
 *          wait for that lock either.
 * Each waits on events (thread states in /proc, a pipe), never on time; a
 * watchdog turns a hung child into a failure that says so.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int release_pipe[2];
static atomic_bool holder_in, go_holder, go_walker, go_forker;
static _Atomic pid_t walker_tid, forker_tid, child_pid;
static atomic_bool forked;
static int child_status = -1;

/* Threads are made before the lock is taken, and the main thread makes no
 * call that allocates while it is held: a walk of theirs would wait too. */
static void wait_flag(atomic_bool *flag)
{
	while (!atomic_load(flag))
		sched_yield();
}

static int holding_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	char c;
	(void)info;
	(void)size;
	(void)data;
	atomic_store(&holder_in, true);
	if (read(release_pipe[0], &c, 1) != 1)
		_exit(5);
	return 1;
}

static void *holder(void *arg)
{
	(void)arg;
	wait_flag(&go_holder);
	dl_iterate_phdr(holding_cb, NULL);
	return NULL;
}

/* Call sites no walk has seen, one pair a run (libunwind caches what it
 * looked up once): a walk through them looks up their unwind tables. */
#define SITE(name)                                                      \
	static __attribute__((noinline)) void *name(size_t n)            \
	{                                                                \
		void *p = malloc(n);                                     \
		__asm__ volatile("" : : "r"(p) : "memory");              \
		return p;                                                \
	}
SITE(walker_site_drain)
SITE(child_site_drain)
SITE(walker_site_busy)
SITE(child_site_busy)
SITE(child_site_held)
static bool walk_in_run;
static void *(*walker_site)(size_t);
static void *(*child_site)(size_t);

static void *walker(void *arg)
{
	(void)arg;
	atomic_store(&walker_tid, (pid_t)syscall(SYS_gettid));
	wait_flag(&go_walker);
	if (walk_in_run)
		free(walker_site(40));
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	atomic_store(&forker_tid, (pid_t)syscall(SYS_gettid));
	wait_flag(&go_forker);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 100; i++)
			free(child_site((size_t)i + 1));
		_exit(0);
	}
	atomic_store(&child_pid, pid);
	atomic_store(&forked, true);
	if (pid > 0 && waitpid(pid, &child_status, 0) != pid)
		child_status = -1;
	return NULL;
}

static void on_watchdog(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: the forked child hung (a lock held at fork)\n";
	if (write(2, msg, sizeof(msg) - 1) < 0) {}
	if (atomic_load(&child_pid) > 0)
		kill(atomic_load(&child_pid), SIGKILL);
	_exit(1);
}

/* Until thread tid sleeps (blocked on a lock, a pipe, a wait); system
 * calls only, no stdio (it allocates). */
static void wait_sleeping(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	for (;;) {
		int fd = open(path, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		char *close_paren;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		close_paren = strrchr(buf, ')');
		if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'S')
			return;
		sched_yield();
	}
}

static int run(const char *name, bool release_before_fork)
{
	pthread_t h, w, f;
	atomic_store(&holder_in, false);
	atomic_store(&go_holder, false);
	atomic_store(&go_walker, false);
	atomic_store(&go_forker, false);
	atomic_store(&walker_tid, 0);
	atomic_store(&forker_tid, 0);
	atomic_store(&child_pid, 0);
	atomic_store(&forked, false);
	if (pipe(release_pipe) != 0)
		return 2;
	pthread_create(&h, NULL, holder, NULL);
	pthread_create(&w, NULL, walker, NULL);
	pthread_create(&f, NULL, forker, NULL);
	while (!atomic_load(&walker_tid) || !atomic_load(&forker_tid))
		sched_yield();
	atomic_store(&go_holder, true);
	wait_flag(&holder_in); /* the lock is held */
	atomic_store(&go_walker, true);
	if (walk_in_run)
		wait_sleeping(atomic_load(&walker_tid)); /* inside its walk, on the lock */
	atomic_store(&go_forker, true);
	if (release_before_fork)
		wait_sleeping(atomic_load(&forker_tid)); /* the fork waits for the walk */
	else
		wait_flag(&forked);
	if (write(release_pipe[1], "x", 1) != 1)
		return 2;
	pthread_join(f, NULL);
	pthread_join(w, NULL);
	pthread_join(h, NULL);
	close(release_pipe[0]);
	close(release_pipe[1]);
	if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0) {
		fprintf(stderr, "%s: child status %#x\n", name, child_status);
		return 1;
	}
	printf("%s: child exited 0\n", name);
	fflush(stdout);
	return 0;
}

int main(void)
{
	signal(SIGALRM, on_watchdog);
	alarm(100); /* a hang guard, not a speed limit */
	walk_in_run = true;
	walker_site = walker_site_drain;
	child_site = child_site_drain;
	int bad = run("drain", true);
	walker_site = walker_site_busy;
	child_site = child_site_busy;
	bad |= run("busy", false);
	walk_in_run = false;
	child_site = child_site_held;
	bad |= run("held", false);
	return bad;
}
