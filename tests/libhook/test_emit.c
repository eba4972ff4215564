/*
 * tests/libhook/test_emit.c: the event stream (libhook/emit_*.c, track.c).
 * Records go through a socketpair and are read back with the reporter's own
 * decoder (reporter/decode.c), which validates every length and id; the
 * fault tests close the peer mid-run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "decode.h"
#include "emit_int.h"
#include "track.h"

/* ---- a reader thread that decodes what the hook sends ---------------------- */

struct reader {
	int fd;
	pthread_t thread;
	struct hl_decoder decoder;
	long result;                 /* last hl_decode_feed result */
	unsigned counts[HL_REC_TYPE_COUNT];
	uint64_t live_blocks;
	bool saw_block;              /* LIVE named `block` */
	uint32_t block_stack;        /* its stack id */
	void *block;
	bool alloc_before_stack;     /* an ALLOC named a stack not yet defined */
	uint32_t stacks_defined;
	uint64_t dropped_events;     /* sum of DROPPED records */
	uint64_t dropped_stacks;     /* and of their `stacks` */
	uint32_t batch_tid;          /* thread of the current batch */
	size_t nallocs;              /* ALLOCs logged below, in stream order */
	size_t nfrees;               /* and FREEs */
	uint32_t alloc_tid[8192];    /* from here on not cleared by reader_start */
	uint64_t alloc_ticks[8192];
	uint64_t alloc_address[8192];
	uint64_t alloc_size[8192];
	uint32_t free_tid[8192];
	uint64_t free_ticks[8192];
	uint64_t free_address[8192];
	uint64_t marker_allocs;      /* ALLOCs of MARKER_SIZE.. bytes */
	uint64_t marker_bytes;       /* their sizes */
	uint64_t marker_frees;       /* FREEs of the latest of them */
	uint64_t marker_address;     /* the latest of them, 0 once freed */
};

/* test_full_buffers' blocks: MARKER_SIZE + 0..6 bytes, nothing else asks for these. */
#define MARKER_SIZE 4321u

