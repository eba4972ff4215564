/*
 * reporter/model/fingerprint.c: leak site fingerprints (see fingerprint.h).
 */
#include "fingerprint.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *hl_basename(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return s && !strncmp(s, prefix, strlen(prefix));
}

bool hl_frame_is_runtime(const struct hl_frame_info *f)
{
	static const char *const runtime[] = {
		"libheapledger", "libc.so", "libc-", "libstdc++.so", "ld-linux", "libgcc_s",
	};
	const char *base = hl_basename(f->module);

	for (size_t i = 0; i < sizeof(runtime) / sizeof(runtime[0]); i++)
		if (has_prefix(base, runtime[i]))
			return true;
	return false;
}

size_t hl_fingerprint_first_frame(const struct hl_frame_info *frames, size_t n)
{
	size_t i = 0;

	while (i < n && hl_frame_is_runtime(&frames[i]))
		i++;
	return i < n ? i : 0;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; s && *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

void hl_fingerprint(const struct hl_frame_info *frames, size_t n,
		    char out[HL_FINGERPRINT_LEN + 1])
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t first = hl_fingerprint_first_frame(frames, n);

	for (size_t i = first; i < n && i < first + HL_FINGERPRINT_FRAMES; i++) {
		h = fnv1a(h, frames[i].function ? frames[i].function : "?");
		h = fnv1a(h, "\x1f");
		h = fnv1a(h, frames[i].module ? hl_basename(frames[i].module) : "?");
		h = fnv1a(h, "\x1e");
	}
	snprintf(out, HL_FINGERPRINT_LEN + 1, "%016llx", (unsigned long long)h);
}
