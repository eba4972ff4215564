/* tests/run/progs/early_ctor.c: linked with early_lib, whose constructor
 * allocates before the hook's constructor runs. */
extern void *early_kept;

int main(void)
{
	return early_kept != 0;
}
