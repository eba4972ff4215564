/* tests/libhook/tricky_stacks.c: stacks that a stack memo (libhook/stackmemo.c)
 * could confuse. The same malloc call site, at the same stack address, under
 * two different callers with identical frames (alpha and beta, called from one
 * site through a pointer); alloca frames of changing size; recursion to
 * changing depths; four threads at once; a signal handler running on an
 * alternate stack whose top borders a PROT_NONE page (a memo scanning up
 * from there must stop, not fault). alpha and beta leak 1000 blocks each
 * of different sizes, so the leak list shows whether every block got its own
 * caller. And one wrapper (as xmalloc) called from eight callers at the same
 * stack address, more than a memo set holds, four of them through a second
 * wrapper, each keeping 100 blocks of its own size (tricky_viaN: 8 * (N + 1)
 * + 100 bytes): the memo's set index must tell the first four apart by the
 * callers' return addresses, and its check of every slot the other four.
 * And one function with a 64 KiB frame under two callers (tricky_big_x
 * keeps 88-byte blocks, tricky_big_y 96-byte ones).
 * check_tricky_stacks.sh runs this with stack_cache=2, which also checks
 * every memo hit against libunwind. */
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 1000

void *leaf(size_t n);
void *tricky_alpha(size_t n);
void *tricky_beta(size_t n);
void *xwrap(size_t n);
void *via_mid(size_t n);

__attribute__((noinline)) void *leaf(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory"); /* not a tail call */
	return p;
}

/* Identical bodies: leaf runs at the same stack address under either. */
__attribute__((noinline)) void *tricky_alpha(size_t n)
{
	void *p = leaf(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) void *tricky_beta(size_t n)
{
	void *p = leaf(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static __attribute__((noinline)) void *with_alloca(size_t n, size_t pad)
{
	volatile char *buffer = alloca(pad);
	buffer[0] = 1;
	buffer[pad - 1] = 2;
	void *p = leaf(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static __attribute__((noinline)) void *recurse(size_t n, int depth)
{
	void *p = depth > 0 ? recurse(n, depth - 1) : leaf(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

/* Calls malloc itself, as xmalloc: its callers differ at the second return
 * address, which the memo's set index reads. */
__attribute__((noinline)) void *xwrap(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

/* A second wrapper level: callers through it differ from the third
 * return address on, past what the memo's set index reads. */
__attribute__((noinline)) void *via_mid(size_t n)
{
	void *p = xwrap(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

#define VIA(N, CALL)                                                    \
	void *tricky_via##N(void);                                      \
	__attribute__((noinline)) void *tricky_via##N(void)             \
	{                                                               \
		void *p = CALL(8 * (N + 1) + 100);                      \
		__asm__ volatile("" : : "r"(p) : "memory");            \
		return p;                                               \
	}
VIA(0, xwrap) VIA(1, xwrap) VIA(2, xwrap) VIA(3, xwrap)
VIA(4, via_mid) VIA(5, via_mid) VIA(6, via_mid) VIA(7, via_mid)
#define VIAS 8
#define VIA_KEPT 100
static void *(*volatile via[VIAS])(void) = {
	tricky_via0, tricky_via1, tricky_via2, tricky_via3,
	tricky_via4, tricky_via5, tricky_via6, tricky_via7,
};
static void *via_kept[VIAS][VIA_KEPT];

/* A frame of 64 KiB (a local buffer) between leaf's caller and the
 * callers that tell its blocks apart: the memo must learn and check slots
 * that far up. */
static __attribute__((noinline)) void *big_frame(size_t n)
{
	volatile char buffer[64 * 1024];
	buffer[0] = 1;
	buffer[sizeof(buffer) - 1] = 2;
	void *p = leaf(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

void *tricky_big_x(size_t n);
void *tricky_big_y(size_t n);

__attribute__((noinline)) void *tricky_big_x(size_t n)
{
	void *p = big_frame(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) void *tricky_big_y(size_t n)
{
	void *p = big_frame(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *(*volatile pick[2])(size_t) = { tricky_alpha, tricky_beta };
static void *kept[2][ROUNDS];
static void *(*volatile pick_big[2])(size_t) = { tricky_big_x, tricky_big_y };
static void *kept_big[2][ROUNDS];

static void *work(void *arg)
{
	int leaks = arg != NULL, count[2] = { 0, 0 }, big_count[2] = { 0, 0 };
	int via_count[VIAS] = { 0 };
	for (int i = 0; i < 3 * ROUNDS; i++) {
		int which = (i * 7 + i / 3) & 1; /* no simple alternation */
		void *p = pick[which](which ? 24 : 16);
		if (leaks && count[which] < ROUNDS)
			kept[which][count[which]++] = p;
		else
			free(p);
		void *b = pick_big[which](which ? 96 : 88);
		if (leaks && big_count[which] < ROUNDS)
			kept_big[which][big_count[which]++] = b;
		else
			free(b);
		free(with_alloca(40, 16 + (size_t)(i % 5) * 48));
		free(recurse(56, i % 9));
		int v = (i * 5 + i / 7) % VIAS;
		void *q = via[v]();
		if (leaks && via_count[v] < VIA_KEPT)
			via_kept[v][via_count[v]++] = q;
		else
			free(q);
	}
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	free(leaf(72)); /* raise() is synchronous: not inside malloc */
}

/* An alternate signal stack of 64 KiB (capture with libunwind, and ld.so's
 * first lazy binding, need several KiB) with a PROT_NONE page right above. */
static int altstack_signals(void)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size = 65536;
	char *region = mmap(NULL, size + (size_t)page, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED || mprotect(region + size, (size_t)page, PROT_NONE) != 0)
		return -1;
	stack_t ss = { .ss_sp = region, .ss_size = size };
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_ONSTACK };
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
		return -1;
	for (int i = 0; i < 200; i++)
		raise(SIGUSR1);
	return 0;
}

int main(void)
{
	pthread_t threads[4];
	for (int t = 0; t < 4; t++)
		if (pthread_create(&threads[t], NULL, work, NULL) != 0)
			return 1;
	work(&threads); /* the main thread keeps 1000 blocks of each caller */
	for (int t = 0; t < 4; t++)
		pthread_join(threads[t], NULL);
	/* After the main thread's memo exists: its first capture is here. */
	if (altstack_signals() != 0)
		return 1;
	int kept_count = 0;
	for (int w = 0; w < 2; w++)
		for (int i = 0; i < ROUNDS; i++)
			kept_count += (kept[w][i] != NULL) + (kept_big[w][i] != NULL);
	for (int v = 0; v < VIAS; v++)
		for (int i = 0; i < VIA_KEPT; i++)
			kept_count += via_kept[v][i] != NULL;
	return kept_count == 4 * ROUNDS + VIAS * VIA_KEPT ? 0 : 1;
}
