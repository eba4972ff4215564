/*
 * tests/run/progs/reporter_stall.c: a program that outlives its reporter's
 * stall. It keeps 200 blocks, writes its pid to READY and waits for GO to
 * exist (the test stops the reporter meanwhile), then allocates and frees
 * until its hook has waited wait_ms and gone on standalone, frees 184 of the
 * 200 and leaks the last 16 (STALL-LEAK), and exits with status 3.
 *
 * usage: reporter_stall READY GO
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define KEPT 200
#define LEAKED 16

static void *kept[KEPT];

void keep_blocks(void);
__attribute__((noinline)) void keep_blocks(void)
{
	for (int i = 0; i < KEPT; i++)
		kept[i] = malloc(100); /* STALL-LEAK */
}

static void wait_for(const char *path)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
		nanosleep(&tick, NULL);
}

int main(int argc, char **argv)
{
	FILE *f;

	if (argc != 3)
		return 2;
	keep_blocks();
	f = fopen(argv[1], "w");
	if (!f)
		return 2;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	wait_for(argv[2]);
	/* Far more events than a socket holds: the stopped reporter reads
	 * none, and the hook gives up after wait_ms. */
	for (int i = 0; i < 400000; i++) {
		void *volatile p = malloc(32);

		free(p);
	}
	for (int i = LEAKED; i < KEPT; i++)
		free(kept[i]);
	for (int i = 0; i < LEAKED; i++)
		kept[i] = (void *)((unsigned long)kept[i] ^ 0x5555555555555555ul); /* hidden: definitely lost */
	return 3;
}
