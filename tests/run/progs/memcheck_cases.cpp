// tests/run/progs/memcheck_cases.cpp: the programs a valgrind user runs
// memcheck on, one per mode (argv[1]), for check_valgrind_frontend.py, which
// runs each under valgrind (the oracle) and `heapledger valgrind`:
//   overflow     an off-by-one strcpy into malloc(10), then free
//   uaf_write    a write into a freed block
//   uaf_read     a read of a freed block (its value is not used)
//   double       a double free
//   mismatch     malloc'd memory released by delete (a sized delete)
//   leak         100 bytes definitely lost
//   leak0        a 0-byte block definitely lost
//   combo        overflow, double free, write and read after free
// The exit status is 0 unless the program is killed: any other comes from
// the tool.
#include <cstdio>
#include <cstdlib>
#include <cstring>

static volatile char sink;
static void *volatile lost;

__attribute__((noinline)) static char *make(size_t n)
{
	return static_cast<char *>(malloc(n));
}

__attribute__((noinline)) static void overflow(void)
{
	char *p = make(10);
	strcpy(p, "0123456789"); // 11 bytes with the NUL
	free(p);
}

__attribute__((noinline)) static void uaf_write(void)
{
	char *p = make(20);
	free(p);
	static_cast<char volatile *>(p)[12] = 'x';
}

__attribute__((noinline)) static void uaf_read(void)
{
	char *p = make(20);
	free(p);
	sink = static_cast<char volatile *>(p)[12];
}

__attribute__((noinline)) static void double_free(void)
{
	char *p = make(30);
	free(p);
	free(p);
}

__attribute__((noinline)) static void mismatch(void)
{
	int *p = reinterpret_cast<int *>(make(40));
	delete p;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "combo";
	bool combo = !strcmp(mode, "combo");

	if (combo || !strcmp(mode, "overflow"))
		overflow();
	if (combo || !strcmp(mode, "double"))
		double_free();
	if (combo || !strcmp(mode, "uaf_write"))
		uaf_write();
	if (combo || !strcmp(mode, "uaf_read"))
		uaf_read();
	if (!strcmp(mode, "mismatch"))
		mismatch();
	if (!strcmp(mode, "leak"))
		lost = make(100), lost = nullptr;
	if (!strcmp(mode, "leak0"))
		lost = make(0), lost = nullptr;
	return 0;
}
