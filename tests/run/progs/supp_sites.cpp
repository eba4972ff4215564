// tests/run/progs/supp_sites.cpp: a loss record per allocation function
// valgrind names (malloc through strdup, calloc, realloc, new, new[], a
// std::string's buffer lost indirectly, and a block still reachable), for
// check_gen_suppressions.py, which writes suppressions for each with
// heapledger and with valgrind and feeds them to both.
#include <cstdlib>
#include <cstring>
#include <string>

void *volatile held; // still reachable at exit
void *volatile lost;  // overwritten: what it held is lost

namespace ns {
__attribute__((noinline)) int *make_widget(int n)
{
	return new int[n];
}
} // namespace ns

__attribute__((noinline)) void *c_leak(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) void *zeroed_leak(size_t n)
{
	return calloc(1, n);
}

__attribute__((noinline)) void *grown_leak(size_t n)
{
	void *p = malloc(8);
	return realloc(p, n);
}

int main()
{
	ns::make_widget(10);
	c_leak(33);
	zeroed_leak(44);
	grown_leak(555);
	lost = strdup("hello");
	lost = new std::string(100, 'x');
	lost = nullptr;
	held = c_leak(77);
	return 0;
}
