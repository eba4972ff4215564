/* tests/scan/scan_check_unmaps.c: on-demand leak checks give back the
 * memory they map for their buffers. One thread, a leaked block, then 50
 * checks with nothing allocated between them: the address space (VmSize)
 * after the last is that after the first, within one chunk of the scan's
 * buffers (4 MiB), where buffers kept by each check would add 196 MiB or
 * more. Exits 0 when it holds, 5 (and says by how much) when it grows. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapledger.h"

#define CHECKS 50

/* VmSize in KiB, 0 if unknown. */
static long vm_size_kib(void)
{
	char text[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[got > 0 ? got : 0] = '\0';
	const char *line = strstr(text, "VmSize:");
	return line ? strtol(line + 7, NULL, 10) : 0;
}

__attribute__((noinline)) static void leak(void)
{
	void *p = malloc(4242);
	__asm__ volatile("" : : "r"(p) : "memory");
}

int main(void)
{
	leak();
	if (heapledger_check_leaks() != 0)
		return 3;
	long first = vm_size_kib();
	if (first == 0)
		return 4;
	for (int i = 1; i < CHECKS; i++)
		if (heapledger_check_leaks() != 0)
			return 3;
	long growth = vm_size_kib() - first;
	if (growth > 4 * 1024) {
		fprintf(stderr, "the address space grew %ld KiB over %d checks\n", growth, CHECKS - 1);
		return 5;
	}
	return 0;
}
