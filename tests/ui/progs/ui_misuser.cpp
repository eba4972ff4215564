// tests/ui/progs/ui_misuser.cpp: the program the web UI's heap-error page is
// checked against: in one run, a double free, a free of a pointer inside a
// block, and a scalar delete of an array. Each block comes from its own
// function and each misuse happens in its own, on a line with a marker, so
// the test can tell that each of the error's stacks (where, alloc'd,
// freed) names the right function at the right file:line. The hook's
// default (on_error=continue) reports each error and goes on. Given
// "overflow" it only writes past the end of a block and frees it (an
// overrun, found under checks=full).
#include <cstdlib>
#include <cstring>
#include <new>

static char *volatile keep[3];

__attribute__((noinline)) char *make_twice_freed(void)
{
	return static_cast<char *>(malloc(96)); /* ALLOC-TWICE */
}

__attribute__((noinline)) void first_free(char *p)
{
	free(p); /* FREE-FIRST */
}

__attribute__((noinline)) void second_free(char *p)
{
	free(p); /* FREE-SECOND */
}

__attribute__((noinline)) char *make_record(void)
{
	return static_cast<char *>(malloc(160)); /* ALLOC-RECORD */
}

__attribute__((noinline)) void free_inside(char *p)
{
	free(p + 24); /* FREE-INSIDE */
}

__attribute__((noinline)) char *make_table(void)
{
	return new char[128]; /* ALLOC-TABLE */
}

__attribute__((noinline)) void delete_scalar(char *p)
{
	::operator delete(p); /* DELETE-SCALAR */
}

__attribute__((noinline)) char *make_short(void)
{
	return static_cast<char *>(malloc(64)); /* ALLOC-SHORT */
}

__attribute__((noinline)) void overrun(char *p)
{
	memset(p + 64, 0x5a, 8); /* OVERRUN */
	free(p);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "overflow")) {
		overrun(make_short());
		return 0;
	}
	char *twice = make_twice_freed(), *record = make_record(), *table = make_table();

	memset(twice, 1, 96);
	memset(record, 2, 160);
	memset(table, 3, 128);
	first_free(twice);
	second_free(twice);
	free_inside(record);
	delete_scalar(table);
	keep[0] = record; /* the record stays allocated: its free was refused */
	return 0;
}
