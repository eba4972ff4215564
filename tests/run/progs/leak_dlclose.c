/* tests/run/progs/leak_dlclose.c: dlopen argv[1], leak through it, dlclose. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	void *(*leak)(void);

	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&leak = dlsym(lib, "dl_leak");
	if (!leak || !leak())
		return 1;
	dlclose(lib);
	return 0;
}