static int sink(void *ctx, const struct hl_wire_header *rec)
{
	struct reader *r = ctx;
	r->counts[rec->type]++;
	if (rec->type == HL_REC_BATCH)
		r->batch_tid = ((const struct hl_rec_batch *)rec)->tid;
	if (rec->type == HL_REC_ALLOC && r->nallocs < 8192) {
		r->alloc_tid[r->nallocs] = r->batch_tid;
		r->alloc_address[r->nallocs] = ((const struct hl_rec_alloc *)rec)->address;
		r->alloc_size[r->nallocs] = ((const struct hl_rec_alloc *)rec)->size;
		r->alloc_ticks[r->nallocs++] = ((const struct hl_rec_alloc *)rec)->ticks;
	}
	if (rec->type == HL_REC_FREE && r->nfrees < 8192) {
		r->free_tid[r->nfrees] = r->batch_tid;
		r->free_address[r->nfrees] = ((const struct hl_rec_free *)rec)->address;
		r->free_ticks[r->nfrees++] = ((const struct hl_rec_free *)rec)->ticks;
	}
	if (rec->type == HL_REC_ALLOC) {
		const struct hl_rec_alloc *a = (const void *)rec;
		if (a->size >= MARKER_SIZE && a->size < MARKER_SIZE + 7) {
			r->marker_allocs++;
			r->marker_bytes += a->size;
			r->marker_address = a->address;
		}
	}
	if (rec->type == HL_REC_FREE && ((const struct hl_rec_free *)rec)->address == r->marker_address &&
	    r->marker_address) {
		r->marker_frees++;
		r->marker_address = 0;
	}
	if (rec->type == HL_REC_STACK)
		r->stacks_defined++;
	if (rec->type == HL_REC_DROPPED) {
		r->dropped_events += ((const struct hl_rec_dropped *)rec)->events;
		r->dropped_stacks += ((const struct hl_rec_dropped *)rec)->stacks;
	}
	if (rec->type == HL_REC_LIVE) {
		const struct hl_rec_live *live = (const void *)rec;
		const struct hl_wire_live_block *b = (const void *)(live + 1);
		for (uint32_t i = 0; i < live->count; i++) {
			r->live_blocks++;
			if (b[i].address == (uintptr_t)r->block) {
				r->saw_block = true;
				r->block_stack = b[i].stack_id;
			}
		}
	}
	return 0;
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	static uint8_t buf[1 << 22] __attribute__((aligned(8)));
	size_t have = 0;
	/* The reader stands for the reporter, another process: its own
	 * allocations must not be tracked, or it would wait for the write lock
	 * held by a sender waiting for it to read. */
	hl_guard_enter();
	for (;;) {
		ssize_t n = read(r->fd, buf + have, sizeof(buf) - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		long used = hl_decode_feed(&r->decoder, buf, have);
		r->result = used;
		if (used < 0)
			break;
		memmove(buf, buf + used, have - (size_t)used);
		have -= (size_t)used;
	}
	return NULL;
}

static void reader_start(struct reader *r, int fd)
{
	memset(r, 0, offsetof(struct reader, alloc_tid));
	r->fd = fd;
	hl_decode_init(&r->decoder, sink, r);
	assert_int_equal(pthread_create(&r->thread, NULL, reader_main, r), 0);
}

static void reader_join(struct reader *r)
{
	pthread_join(r->thread, NULL);
	close(r->fd);
	if (r->result < 0)
		fail_msg("decoder: %s", r->decoder.error);
	hl_decode_destroy(&r->decoder);
}

static __attribute__((noinline)) void *alloc_site_one(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

static __attribute__((noinline)) void *alloc_site_two(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

/* A whole connection: HELLO, events from two threads, LIVE, EXIT; every
 * record valid and every stack defined before use (the decoder checks).
 * With the tally off: counting in the hook would send no events. */
static void *thread_allocs(void *arg)
{
	for (int i = 0; i < 3000; i++)
		free(alloc_site_two(24 + (size_t)i % 100));
	return NULL;
}

static void test_round_trip(void **state)
{
	int sv[2];
	struct reader r;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	reader_start(&r, sv[1]);
	bool was_tally = hl_options.tally;
	hl_options.tally = false;
	assert_true(hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()));
	hl_options.tally = was_tally;
	hl_modules_scan();
	bool was_enabled = hl_track_enabled;
	hl_track_enabled = true;
	r.block = alloc_site_one(777);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, thread_allocs, NULL), 0);
	for (int i = 0; i < 3000; i++)
		free(alloc_site_one(16 + (size_t)i % 200));
	pthread_join(t, NULL);
	assert_true(hl_track_exit(HL_EXIT_NORMAL, 7));
	hl_track_enabled = was_enabled;
	reader_join(&r);
	assert_int_equal(r.counts[HL_REC_HELLO], 1);
	assert_int_equal(r.counts[HL_REC_OPTIONS], 1);
	assert_true(r.counts[HL_REC_MODULE_LOAD] >= 2);
	assert_true(r.counts[HL_REC_BATCH] >= 2);
	assert_true(r.counts[HL_REC_ALLOC] >= 6001);
	assert_true(r.counts[HL_REC_FREE] >= 6000);
	assert_int_equal(r.counts[HL_REC_THREAD_START], 2);
	assert_int_equal(r.counts[HL_REC_THREAD_END], 1);
	assert_int_equal(r.counts[HL_REC_EXIT], 1);
	assert_true(r.saw_block);
	assert_int_not_equal(r.block_stack, 0);
	assert_true(r.stacks_defined >= 2);
	free(r.block);
}

/* Enough events to fill the thread's buffer many times over (128 KiB,
 * ~10 bytes an event): every event arrives, in order, with its size, both
 * on the inline path and on the one that sends a full buffer first. */
static void test_full_buffers(void **state)
{
	enum { PAIRS = 60000 };
	int sv[2];
	static struct reader r;
	uint64_t bytes = 0;
	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	reader_start(&r, sv[1]);
	assert_true(hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()));
	bool was_enabled = hl_track_enabled;
	hl_track_enabled = true;
	for (unsigned i = 0; i < PAIRS; i++) {
		free(alloc_site_one(MARKER_SIZE + i % 7));
		bytes += MARKER_SIZE + i % 7;
	}
	assert_true(hl_track_exit(HL_EXIT_NORMAL, 0));
	hl_track_enabled = was_enabled;
	reader_join(&r);
	assert_true(r.counts[HL_REC_BATCH] >= 5);
	assert_int_equal(r.marker_allocs, PAIRS);
	assert_int_equal(r.marker_frees, PAIRS);
	assert_int_equal(r.marker_bytes, bytes);
}

