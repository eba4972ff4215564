/* tests/scan/scan_basic.c: one block of each leak class, kept in each kind
 * of root, for check_classes.sh to compare with valgrind's classes:
 *  - a list of 5 nodes whose head pointer is dropped: 1 definitely lost
 *    block, 4 indirectly lost;
 *  - a block only a global points to: still reachable;
 *  - a block only an interior pointer (in a global) points to: possibly
 *    lost;
 *  - a block only a thread-local variable points to: still reachable;
 *  - a block only a dlopen'd library's .data points to: still reachable;
 *  - a plain leak: definitely lost.
 * The work is done in functions that return before main does, so no stale
 * pointer is left in a live frame. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct node {
	struct node *next;
	char payload[40];
};

void *global_block;
char *interior_only;
__thread void *tls_block;

__attribute__((noinline)) static void drop_list(void)
{
	struct node *head = NULL;
	for (int i = 0; i < 5; i++) {
		struct node *n = malloc(sizeof(*n));
		n->next = head;
		head = n;
	}
	__asm__ volatile("" : : "r"(head) : "memory");
}

__attribute__((noinline)) static void keep_in_dso(const char *path)
{
	void *dso = dlopen(path, RTLD_NOW);
	if (dso == NULL) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(2);
	}
	void (*keep)(void *) = (void (*)(void *))dlsym(dso, "scan_dso_keep");
	keep(malloc(72));
}

__attribute__((noinline)) static void fill(const char *dso)
{
	drop_list();
	global_block = malloc(100);
	interior_only = (char *)malloc(64) + 24;
	tls_block = malloc(33);
	keep_in_dso(dso);
	void *lost = malloc(17);
	__asm__ volatile("" : : "r"(lost) : "memory");
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	fill(argv[1]);
	return 0;
}
