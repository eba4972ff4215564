/* tests/ui/progs/ui_phases.c: heap held by three functions in turn, for the
 * "heap consumed over time by the top functions" chart. hold_first holds
 * 512 blocks of 1 KiB; then hold_second 256 more while those stay (the
 * peak, 768 KiB); then hold_first's go and hold_third holds 128. Between
 * phases churn() allocates and frees (each block a temporary), so the
 * reporter, which samples every 256 events, samples each phase. */
#include <stdlib.h>

void *hold_first(size_t n);
void *hold_second(size_t n);
void *hold_third(size_t n);

__attribute__((noinline)) void *hold_first(size_t n)
{
	return malloc(n); /* HOLD-FIRST */
}

__attribute__((noinline)) void *hold_second(size_t n)
{
	return malloc(n); /* HOLD-SECOND */
}

__attribute__((noinline)) void *hold_third(size_t n)
{
	return malloc(n); /* HOLD-THIRD */
}

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *volatile p = malloc(16);

		free(p);
	}
}

int main(void)
{
	static void *volatile first[512], *volatile second[256], *volatile third[128];

	for (int i = 0; i < 512; i++)
		first[i] = hold_first(1024);
	churn(600);
	for (int i = 0; i < 256; i++)
		second[i] = hold_second(1024);
	churn(600);
	for (int i = 0; i < 512; i++)
		free(first[i]);
	churn(600);
	for (int i = 0; i < 128; i++)
		third[i] = hold_third(1024);
	churn(600);
	for (int i = 0; i < 256; i++)
		free(second[i]);
	for (int i = 0; i < 128; i++)
		free(third[i]);
	return 0;
}
