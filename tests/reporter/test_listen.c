/*
 * tests/reporter/test_listen.c: the socket side: a private 0700 directory,
 * several clients at once, records split across tiny writes, and a hostile
 * client that is dropped while a well-behaved one completes; and the cap
 * on what connections buffer: each time it is reached is said and so is
 * its end, and the connections that wait at it always progress.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "encode.h"
#include "listen.h"

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	size_t len = strlen(path);

	if (len >= sizeof(addr.sun_path))
		_exit(3);
	memcpy(addr.sun_path, path, len + 1);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		_exit(3);
	return fd;
}

/* A client process: writes buf in pieces of `piece` bytes, then exits. */
static pid_t client(const char *path, const struct hl_enc *e, size_t piece)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = connect_to(path);

		for (size_t off = 0; off < e->len; off += piece) {
			size_t n = e->len - off < piece ? e->len - off : piece;

			if (write(fd, e->buf + off, n) != (ssize_t)n)
				_exit(4);
		}
		close(fd);
		_exit(0);
	}
	return pid;
}

static void good_stream(struct hl_enc *e, uint32_t pid, int leaks)
{
	const char *argv[] = { "good" };
	uint64_t frame = 0x401000;

	hl_enc_hello(e, pid, 1, HL_ORIGIN_START, "/good", 1, argv);
	hl_enc_stack(e, 1, &frame, 1, 0);
	for (int i = 0; i < 1000; i++) {
		hl_enc_alloc(e, 0x10000 + (uint64_t)i * 16, 8, (uint64_t)i * 2 + 1, 1, 0);
		if (i >= leaks)
			hl_enc_free(e, 0x10000 + (uint64_t)i * 16, (uint64_t)i * 2 + 2, 0);
	}
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, 5000);
}

/* 30000 blocks reported in one LIVE record of ~720 KiB: larger than the
 * initial read buffer, so the connection's buffer has to grow. */
static void big_stream(struct hl_enc *e, uint32_t pid)
{
	enum { N = 30000 };
	static struct hl_wire_live_block live[N];
	const char *argv[] = { "big" };
	uint64_t frame = 0x401000;

	hl_enc_hello(e, pid, 1, HL_ORIGIN_START, "/big", 1, argv);
	hl_enc_stack(e, 1, &frame, 1, 0);
	for (int i = 0; i < N; i++) {
		live[i].address = 0x900000 + (uint64_t)i * 32;
		live[i].size = 3;
		live[i].stack_id = 1;
		live[i].leak_class = HL_CLASS_DEFINITE;
		hl_enc_alloc(e, live[i].address, 3, (uint64_t)i + 1, 1, 0);
	}
	hl_enc_live(e, live, N, HL_LIVE_SCANNED);
	hl_enc_exit(e, HL_EXIT_NORMAL, 0, N + 5);
}

static struct hl_process *find_pid(struct hl_run *run, uint32_t pid)
{
	for (size_t i = 0; i < run->nprocs; i++)
		if (run->procs[i]->pid == pid)
			return run->procs[i];
	return NULL;
}

