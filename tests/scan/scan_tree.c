/* tests/scan/scan_tree.c: trees of blocks hanging from lost roots, for
 * check_run_indirect.py to compare each definitely lost record's direct and
 * indirect bytes with valgrind's:
 *  - a binary tree of 31 nodes of 24..84 bytes whose root pointer is
 *    dropped: the root definitely lost, its 30 descendants indirectly lost
 *    through it;
 *  - three lists of 4 blocks from another call site whose heads are dropped:
 *    3 definitely lost heads with 3 indirectly lost blocks each;
 *  - a plain leak (no indirect bytes) and a reachable tree.
 * The work is done in functions that return before main does, so no stale
 * pointer is left in a live frame. */
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *left, *right;
	char payload[];
};

void *kept;

__attribute__((noinline)) static struct node *tree(int depth, unsigned *serial)
{
	size_t extra = 8 + (*serial)++ * 2;
	struct node *n = malloc(sizeof(*n) + extra);
	memset(n, 0, sizeof(*n) + extra);
	if (depth > 1) {
		n->left = tree(depth - 1, serial);
		n->right = tree(depth - 1, serial);
	}
	return n;
}

__attribute__((noinline)) static void drop_list(void)
{
	struct node *head = NULL;
	for (int i = 0; i < 4; i++) {
		struct node *n = calloc(1, sizeof(*n) + 16);
		n->left = head;
		head = n;
	}
	__asm__ volatile("" : : "r"(head) : "memory");
}

__attribute__((noinline)) static void fill(void)
{
	unsigned serial = 0;
	struct node *root = tree(5, &serial);
	__asm__ volatile("" : : "r"(root) : "memory");
	for (int i = 0; i < 3; i++)
		drop_list();
	void *lost = malloc(40);
	__asm__ volatile("" : : "r"(lost) : "memory");
	serial = 100;
	kept = tree(3, &serial);
}

__attribute__((noinline)) static void scrub(void)
{
	volatile char frame[4096];
	memset((char *)frame, 0, sizeof(frame));
}

int main(void)
{
	fill();
	scrub();
	return 0;
}