/* free() keeps errno when its event is the one whose send fails (the
 * reporter gone): sent because the buffer is full, and because its oldest
 * event is FLUSH_TICKS old. hl_track_free leaves errno to the event path,
 * which keeps it on these, its only paths with system calls. In a child:
 * the connection and the thread's buffer are global. Returns which check
 * failed, 0 if none. */
static int free_errno_child(void)
{
	enum { KEEP_BLOCKS = 40000 };
	static void *keep[KEEP_BLOCKS];
	size_t n = 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
	    !hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()))
		return 10;
	hl_track_enabled = true;
	keep[n++] = alloc_site_one(40); /* the buffer's first event, sent at once */
	while (n < KEEP_BLOCKS && hl_emit_tls_buffer != NULL &&
	       hl_emit_tls_buffer->used + HL_PACK_MAX_EVENT <= BUFFER_BYTES)
		keep[n++] = alloc_site_one(40);
	if (n == KEEP_BLOCKS || !hl_emit_is_live())
		return 11;
	close(sv[1]);
	errno = 1234;
	free(keep[--n]); /* no room: the full buffer goes first, and fails */
	if (errno != 1234)
		return 1;
	if (!hl_emit_was_lost())
		return 12; /* the send above was not tried */

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
	    !hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()))
		return 13;
	free(keep[--n]);
	close(sv[1]);
	usleep(300 * 1000); /* FLUSH_TICKS: 100 M ticks, under 0.1 s of the TSC */
	/* The buffer is old: sent now, and fails. The first few frees may take
	 * the dense run's last clock reading (event_ticks), not see it. */
	for (unsigned i = 0; i < 9 && !hl_emit_was_lost(); i++) {
		errno = 4321;
		free(keep[--n]);
		if (errno != 4321)
			return 2;
	}
	if (!hl_emit_was_lost())
		return 14;
	return 0;
}

/* Runs child() in a forked child, whose connection and buffers are its own,
 * and fails with its exit code: which of its checks failed. */
static void in_child(int (*child)(void), const char *name)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child());
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s: status %#x (exit code: which of its checks failed)", name, status);
}

static void test_free_keeps_errno(void **state)
{
	(void)state;
	in_child(free_errno_child, "free_errno_child");
}

/* malloc() keeps errno when its event is the one whose send fails (the
 * reporter gone, the buffer full): hl_track_alloc leaves errno to the
 * capture's and the event path's system calls, which keep it. In a child,
 * as free_errno_child. Returns which check failed, 0 if none. */
static int malloc_errno_child(void)
{
	enum { KEEP_BLOCKS = 40000 };
	static void *keep[KEEP_BLOCKS];
	size_t n = 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
	    !hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()))
		return 10;
	hl_track_enabled = true;
	keep[n++] = alloc_site_one(40);
	while (n < KEEP_BLOCKS && hl_emit_tls_buffer != NULL &&
	       hl_emit_tls_buffer->used + HL_PACK_MAX_EVENT <= BUFFER_BYTES)
		keep[n++] = alloc_site_one(40);
	if (n == KEEP_BLOCKS || !hl_emit_is_live())
		return 11;
	close(sv[1]);
	errno = 1234;
	void *p = alloc_site_two(48); /* no room: the full buffer goes first, and fails */
	if (errno != 1234)
		return 1;
	if (!hl_emit_was_lost())
		return 12;
	free(p);
	while (n > 0)
		free(keep[--n]);
	return 0;
}

static void test_malloc_keeps_errno(void **state)
{
	(void)state;
	in_child(malloc_errno_child, "malloc_errno_child");
}

/* Thread tid's events among the n logged (tids[], ticks[]), from its
 * `from`th, `count` of them: the longest run of equal ticks, or 0 if they
 * ever go down. */
static size_t longest_run_of(const uint32_t *tids, const uint64_t *ticks, size_t n, uint32_t tid,
			     size_t from, size_t count)
{
	size_t run = 1, longest = 1, seen = 0;
	uint64_t last = 0;
	for (size_t i = 0; i < n && seen < from + count; i++) {
		if (tids[i] != tid)
			continue;
		if (seen++ < from)
			continue;
		if (seen - 1 > from && ticks[i] < last)
			return 0;
		run = seen - 1 > from && ticks[i] == last ? run + 1 : 1;
		if (run > longest)
			longest = run;
		last = ticks[i];
	}
	return longest;
}

/* The same over thread tid's ALLOCs. */
static size_t longest_equal_run(const struct reader *r, uint32_t tid, size_t from, size_t count)
{
	return longest_run_of(r->alloc_tid, r->alloc_ticks, r->nallocs, tid, from, count);
}

