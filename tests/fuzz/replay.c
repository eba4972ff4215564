/*
 * tests/fuzz/replay.c: runs LLVMFuzzerTestOneInput over every file of the
 * corpus directories given, so the corpus is exercised by every `meson test`
 * (with any compiler) and a crash found by the fuzzer stays a regression
 * test once its input is added to the corpus.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	long size;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc(size > 0 ? (size_t)size : 1);
	if (size < 0 || fread(data, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		free(data);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(data, (size_t)size);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0;

	for (int i = 1; i < argc; i++) {
		DIR *dir = opendir(argv[i]);
		struct dirent *e;

		if (!dir) {
			fprintf(stderr, "replay: cannot open %s\n", argv[i]);
			return 1;
		}
		while ((e = readdir(dir))) {
			char path[4096];

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (replay_file(path)) {
				fprintf(stderr, "replay: cannot read %s\n", path);
				closedir(dir);
				return 1;
			}
			files++;
		}
		closedir(dir);
	}
	printf("replayed %d inputs\n", files);
	/* An empty corpus would make this test pass without testing anything. */
	return files > 0 ? 0 : 1;
}