static void test_hostile_and_good(void **state)
{
	struct hl_listener l;
	struct hl_run run;
	struct hl_enc good, tiny, bad, big;
	struct stat st;
	const char *argv[] = { "bad" };
	pid_t pids[4];
	struct hl_process *p;

	hl_run_init(&run);
	assert_int_equal(hl_listen_open_private(&l, &run), 0);
	assert_int_equal(stat(l.dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	hl_enc_init(&good);
	hl_enc_init(&tiny);
	hl_enc_init(&bad);
	hl_enc_init(&big);
	big_stream(&big, 504);
	good_stream(&good, 501, 10);
	good_stream(&tiny, 502, 3);
	hl_enc_hello(&bad, 503, 1, HL_ORIGIN_START, "/bad", 1, argv);
	((struct hl_wire_header *)hl_enc_record(&bad, HL_REC_FREE, 24))->version = 7;
	hl_enc_raw(&bad, "garbage!", 8);
	pids[0] = client(l.path, &bad, 4096);
	pids[1] = client(l.path, &good, 4096);
	pids[2] = client(l.path, &tiny, 3); /* records split across writes */
	pids[3] = client(l.path, &big, 100000);
	/* Serve while the clients write: tiny writes fill the socket buffer. */
	uint64_t deadline = hl_now_monotonic_ns() + 20000000000ull;

	for (int done = 0; hl_now_monotonic_ns() < deadline &&
			   (done < 4 || run.nprocs < 4 || hl_listen_open_count(&l));) {
		int status;

		assert_int_equal(hl_listen_poll(&l, 50), 0);
		for (int c = 0; c < 4; c++) {
			if (pids[c] > 0 && waitpid(pids[c], &status, WNOHANG) == pids[c]) {
				assert_int_equal(WEXITSTATUS(status), 0);
				pids[c] = 0;
				done++;
			}
		}
	}
	assert_int_equal(hl_listen_open_count(&l), 0);
	p = find_pid(&run, 501);
	assert_non_null(p);
	assert_true(p->has_exit && p->closed);
	hl_process_finish(p);
	assert_int_equal(p->in_use_blocks, 10);
	p = find_pid(&run, 502);
	assert_non_null(p);
	hl_process_finish(p);
	assert_int_equal(p->in_use_blocks, 3);
	assert_int_equal(p->allocs, 1000);
	p = find_pid(&run, 504);
	assert_non_null(p);
	hl_process_finish(p);
	assert_int_equal(p->in_use_blocks, 30000);
	assert_int_equal(p->live_mismatch, 0);
	assert_int_equal(p->nleaks, 1);
	assert_int_equal(p->leaks[0].leak_class, HL_CLASS_DEFINITE);
	p = find_pid(&run, 503); /* dropped after HELLO: ended, no EXIT */
	assert_non_null(p);
	assert_true(p->closed && !p->has_exit);
	hl_listen_close(&l);
	assert_int_not_equal(stat(l.dir, &st), 0); /* directory removed */
	hl_enc_destroy(&good);
	hl_enc_destroy(&tiny);
	hl_enc_destroy(&bad);
	hl_enc_destroy(&big);
	hl_run_destroy(&run);
}

/* ---- the buffering cap ------------------------------------------------------
 * In-process peers on non-blocking sockets, written and read in turns until
 * neither side moves: no timing, the same steps on every machine. */

struct peer {
	int fd;
	struct hl_enc e;
	size_t off;
};

static int connect_nonblocking(const char *path)
{
	int fd = connect_to(path);

	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* HELLO, a stack, and a LIVE record of `blocks` blocks: whole, with EXIT
 * after it, or only its first `cut` bytes (a peer that stalls inside it). */
static void peer_open(struct peer *p, const char *path, uint32_t pid, uint32_t blocks,
		      size_t cut)
{
	const char *argv[] = { "peer" };
	uint64_t frame = 0x401000;
	struct hl_rec_live *live;
	size_t head;

	hl_enc_init(&p->e);
	hl_enc_hello(&p->e, pid, 1, HL_ORIGIN_START, "/peer", 1, argv);
	hl_enc_stack(&p->e, 1, &frame, 1, 0);
	head = p->e.len;
	live = hl_enc_record(&p->e, HL_REC_LIVE, (uint32_t)(sizeof(*live) +
			     blocks * sizeof(struct hl_wire_live_block)));
	live->count = blocks;
	for (uint32_t i = 0; i < blocks; i++) {
		struct hl_wire_live_block *b = (struct hl_wire_live_block *)(live + 1) + i;

		b->address = 0x900000 + (uint64_t)i * 32;
		b->size = 8;
		b->stack_id = 1;
		b->leak_class = HL_CLASS_DEFINITE;
	}
	if (cut)
		p->e.len = head + cut;
	else
		hl_enc_exit(&p->e, HL_EXIT_NORMAL, 0, 10);
	p->off = 0;
	p->fd = connect_nonblocking(path);
}

static void peer_close(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	hl_enc_destroy(&p->e);
}

/* Peers [from, to) write up to `chunk` bytes each, then the listener reads,
 * in turns, until a turn moves no byte either way. */
static void serve(struct hl_listener *l, struct peer *peers, int from, int to, size_t chunk)
{
	for (int still = 0; still < 2;) {
		uint64_t read_before = l->bytes;
		size_t written = 0;

		for (int i = from; i < to; i++) {
			struct peer *p = &peers[i];
			size_t n = p->e.len - p->off < chunk ? p->e.len - p->off : chunk;
			ssize_t w;

			if (p->fd < 0 || !n)
				continue;
			w = write(p->fd, p->e.buf + p->off, n);
			if (w > 0) {
				p->off += (size_t)w;
				written += (size_t)w;
			}
		}
		assert_int_equal(hl_listen_poll(l, 0), 0);
		still = written || l->bytes != read_before ? 0 : still + 1;
	}
}

static size_t count_lines(const char *log, const char *what)
{
	size_t n = 0;

	for (const char *at = log; (at = strstr(at, what)); at += strlen(what))
		n++;
	return n;
}

/* hl_log's lines, captured from stderr between begin and end. */
static int log_saved_fd = -1;
static FILE *log_file;

static void log_begin(void)
{
	fflush(stderr);
	log_file = tmpfile();
	assert_non_null(log_file);
	log_saved_fd = dup(2);
	dup2(fileno(log_file), 2);
	hl_log_quiet = false;
}

/* What was logged since log_begin (the caller frees it); captures on. */
static char *log_text(void)
{
	long len;
	char *text;

	fflush(stderr);
	len = lseek(fileno(log_file), 0, SEEK_END);
	text = calloc(1, (size_t)len + 1);
	assert_int_equal(pread(fileno(log_file), text, (size_t)len, 0), len);
	return text;
}

/* Also the test's teardown: a failed assertion must not leave stderr
 * captured, or its message would go unseen. */
static void log_end(void)
{
	if (log_saved_fd < 0)
		return;
	fflush(stderr);
	dup2(log_saved_fd, 2);
	close(log_saved_fd);
	log_saved_fd = -1;
	fclose(log_file);
	hl_log_quiet = true;
}

static int log_teardown(void **state)
{
	(void)state;
	log_end();
	return 0;
}

#define CUT_BYTES 700000 /* of a 786 KB record: a 1 MiB buffer */
#define BIG_BLOCKS HL_WIRE_MAX_LIVE_PER_RECORD
/* Peers with a 1 MiB buffer each that fit under the cap together. */
#define HOLDERS ((int)(HL_CONN_GROWTH_MAX / ((1u << 20) - HL_CONN_BUFFER_MIN)))

/* Peers that waited at the cap all hang up: their connections end without
 * being read again. The end of the episode is still said, and the next
 * time the cap is reached is said again. */
static void test_cap_episode_ends_on_hangup(void **state)
{
	enum { WAITING = 4, LATER = 3, N = HOLDERS + WAITING + LATER };
	static struct peer peers[N];
	struct hl_listener l;
	struct hl_run run;
	size_t closed = 0;
	char *log;

	(void)state;
	hl_run_init(&run);
	assert_int_equal(hl_listen_open_private(&l, &run), 0);
	log_begin();
	/* One at a time, the holders take the room a whole 1 MiB buffer at a time. */
	for (int i = 0; i < HOLDERS; i++) {
		peer_open(&peers[i], l.path, 1000 + (uint32_t)i, BIG_BLOCKS, CUT_BYTES);
		serve(&l, peers, i, i + 1, SIZE_MAX);
	}
	assert_int_equal(l.npaused, 0);
	for (int i = HOLDERS; i < HOLDERS + WAITING; i++)
		peer_open(&peers[i], l.path, 1000 + (uint32_t)i, BIG_BLOCKS, CUT_BYTES);
	serve(&l, peers, 0, HOLDERS + WAITING, SIZE_MAX);
	assert_int_equal(l.npaused, WAITING);
	/* Connections are accepted in the order they were made. */
	assert_int_equal(l.nconns, HOLDERS + WAITING);
	for (size_t i = 0; i < l.nconns; i++) {
		if (l.conns[i]->paused) {
			assert_true(i >= HOLDERS);
			close(peers[i].fd);
			peers[i].fd = -1;
			closed++;
		}
	}
	assert_int_equal(closed, WAITING);
	serve(&l, peers, 0, 0, SIZE_MAX);
	assert_int_equal(l.npaused, 0);
	assert_int_equal(hl_listen_open_count(&l), HOLDERS);
	log = log_text();
	assert_int_equal(count_lines(log, "connection buffers at their cap"), 1);
	assert_int_equal(count_lines(log, "connection buffers below their cap again: 4 times"), 1);
	free(log);
	/* The holders still hold the room: newcomers wait again, and say so. */
	for (int i = HOLDERS + WAITING; i < N; i++)
		peer_open(&peers[i], l.path, 1000 + (uint32_t)i, BIG_BLOCKS, CUT_BYTES);
	serve(&l, peers, 0, N, SIZE_MAX);
	assert_int_equal(l.npaused, LATER);
	log = log_text();
	assert_int_equal(count_lines(log, "connection buffers at their cap"), 2);
	free(log);
	for (int i = 0; i < N; i++)
		peer_close(&peers[i]);
	hl_listen_close(&l);
	log_end();
	hl_run_destroy(&run);
}

/* Many peers send a large record each at once, so their buffers grow in
 * step and the cap is reached with every one part way (512 KiB of the
 * 1 MiB each needs): all wait and hold all the room between them. One must
 * still be read to its record's end, then the next, until every process is
 * whole; what they buffer stays within the cap plus one buffer. */
static void test_waiting_peers_progress(void **state)
{
	enum { N = 80, BLOCKS = 25000 /* 600 KB */ };
	static struct peer peers[N];
	struct hl_listener l;
	struct hl_run run;
	size_t whole = 0;

	(void)state;
	hl_run_init(&run);
	assert_int_equal(hl_listen_open_private(&l, &run), 0);
	for (int i = 0; i < N; i++)
		peer_open(&peers[i], l.path, 2000 + (uint32_t)i, BLOCKS, 0);
	serve(&l, peers, 0, N, 16384);
	for (int i = 0; i < N; i++)
		assert_int_equal(peers[i].off, peers[i].e.len); /* all sent */
	for (int i = 0; i < N; i++)
		peer_close(&peers[i]);
	serve(&l, peers, 0, 0, SIZE_MAX);
	assert_int_equal(hl_listen_open_count(&l), 0);
	for (size_t i = 0; i < run.nprocs; i++)
		whole += run.procs[i]->has_exit && run.procs[i]->pid >= 2000;
	assert_int_equal(whole, N);
	assert_true(l.grown_peak > HL_CONN_GROWTH_MAX - (1u << 20)); /* the cap was reached */
	assert_true(l.grown_peak <= HL_CONN_GROWTH_MAX + HL_CONN_BUFFER - HL_CONN_BUFFER_MIN);
	hl_listen_close(&l);
	hl_run_destroy(&run);
}

/* The same, with peers that stall inside their records: the idle timeout
 * closes them all, those that waited at the cap included (each, read
 * again, shows it is stalled), instead of their holding the room forever. */
static void test_stalled_waiting_peers_time_out(void **state)
{
	enum { N = 80, BLOCKS = 25000 };
	static struct peer peers[N];
	struct hl_listener l;
	struct hl_run run;

	(void)state;
	hl_run_init(&run);
	assert_int_equal(hl_listen_open_private(&l, &run), 0);
	for (int i = 0; i < N; i++)
		peer_open(&peers[i], l.path, 3000 + (uint32_t)i, BLOCKS, 550000);
	l.idle_timeout_ns = 0; /* off while they send */
	serve(&l, peers, 0, N, 16384);
	assert_true(l.npaused > 0);
	/* Every connection inside a record is now stalled past the timeout
	 * (1 ns): each one read since is closed at the next check. */
	l.idle_timeout_ns = 1;
	for (int turn = 0; turn < 4 * N && hl_listen_open_count(&l); turn++)
		assert_int_equal(hl_listen_poll(&l, 0), 0);
	assert_int_equal(hl_listen_open_count(&l), 0);
	assert_int_equal(l.idle_dropped, N);
	for (int i = 0; i < N; i++)
		peer_close(&peers[i]);
	hl_listen_close(&l);
	hl_run_destroy(&run);
}

/* Fair share: two peers stall inside records holding all the room, four
 * more wait for room. A program whose record (120 KB) is all in its socket
 * is still read, past the cap, and the room given back at once: it is
 * stored whole and never waits. Past the stall timeout, with others
 * waiting, the two holders are cut and reported as cut by the reporter. */
static void test_fair_share(void **state)
{
	enum { HOLD = 2, WAIT = 4, N = HOLD + WAIT + 1, BUSY = N - 1 };
	static struct peer peers[N];
	struct hl_listener l;
	struct hl_run run;
	size_t cut = 0, whole = 0;

	(void)state;
	hl_run_init(&run);
	assert_int_equal(hl_listen_open_private(&l, &run), 0);
	/* two 1 MiB buffers, and less room left than the program needs */
	l.growth_max = HOLD * ((1u << 20) - HL_CONN_BUFFER_MIN) + (32u << 10);
	for (int i = 0; i < HOLD + WAIT; i++) {
		peer_open(&peers[i], l.path, 4000 + (uint32_t)i, BIG_BLOCKS, CUT_BYTES);
		serve(&l, peers, 0, i + 1, SIZE_MAX);
	}
	assert_int_equal(l.npaused, WAIT);
	peer_open(&peers[BUSY], l.path, 4999, 5000, 0);
	serve(&l, peers, 0, N, SIZE_MAX);
	assert_int_equal(peers[BUSY].off, peers[BUSY].e.len);
	assert_true(l.lent >= 1);
	assert_true(l.grown <= l.growth_max);
	peer_close(&peers[BUSY]);
	serve(&l, peers, 0, 0, SIZE_MAX);
	assert_int_equal(l.npaused, WAIT);
	/* Every holder is past a 1 ns stall timeout: cut at the next poll. */
	l.stall_timeout_ns = 1;
	assert_int_equal(hl_listen_poll(&l, 0), 0);
	assert_int_equal(l.stall_cut, HOLD);
	assert_true(l.npaused < WAIT); /* the room went to those waiting */
	for (size_t i = 0; i < run.nprocs; i++) {
		struct hl_process *p = run.procs[i];

		whole += p->pid == 4999 && p->has_exit && p->live_seen &&
			 p->standalone == HL_STANDALONE_NONE;
		cut += p->standalone == HL_STANDALONE_CUT;
		if (p->standalone == HL_STANDALONE_CUT)
			assert_true(p->pid < 4000 + HOLD);
	}
	assert_int_equal(whole, 1);
	assert_int_equal(cut, HOLD);
	l.stall_timeout_ns = 0;
	for (int i = 0; i < N; i++)
		peer_close(&peers[i]);
	hl_listen_close(&l);
	hl_run_destroy(&run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_and_good),
		cmocka_unit_test_teardown(test_cap_episode_ends_on_hangup, log_teardown),
		cmocka_unit_test(test_waiting_peers_progress),
		cmocka_unit_test(test_stalled_waiting_peers_time_out),
		cmocka_unit_test(test_fair_share),
	};

	hl_log_quiet = true;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