static void *thread_allocs_few(void *arg)
{
	for (int i = 0; i < 100; i++)
		free(alloc_site_two(24));
	return NULL;
}

/* Event times (emit_events.c event_ticks): a lone thread's dense events share a
 * clock reading among at most 8, never out of order; sparse events and,
 * once a second thread had events, every event read the clock. In a child:
 * `threaded` must start false. Returns which check failed, 0 if none. */
static int ticks_child(void)
{
	int sv[2];
	static struct reader r;
	uint32_t tid = (uint32_t)gettid();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return 2;
	reader_start(&r, sv[1]);
	if (!hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()))
		return 3;
	hl_track_enabled = true;
	for (int i = 0; i < 2000; i++)
		free(alloc_site_one(32));
	for (int i = 0; i < 20; i++) {
		usleep(300);
		free(alloc_site_one(32));
	}
	pthread_t t;
	if (pthread_create(&t, NULL, thread_allocs_few, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 4;
	for (int i = 0; i < 2000; i++)
		free(alloc_site_one(32));
	hl_track_exit(HL_EXIT_NORMAL, 0);
	pthread_join(r.thread, NULL);
	if (r.result < 0 || r.nallocs < 4120)
		return 5;
	size_t dense = longest_equal_run(&r, tid, 0, 2000);
	if (dense < 2 || dense > 8)
		return 10 + (int)dense; /* no reuse, out of order or too long */
	/* The first 7 may still take the dense run's last reading. */
	if (longest_equal_run(&r, tid, 2008, 12) != 1)
		return 6; /* sparse events must each read the clock */
	/* With threads, allocations off this thread's cache may still share
	 * a reading (ticks_threaded_child), frees never: each read the clock. */
	if (longest_run_of(r.free_tid, r.free_ticks, r.nfrees, tid, 2020, 2000) != 1)
		return 7;
	return 0;
}

static void test_event_ticks(void **state)
{
	(void)state;
	in_child(ticks_child, "ticks_child");
}

#define PASSED 64
static void *passed[PASSED];

/* Frees every block of `passed`, which the main thread allocated. */
static void *thread_frees_passed(void *arg)
{
	(void)arg;
	for (int i = 0; i < PASSED; i++)
		free(passed[i]);
	return NULL;
}

/* Once a process has threads, an allocation its thread's cache serves may
 * take the thread's last clock reading, up to 8 in a row (event_ticks), while
 * every free still reads the clock; and a block another thread freed never
 * comes back to an allocation with older ticks than that free (the reporter
 * orders the two by ticks: wire.h, "Clock"). In a child: `threaded` must
 * start false. Returns which check failed, 0 if none. */
static int ticks_threaded_child(void)
{
	int sv[2];
	static struct reader r;
	static void *held[64];
	uint32_t tid = (uint32_t)gettid();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return 2;
	reader_start(&r, sv[1]);
	if (!hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()))
		return 3;
	hl_track_enabled = true;
	pthread_t t;
	if (pthread_create(&t, NULL, thread_allocs_few, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 4;
	/* Dense runs of allocations from the cache, then of frees. */
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 64; i++)
			held[i] = alloc_site_one(32);
		for (int i = 0; i < 64; i++)
			free(held[i]);
	}
	/* Blocks that come back from another thread's frees. Their size class
	 * (1008-byte ranges: bins of 16, refilled 8 at a time) is this
	 * thread's alone and its bin is empty once PASSED are out, so the
	 * first allocation after the other thread's frees takes one of them
	 * back, while the dense frees before left this thread a reading it may
	 * reuse. In rounds, the later ones with some of the blocks in the bin. */
	for (int k = 0; k < 8; k++) {
		for (int i = 0; i < PASSED; i++)
			passed[i] = alloc_site_one(990);
		for (int i = 0; i < 16; i++)
			held[i] = alloc_site_two(24);
		for (int i = 0; i < 16; i++)
			free(held[i]);
		if (pthread_create(&t, NULL, thread_frees_passed, NULL) != 0 ||
		    pthread_join(t, NULL) != 0)
			return 4;
		for (int i = 0; i < PASSED; i++) /* the same size class: 989 tells them apart */
			passed[i] = alloc_site_one(989);
		for (int i = 0; i < PASSED; i++)
			free(passed[i]);
	}
	hl_track_exit(HL_EXIT_NORMAL, 0);
	pthread_join(r.thread, NULL);
	if (r.result < 0 || r.nallocs < 100 + 20 * 64 + 16 * PASSED || r.nallocs >= 8192)
		return 5;
	size_t dense = longest_equal_run(&r, tid, 0, 20 * 64);
	if (dense < 2 || dense > 8)
		return 10 + (int)dense; /* no reuse, out of order or too long */
	if (longest_run_of(r.free_tid, r.free_ticks, r.nfrees, tid, 0, 20 * 64) != 1)
		return 6; /* each free reads the clock */
	/* Round k's allocations of 989 bytes come after its passing thread
	 * freed the blocks of 990: one that got such an address back must not
	 * carry older ticks than that free, or the reporter would take it for
	 * an allocation before the free, freed by it (wire.h, "Clock"). The
	 * passing threads are the other threads after thread_allocs_few's, in
	 * the order their frees come (each sent all of them at its exit,
	 * before the join, so before the next began). */
	uint32_t order[9] = { 0 }; /* other threads, as their frees first come */
	unsigned others = 0;
	for (size_t i = 0; i < r.nfrees && others < 9; i++) {
		bool known = r.free_tid[i] == tid;
		for (unsigned o = 0; o < others; o++)
			known = known || r.free_tid[i] == order[o];
		if (!known)
			order[others++] = r.free_tid[i];
	}
	if (others != 9)
		return 7;
	const uint32_t *passer = order + 1;
	size_t matched = 0, late = 0;
	for (size_t j = 0; j < r.nallocs; j++) {
		if (r.alloc_tid[j] != tid || r.alloc_size[j] != 989)
			continue;
		uint32_t by = passer[late++ / PASSED % 8];
		for (size_t i = 0; i < r.nfrees; i++) {
			if (r.free_tid[i] != by || r.free_address[i] != r.alloc_address[j])
				continue;
			if (r.alloc_ticks[j] < r.free_ticks[i])
				return 8;
			matched++;
		}
	}
	if (matched == 0)
		return 9; /* no address came back: nothing was checked */
	return 0;
}

