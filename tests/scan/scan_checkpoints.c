/* tests/scan/scan_checkpoints.c: on-demand checks carry loss records.
 * leak_a loses two 48-byte blocks, the first check runs, leak_b loses one
 * 200-byte block, the second check runs, then A's blocks are freed (their
 * addresses were kept hidden: XORed, so no scan sees a pointer to them)
 * and the program exits with B lost. check_checkpoints.py expects check 1
 * to list A under leak_a, check 2 to list B under leak_b as new and A as
 * unchanged, and the exit report to hold B only. The work is done in
 * functions that return before the checks, so no stale pointer is left in
 * a live frame. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "heapledger.h"

#pragma weak heapledger_check_leaks

#define HIDE 0x5a5a5a5a5a5a5a5aull

static uintptr_t hidden_a[2]; /* A's blocks, not as pointers */

__attribute__((noinline)) static void leak_a(void)
{
	volatile int n = 2; /* one call site for both: one loss record */
	for (int i = 0; i < n; i++)
		hidden_a[i] = (uintptr_t)malloc(48) ^ HIDE;
}

__attribute__((noinline)) static void leak_b(void)
{
	void *b = malloc(200);
	__asm__ volatile("" : : "r"(b) : "memory");
}

/* Overwrites the stack below main's frame, where leak_a's and leak_b's
 * frames were. */
__attribute__((noinline)) static void scrub(void)
{
	volatile char pad[4096];
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = 0;
}

int main(void)
{
	if (!heapledger_check_leaks)
		return 2; /* not under the hook */
	leak_a();
	scrub();
	heapledger_check_leaks();
	leak_b();
	scrub();
	heapledger_check_leaks();
	for (int i = 0; i < 2; i++)
		free((void *)(hidden_a[i] ^ HIDE));
	puts("done");
	return 0;
}
