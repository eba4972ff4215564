/*
 * reporter/cli/bench.c: `heapledger bench-ingest [--events N] [--live N]`, a
 * hidden subcommand that measures how fast the reporter ingests events: a
 * writer thread sends a synthetic process (allocs and frees over a window of
 * --live outstanding blocks, 1000 distinct stacks, a BATCH every 4096
 * events, batches from --threads thread ids in turn, which turns on the
 * tombstones of out-of-order reconciliation) through a socketpair, and this
 * thread reads, decodes and applies
 * it exactly as a connection of `heapledger run` would.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "decode.h"
#include "encode.h"
#include "listen.h"

struct bench_writer {
	int fd;
	const struct hl_enc *chunk;
	unsigned long repeat;
};

/* Block i lives at one of 2 * live addresses, reused like an allocator's
 * free lists reuse memory (block i + 2 * live takes block i's place). */
static uint64_t bench_address(unsigned long i, unsigned long live)
{
	return 0x10000000ull + (i % (2 * live)) * 48;
}

/* The next batch, from the next of `threads` thread ids in turn. */
static void open_batch(struct hl_enc *e, unsigned long *batches, unsigned long threads,
		       uint64_t ticks, uint64_t address)
{
	hl_enc_batch_packed(e, 1 + (uint32_t)(*batches % threads), ticks, *batches, ticks,
			    address);
	(*batches)++;
}

/* One self-contained chunk: every block it allocates it frees again, so
 * the chunk can be sent any number of times. */
static void make_chunk(struct hl_enc *e, unsigned long events, unsigned long live,
		       unsigned long threads)
{
	unsigned long allocs = events / 2, batches = 0;
	uint64_t ticks = 1;

	/* Packed like the hook's, 4096 events a batch, whose bases are its
	 * first event's. */
	for (unsigned long i = 0; i < allocs; i++) {
		if (i % 2048 == 0)
			open_batch(e, &batches, threads, ticks, bench_address(i, live));
		hl_enc_pack_alloc(e, bench_address(i, live), 16 + i % 200, ticks++,
				  (uint32_t)(i % 1000) + 1, HL_KIND_MALLOC);
		if (i >= live)
			hl_enc_pack_free(e, bench_address(i - live, live), ticks++, HL_KIND_MALLOC);
	}
	for (unsigned long i = allocs > live ? allocs - live : 0, n = 0; i < allocs; i++, n++) {
		if (n % 4096 == 0)
			open_batch(e, &batches, threads, ticks, bench_address(i, live));
		hl_enc_pack_free(e, bench_address(i, live), ticks++, HL_KIND_MALLOC);
	}
}

static void *writer_main(void *arg)
{
	struct bench_writer *w = arg;

	for (unsigned long r = 0; r < w->repeat; r++) {
		size_t off = 0;

		while (off < w->chunk->len) {
			/* The reader stops on a decode error: no SIGPIPE then. */
			ssize_t n = send(w->fd, w->chunk->buf + off, w->chunk->len - off,
					 MSG_NOSIGNAL);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return NULL;
			off += (size_t)n;
		}
	}
	shutdown(w->fd, SHUT_WR);
	return NULL;
}