static void test_event_ticks_threaded(void **state)
{
	(void)state;
	in_child(ticks_threaded_child, "ticks_threaded_child");
}

/* The connection asks for room for 8 batches in flight (as far as
 * net.core.wmem_max lets it), so threads do not queue on a full socket
 * behind write_lock. In a child: the connection state is global. */
static void test_socket_buffer(void **state)
{
	FILE *f = fopen("/proc/sys/net/core/wmem_max", "r");
	long max = 0;
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 0;
		fclose(f);
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int sv[2], got = 0;
		socklen_t len = sizeof(got);
		long want = 8 * 128 * 1024;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
			_exit(2);
		/* The hook moves its descriptor: a second one names the socket.
		 * Connected or not (earlier tests leave this process's stream
		 * ended), the socket is set up first. */
		int same = dup(sv[0]);
		hl_emit_connect_fd(sv[0], HL_ORIGIN_START, 1);
		if (getsockopt(same, SOL_SOCKET, SO_SNDBUF, &got, &len) != 0)
			_exit(3);
		/* The kernel doubles what it grants (its bookkeeping). */
		_exit(max > 0 && got < 2 * (want < max ? want : max) ? 1 : 0);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("socket buffer: status %#x (1: smaller than asked)", status);
}

/* The reporter closes its end mid-run: no SIGPIPE, errno kept, events
 * counted as dropped, and hl_track_exit says "print it yourself". */
static void test_peer_closes(void **state)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_true(hl_emit_connect_fd(sv[0], HL_ORIGIN_START, 1));
	close(sv[1]);
	for (int i = 0; i < 5000; i++) {
		errno = 1234;
		void *p = hl_allocate(32, 16, HL_KIND_MALLOC);
		assert_int_equal(errno, 1234);
		hl_release(p, HL_KIND_MALLOC);
		assert_int_equal(errno, 1234);
	}
	assert_false(hl_emit_is_live());
	assert_true(hl_emit_was_lost());
	assert_true(hl_emit_dropped() > 0);
	assert_false(hl_track_exit(HL_EXIT_NORMAL, 0));
}

