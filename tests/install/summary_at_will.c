/* Built against the installed heapledger.h with pkg-config: keeps one block
 * and prints the hook's HEAP SUMMARY to stdout at a moment of its choosing. */
#include <heapledger.h>
#include <heapledger/wire.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	struct heapledger_stats stats;
	char *kept = malloc(1000);

	if (!kept || heapledger_get_stats(&stats) != 0 || stats.in_use_bytes < 1000)
		return 1;
	printf("wire version %d\n", HL_WIRE_VERSION);
	fflush(stdout);
	heapledger_print_summary(1);
	return 0; /* kept leaks on purpose */
}
