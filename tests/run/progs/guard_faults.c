/*
 * tests/run/progs/guard_faults.c: accesses that fault on a guard page
 * (checks=guard, guard_sample=1), each on a line the test finds by its
 * marker comment, and a program's own SIGSEGV handler beside them.
 *
 *   read      reads one byte past a 10-byte block          (GUARD-READ)
 *   write     writes one byte past it                      (GUARD-WRITE)
 *   uaf       reads a byte of it after free                (GUARD-UAF)
 *   read16    reads one byte past a 16-byte block          (GUARD-READ16)
 *   gaprealloc writes one byte past a 10-byte block, then reallocs it
 *   gaplive   writes one byte past a 10-byte block it keeps to the end
 *   handler   installs its own SIGSEGV handler with sigaction, then makes a
 *             guard fault (reported, the handler must not run) and a fault
 *             of its own on a PROT_NONE page it mapped (the handler must
 *             run and recover with siglongjmp); prints what it saw
 *   signal    the same with signal() (the handler is called without info)
 *   wild      a fault of its own with no handler: dies of SIGSEGV
 * Prints "done" when it gets to the end.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static sigjmp_buf recover;
static volatile sig_atomic_t handler_ran;

static void on_segv_info(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)info;
	(void)context;
	handler_ran++;
	siglongjmp(recover, 1);
}

static void on_segv(int sig)
{
	(void)sig;
	handler_ran++;
	siglongjmp(recover, 1);
}

static char *make_block(void)
{
	char *p = malloc(10);
	memset(p, 'a', 10);
	return p;
}

/* A fault that is the program's own business: a page it made PROT_NONE. */
static void own_fault(void)
{
	volatile char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sigsetjmp(recover, 1) == 0)
		page[0] = 1;
	munmap((void *)page, 4096);
}

static void handler_case(int use_signal)
{
	if (use_signal) {
		signal(SIGSEGV, on_segv);
	} else {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv_info;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSEGV, &sa, NULL);
	}
	char *p = make_block();
	if (sigsetjmp(recover, 1) == 0)
		p[10] = 'x'; /* GUARD-HANDLER */
	printf("after guard fault: handler ran %d times\n", (int)handler_ran);
	own_fault();
	printf("after own fault: handler ran %d times\n", (int)handler_ran);
	struct sigaction now;
	sigaction(SIGSEGV, NULL, &now);
	printf("sigaction reports the program's handler: %s\n",
	       (use_signal ? (void *)now.sa_handler == (void *)on_segv
			   : (void *)now.sa_sigaction == (void *)on_segv_info)
		       ? "yes"
		       : "no");
	free(p);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	volatile char c = 0;
	if (!strcmp(mode, "read")) {
		char *p = make_block();
		c = p[10]; /* GUARD-READ */
		free(p);
	} else if (!strcmp(mode, "write")) {
		char *p = make_block();
		p[10] = 'x'; /* GUARD-WRITE */
		free(p);
	} else if (!strcmp(mode, "uaf")) {
		char *p = make_block();
		free(p); /* GUARD-FREE */
		c = p[4]; /* GUARD-UAF */
	} else if (!strcmp(mode, "read16")) {
		char *p = calloc(16, 1);
		c = p[16]; /* GUARD-READ16 */
		free(p);
	} else if (!strcmp(mode, "gaprealloc")) {
		char *p = make_block();
		p[10] = 'x';
		free(realloc(p, 100));
	} else if (!strcmp(mode, "gaplive")) {
		static char *kept;
		kept = make_block();
		kept[10] = 'x';
	} else if (!strcmp(mode, "handler")) {
		handler_case(0);
	} else if (!strcmp(mode, "signal")) {
		handler_case(1);
	} else if (!strcmp(mode, "wild")) {
		volatile char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		page[0] = 1;
	} else {
		fprintf(stderr, "usage: guard_faults read|write|uaf|read16|gaprealloc|gaplive|"
				"handler|signal|wild\n");
		return 2;
	}
	(void)c;
	printf("done\n");
	return 0;
}
