/* libhook/procfs.h: the process's own files in /proc (procfs.c). */
#ifndef HL_PROCFS_H
#define HL_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define HL_PROC_PATH_MAX 64 /* "/proc/thread-self/" and a short name */

/* open(2) of /proc/thread-self/NAME (or /proc/self/NAME where the kernel
 * has no thread-self), O_CLOEXEC added; -1 with errno on failure. */
int hl_proc_open(const char *name, int flags);

/* readlink(2) of the same; no terminating NUL, as readlink. */
ssize_t hl_proc_readlink(const char *name, char *buf, size_t size);

#endif
