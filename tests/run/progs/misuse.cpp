// tests/run/progs/misuse.cpp: one heap misuse error per mode (argv[1]), made
// by offend(), on a block from make_block() and freed, when it is, by
// release_block(); then a stress run that checks the allocator still works
// (check_misuse.py reads the report, the JSON and the database). The
// overflow, use_after_free and double_reused modes run under checks=full
// with a 1 MiB quarantine.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>

static char global_bytes[64] __attribute__((aligned(16)));
static char *volatile victim; // a live block no later allocation may overlap

__attribute__((noinline)) char *make_block(size_t n)
{
	return static_cast<char *>(malloc(n));
}

__attribute__((noinline)) char *make_array(size_t n)
{
	return new char[n];
}

__attribute__((noinline)) void *make_aligned(size_t n)
{
	return ::operator new(n, std::align_val_t(64));
}

__attribute__((noinline)) void *make_object(size_t n)
{
	return ::operator new(n);
}

__attribute__((noinline)) void release_block(char *p)
{
	free(p);
}

// 16 bytes in front of p + 48 that look like a block header.
void forge_header(char *at)
{
	uint32_t fake[4] = { 48, 64, 0, 0x00a50100u };
	memcpy(at - 16, fake, sizeof(fake));
}

__attribute__((noinline)) void offend(const char *mode, char *p)
{
	if (!strcmp(mode, "interior"))
		free(p + 48);
	else if (!strcmp(mode, "misaligned"))
		free(p + 3);
	else if (!strcmp(mode, "double"))
		free(p);
	else if (!strcmp(mode, "foreign"))
		free(global_bytes + 16);
	else if (!strcmp(mode, "realloc_freed"))
		p = static_cast<char *>(realloc(p, 300));
	else if (!strcmp(mode, "usable_size"))
		printf("usable %zu\n", malloc_usable_size(p + 32));
	else if (!strcmp(mode, "array_delete"))
		::operator delete(p);
	else if (!strcmp(mode, "malloc_delete"))
		::operator delete[](p);
	else if (!strcmp(mode, "aligned_delete"))
		::operator delete(p);
	else if (!strcmp(mode, "size_mismatch"))
		::operator delete(p, static_cast<size_t>(100));
	else if (!strcmp(mode, "malloc_sized_delete"))
		delete reinterpret_cast<int *>(p); // sized delete of 4: the family is wrong first
	else if (!strcmp(mode, "overflow")) {
		*(static_cast<char volatile *>(p) + 200) = 'x'; // one byte past the end
		free(p);
	} else if (!strcmp(mode, "use_after_free")) {
		*(static_cast<char volatile *>(p) + 8) = 'x'; // p was freed
		// 2 MiB of frees push it out of a 1 MiB quarantine, here.
		for (int i = 0; i < 512; i++) {
			char *volatile q = static_cast<char *>(malloc(4000));
			free(q);
		}
	} else if (!strcmp(mode, "double_reused"))
		free(p); // freed, and a block of its size handed out since
}

// Allocates and frees with content checks: the heap still works.
int stress(void)
{
	char *slots[512] = {};
	unsigned seed = 7;
	for (int i = 0; i < 200000; i++) {
		int k = rand_r(&seed) % 512;
		if (slots[k]) {
			if (slots[k][0] != (char)k)
				return 1;
			free(slots[k]);
		}
		size_t n = 1 + (size_t)(rand_r(&seed) % 600);
		slots[k] = static_cast<char *>(malloc(n));
		if (victim && slots[k] + n > victim && slots[k] < victim + 200)
			return 2;
		memset(slots[k], k, n);
	}
	for (int k = 0; k < 512; k++)
		free(slots[k]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "interior";
	char *p;
	if (!strcmp(mode, "array_delete"))
		p = make_array(200);
	else if (!strcmp(mode, "aligned_delete"))
		p = static_cast<char *>(make_aligned(200));
	else if (!strcmp(mode, "size_mismatch"))
		p = static_cast<char *>(make_object(200));
	else
		p = make_block(200);
	memset(p, 0x5a, 200);
	if (!strcmp(mode, "interior"))
		forge_header(p + 48);
	if (!strcmp(mode, "double") || !strcmp(mode, "realloc_freed") ||
	    !strcmp(mode, "use_after_free"))
		release_block(p);
	else if (!strcmp(mode, "double_reused")) {
		release_block(p);
		char *again = make_block(200);
		if (again == p) // the quarantine holds p: it cannot come back yet
			return 3;
		victim = again;
	}
	else if (!strcmp(mode, "interior") || !strcmp(mode, "misaligned") ||
		 !strcmp(mode, "usable_size"))
		victim = p;
	offend(mode, p);
	int bad = stress();
	printf("stress %s\n", bad ? "FAILED" : "ok");
	if (victim)
		free(victim);
	return bad;
}
