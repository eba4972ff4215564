/* tests/scan/scan_dso.c: a library scan_basic dlopens; its .data is a root. */
void scan_dso_keep(void *p);
void *scan_dso_slot = (void *)1; /* initialised: .data, not .bss */

void scan_dso_keep(void *p)
{
	scan_dso_slot = p;
}
