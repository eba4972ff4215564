// tests/libhook/test_cxx.cc: operator new and delete in every variant go
// through the hook, keep their alignment, and new throws std::bad_alloc.
// Run under LD_PRELOAD; checks the counters through heapledger.h.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <new>
#include <vector>
#include <string>

#include "heapledger.h"

#define CHECK(x) do { if (!(x)) { std::fprintf(stderr, "FAILED: %s (line %d)\n", #x, __LINE__); return 1; } } while (0)

struct alignas(64) Wide { char bytes[64]; };

int main()
{
	heapledger_stats before, after;
	CHECK(heapledger_get_stats(&before) == 0);
	int *one = new int(5);
	int *many = new int[100];
	Wide *wide = new Wide;
	Wide *wides = new Wide[3];
	int *quiet = new (std::nothrow) int;
	CHECK(reinterpret_cast<uintptr_t>(wide) % 64 == 0);
	CHECK(reinterpret_cast<uintptr_t>(wides) % 64 == 0);
	heapledger_get_stats(&after);
	CHECK(after.allocs - before.allocs == 5);
	delete one;
	delete[] many;
	delete wide;
	delete[] wides;
	::operator delete(quiet, std::nothrow);
	heapledger_get_stats(&after);
	CHECK(after.frees - before.frees == 5);
	CHECK(after.in_use_blocks == before.in_use_blocks);

	bool threw = false;
	try {
		volatile size_t huge = SIZE_MAX / 2;
		char *p = new char[huge];
		delete[] p;
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	CHECK(threw);
	volatile size_t too_big = SIZE_MAX / 2;
	CHECK(new (std::nothrow) char[too_big] == nullptr);

	std::vector<std::string> words;
	for (int i = 0; i < 10000; i++)
		words.push_back(std::string(static_cast<size_t>(i % 100), 'a'));
	words.clear();
	words.shrink_to_fit();
	std::printf("cxx: ok\n");
	return 0;
}