static void make_prologue(struct hl_enc *e)
{
	const char *argv[] = { "bench" };

	hl_enc_hello(e, 4242, 1, HL_ORIGIN_START, "/bench", 1, argv);
	for (uint32_t s = 1; s <= 1000; s++) {
		uint64_t frames[8];

		for (int i = 0; i < 8; i++)
			frames[i] = 0x400000 + s * 64 + (uint64_t)i;
		hl_enc_stack(e, s, frames, 8, 0);
	}
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int ingest(int fd, struct hl_run *run, uint64_t *bytes)
{
	struct hl_conn_state cs = { .run = run };
	struct hl_decoder d;
	uint8_t *buf = hl_xmalloc(HL_CONN_BUFFER);
	size_t fill = 0;
	int err = 0;

	hl_state_decoder_init(&d, &cs);
	for (;;) {
		ssize_t n = read(fd, buf + fill, HL_CONN_BUFFER - fill);
		long used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		*bytes += (uint64_t)n;
		fill += (size_t)n;
		used = hl_decode_feed(&d, buf, fill);
		if (used < 0) {
			hl_log("bench: %s", d.error);
			err = 1;
			break;
		}
		fill -= (size_t)used;
		memmove(buf, buf + used, fill);
	}
	hl_decode_destroy(&d);
	free(buf);
	return err;
}

int hl_cmd_bench_ingest(int argc, char **argv)
{
	unsigned long events = 20000000, live = 100000, per_chunk = 2000000, threads = 1;
	struct hl_enc prologue, chunk;
	struct bench_writer w;
	struct hl_run run;
	pthread_t thread;
	uint64_t bytes = 0, t0, t1;
	double c0, c1;
	int fds[2], err, first;
	const struct hl_arg args[] = {
		HL_ARG_UNSIGNED("events", 0, "N", &events, 1, 1ul << 40, "events to send (default 20M)"),
		HL_ARG_UNSIGNED("live", 0, "N", &live, 0, 1ul << 30, "blocks live at once"),
		HL_ARG_UNSIGNED("threads", 0, "N", &threads, 1, 1024, "threads the events come from"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"bench-ingest", "", 0, 0,
		"Measure how fast the reporter decodes a synthetic event stream.", args, NULL,
	};

	err = hl_args_parse(&cmd, argc, argv, &first);
	if (err >= 0)
		return err;
	if (per_chunk > events)
		per_chunk = events;
	if (live * 2 > per_chunk)
		per_chunk = live * 2;
	hl_enc_init(&prologue);
	hl_enc_init(&chunk);
	make_prologue(&prologue);
	make_chunk(&chunk, per_chunk, live, threads ? threads : 1);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0)
		return 1;
	if (write(fds[1], prologue.buf, prologue.len) != (ssize_t)prologue.len)
		return 1;
	w.fd = fds[1];
	w.chunk = &chunk;
	w.repeat = (events + per_chunk - 1) / per_chunk;
	hl_run_init(&run);
	t0 = hl_now_monotonic_ns();
	c0 = cpu_seconds();
	pthread_create(&thread, NULL, writer_main, &w);
	err = ingest(fds[0], &run, &bytes);
	c1 = cpu_seconds();
	t1 = hl_now_monotonic_ns();
	if (err)
		shutdown(fds[0], SHUT_RDWR); /* lets the writer finish */
	pthread_join(thread, NULL);
	events = w.repeat * per_chunk;
	printf("ingested %lu events (%.1f MiB) in %.3f s wall, %.3f s reader CPU: "
	       "%.2f M events/s wall, %.2f M events/s per reader CPU second\n",
	       events, (double)bytes / 1048576.0, (double)(t1 - t0) / 1e9, c1 - c0,
	       (double)events / ((double)(t1 - t0) / 1e3), (double)events / ((c1 - c0) * 1e6));
	if (run.nprocs)
		printf("final state: %llu allocs, %llu frees, %llu in use\n",
		       (unsigned long long)run.procs[0]->allocs,
		       (unsigned long long)run.procs[0]->frees,
		       (unsigned long long)run.procs[0]->in_use_blocks);
	{
		struct rusage ru;
		double chunk_mib = (double)chunk.len / 1048576.0;

		getrusage(RUSAGE_SELF, &ru);
		/* The writer's pre-encoded chunk is the bench's, not the
		 * reporter's: subtract it for the reporter's own peak. */
		printf("peak RSS %.1f MiB, of which the writer's chunk %.1f MiB: reader %.1f MiB; "
		       "block table %.1f MiB\n", (double)ru.ru_maxrss / 1024.0, chunk_mib,
		       (double)ru.ru_maxrss / 1024.0 - chunk_mib,
		       run.nprocs ? (double)run.procs[0]->live.capacity * sizeof(struct hl_block) /
				    1048576.0 : 0.0);
	}
	close(fds[0]);
	close(fds[1]);
	hl_run_destroy(&run);
	hl_enc_destroy(&prologue);
	hl_enc_destroy(&chunk);
	return err;
}
