/*
 * libhook/track_stub.c: TEMPORARY until the tracking files land. Tracking off.
 */
#include "internal.h"

bool hl_track_enabled;

void hl_track_init(void) {}
uint32_t hl_track_alloc(void *p, size_t size, unsigned kind) { return 0; }
void hl_track_free(void *p, unsigned kind) {}
uint32_t hl_track_realloc(void *old_p, void *p, size_t size) { return 0; }
void hl_track_fork_prepare(void) {}
void hl_track_fork_parent(void) {}
void hl_track_fork_child(void) {}
void hl_track_thread_exit(void) {}
bool hl_track_exit(unsigned how, int status) { return false; }
void hl_track_print_leaks(int fd) {}
