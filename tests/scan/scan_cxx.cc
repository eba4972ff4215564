// tests/scan/scan_cxx.cc: C++ blocks reached only through interior
// pointers that valgrind's default heuristics accept (still reachable, not
// possibly lost): new[] of objects with a destructor (the pointer follows
// the element count), multiple inheritance (a pointer to the second base),
// and a std::string with the old copy-on-write layout (length, capacity,
// refcount, then the characters: what stdstring recognises). Plus one
// plain leak so the test proves something.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

struct Counted {
	~Counted() { value = 0; }
	long value = 1;
};

struct A {
	virtual ~A() {}
	virtual long a() { return 1; }
	long x = 1;
};
struct B {
	virtual ~B() {}
	virtual long b() { return 2; }
	long y = 2;
};
struct C : A, B {
	~C() override {}
	long a() override { return 3; }
	long b() override { return 4; }
};

Counted *array_keep;   // points after new[]'s element count
B *second_base_keep;   // points into a C, at its B part
char *cow_string_keep; // points at the characters of a COW string rep

__attribute__((noinline)) static void fill()
{
	array_keep = new Counted[5];
	second_base_keep = new C;
	// A copy-on-write std::string's representation, built by hand: the
	// test does not depend on the library's ABI choice.
	size_t capacity = 40;
	char *rep = static_cast<char *>(malloc(3 * sizeof(size_t) + capacity + 1));
	size_t header[3] = { 11, capacity, 0 };
	memcpy(rep, header, sizeof(header));
	memcpy(rep + sizeof(header), "hello world", 12);
	cow_string_keep = rep + sizeof(header);
	void *lost = malloc(21);
	__asm__ volatile("" : : "r"(lost) : "memory");
}

int main()
{
	fill();
	return 0;
}
