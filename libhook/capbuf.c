/*
 * libhook/capbuf.c: each thread's buffers for one stack capture, in hook
 * memory instead of on the program's stack.
 *
 * A capture needs the frames it keeps and libunwind's raw walk (the hook's
 * own frames too): 16 bytes a frame, 4 KiB at depth=256. On the stack of
 * the thread that allocates they came on top of libunwind's own ~2.5 KiB,
 * and a PTHREAD_STACK_MIN (16 KiB) thread allocating 100 frames deep had
 * not that much left (bench/README.md, "Stack depth"). Here they are
 * hl_meta_alloc'd on a thread's first capture (4.1 KiB, an 8 KiB size class)
 * and kept for its life.
 *
 * A capture that cannot have them (the thread's buffers are in use by a
 * capture its signal handler interrupted, there is no memory for them, or
 * the thread has ended and its buffers are freed) gets NULL and uses a
 * small pair on its stack instead (track.c, HL_STACK_SMALL_DEPTH frames).
 * The busy flag is only ever touched by its own thread: a signal fence
 * keeps the compiler from moving it across the capture.
 */
#include <stdatomic.h>

#include "track.h"

struct capbuf {
	struct hl_capture_buf buf;
	bool busy;
};

static HL_TLS struct capbuf *tls_capbuf;
static HL_TLS bool tls_capbuf_off; /* ended, or no memory: don't retry */

struct hl_capture_buf *hl_capture_buf_take(void)
{
	struct capbuf *c = tls_capbuf;
	if (hl_unlikely(c == NULL)) {
		if (tls_capbuf_off)
			return NULL;
		c = hl_meta_alloc(sizeof(*c));
		if (c == NULL) {
			tls_capbuf_off = true;
			return NULL;
		}
		tls_capbuf = c;
	}
	if (hl_unlikely(c->busy))
		return NULL;
	c->busy = true;
	atomic_signal_fence(memory_order_seq_cst);
	return &c->buf;
}

void hl_capture_buf_give(struct hl_capture_buf *buf)
{
	atomic_signal_fence(memory_order_seq_cst);
	((struct capbuf *)(void *)buf)->busy = false;
}

void hl_capture_buf_thread_exit(void)
{
	struct capbuf *c = tls_capbuf;
	tls_capbuf_off = true; /* late allocations of this thread: the small pair */
	if (c == NULL || c->busy)
		return; /* busy: an interrupted capture still uses it (kept) */
	tls_capbuf = NULL;
	hl_meta_free(c, sizeof(*c));
}