/* The same, end to end in a child: the standalone summary is printed. */
static void test_peer_closes_prints_summary(void **state)
{
	char path[] = "/tmp/hl-test-emit-XXXXXX";
	int log = mkstemp(path);
	assert_true(log >= 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int sv[2];
		setenv(HL_ENV_LOG, path, 1);
		hl_options.summary = hl_options.leaks = true;
		/* The leak must be listed whatever its class: whether a copy
		 * of its pointer is still in a register or stack slot at exit
		 * depends on the compiler (clang -O2 kept one). */
		hl_options.show_reachable = true;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
		    !hl_emit_connect_fd(sv[0], HL_ORIGIN_START, 1))
			_exit(2);
		hl_track_enabled = true;
		close(sv[1]);
		for (int i = 0; i < 5000; i++)
			free(alloc_site_one(40));
		alloc_site_two(4321); /* a leak for the list */
		hl_exit_report(HL_EXIT_NORMAL, 0);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	char text[65536];
	ssize_t n = pread(log, text, sizeof(text) - 1, 0);
	close(log);
	unlink(path);
	assert_true(n > 0);
	text[n] = '\0';
	assert_non_null(strstr(text, "HEAP SUMMARY"));
	assert_non_null(strstr(text, "events were not sent"));
	assert_non_null(strstr(text, "4,321 bytes in 1 blocks"));
}

static void test_socket_to_nowhere(void **state)
{
	assert_false(hl_emit_connect("/nonexistent/heapledger/socket", HL_ORIGIN_START, 1));
	assert_false(hl_emit_is_live());
	void *p = malloc(10); /* still works, nothing sent */
	assert_non_null(p);
	free(p);
}

/* What the hook drops while connected is counted and told in DROPPED
 * records, before the next batch and before EXIT. */
static void test_dropped_is_sent(void **state)
{
	int sv[2];
	static struct reader r;
	uint8_t too_long[HL_PACK_MAX_RECORD + 8] = { 0 };
	memset(&r, 0, sizeof(r));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	reader_start(&r, sv[1]);
	assert_true(hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()));
	hl_emit_record(too_long, sizeof(too_long)); /* cannot be packed: dropped */
	hl_emit_flush_all();
	hl_emit_record(too_long, sizeof(too_long));
	hl_emit_record(too_long, sizeof(too_long));
	assert_true(hl_track_exit(HL_EXIT_NORMAL, 0));
	reader_join(&r);
	assert_int_equal(r.dropped_events, 3);
	assert_true(r.counts[HL_REC_DROPPED] >= 1);
	assert_int_equal(r.counts[HL_REC_EXIT], 1);
}

/* stack.c's test switch (its objects are built with HL_UNIT_TEST). */
extern bool hl_stack_test_refuse;

/* A stack captured but not kept (no memory) leaves its event with stack 0,
 * and DROPPED says so. */
static void test_lost_stack_is_sent(void **state)
{
	int sv[2];
	static struct reader r;
	uint64_t frames[3] = { 0x7f0000123457, 0x7f000012abcd, (uintptr_t)&r };
	memset(&r, 0, sizeof(r));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	reader_start(&r, sv[1]);
	assert_true(hl_emit_connect_fd(sv[0], HL_ORIGIN_START, (uint32_t)getppid()));
	hl_stack_test_refuse = true;
	assert_int_equal(hl_stack_intern(frames, 3, false), 0);
	hl_stack_test_refuse = false;
	assert_true(hl_track_exit(HL_EXIT_NORMAL, 0));
	reader_join(&r);
	assert_int_equal(r.dropped_stacks, 1);
	assert_int_equal(r.dropped_events, 0);
}

/* Only our own user or root may listen on the reporter socket. */
static void test_peer_trust(void **state)
{
	assert_true(hl_emit_peer_trusted(1000, 1000));
	assert_true(hl_emit_peer_trusted(0, 1000));
	assert_false(hl_emit_peer_trusted(1000, 0));
	assert_false(hl_emit_peer_trusted(1001, 1000));
}

int main(void)
{
	/* A SIGPIPE would kill the test: make sure none is raised. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_event_ticks),
		cmocka_unit_test(test_event_ticks_threaded),
		cmocka_unit_test(test_peer_closes),
		cmocka_unit_test(test_peer_closes_prints_summary),
		cmocka_unit_test(test_socket_to_nowhere),
		cmocka_unit_test(test_peer_trust),
		cmocka_unit_test(test_dropped_is_sent),
		cmocka_unit_test(test_lost_stack_is_sent),
		cmocka_unit_test(test_socket_buffer),
		cmocka_unit_test(test_full_buffers),
		cmocka_unit_test(test_free_keeps_errno),
		cmocka_unit_test(test_malloc_keeps_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
