/*
 * tests/reporter/test_listen.c: the socket side: a private 0700 directory,
 * several clients at once, records split across tiny writes, and a hostile
 * client that is dropped while a well-behaved one completes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_and_good),
	};

	hl_log_quiet = true;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
