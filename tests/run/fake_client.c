/*
 * tests/run/fake_client.c: a program that speaks the wire protocol itself,
 * so `heapledger run` can be tested end to end without the hook (run it with
 * HEAPLEDGER_LIB pointing at libhlnothing.so). Its stacks are real return
 * addresses inside this binary, so symbolization is checked too.
 *
 * Scenarios (argv[1]):
 *   leak     1000 allocations of 24 bytes at one site, 10 freed; exit 3
 *   hostile  a garbage connection first, then the `leak` process; exit 0
 *   kill     allocations, then SIGKILL to itself (no EXIT record)
 *   fork     the parent leaks 100 bytes; a forked child (its own HELLO,
 *            origin FORK) frees nothing and leaks 7 more bytes; exit 0
 *   sites N  N distinct 8-frame stacks inside this binary, one leak each
 *            (report speed with many leak sites); exit 0
 *   module PATH  a MODULE_LOAD naming PATH (a FIFO, say) and 3 leaks from a
 *            stack inside it, then the `leak` process's records; exit 3
 *   checks   two on-demand leak checks (LIVE flagged HL_LIVE_CHECK, then
 *            CHECK): the first by heapledger_check_leaks() finds 2 x 24
 *            bytes definitely lost and 100 still reachable; by the second
 *            (check_signal) one of the 24 was freed and 16 more lost; exit 0
 *   many_checks  two checks of 1,200 loss records (a block each, from
 *            1,200 stacks, 1,000 + 10 i bytes): more than a check keeps;
 *            by the second, the smallest record grew by a block of 8
 *            bytes; exit 0
 *   classes  a leak scan's verdicts at exit (LIVE flagged HL_LIVE_SCANNED):
 *            fake_leaker's blocks 2 x 24 definitely lost and 1 x 100 still
 *            reachable, fake_child_leaker's 3 x 16 indirectly and 1 x 40
 *            possibly lost; exit 0
 *   gate_classes [error]  leaks of every class, as a reachability scan sends
 *            them (LIVE, HL_LIVE_SCANNED): definite 100 bytes in 1 block and
 *            indirect 50 in 2 at fake_leaker, possible 30 in 1 and
 *            reachable 20 in 1 at fake_child_leaker; with "error", a double
 *            free too; exit 0
 *   slow N BYTES M  N connections that each send HELLO, definitions and
 *            the first BYTES bytes of a 786,448-byte LIVE record, then stall
 *            (peers that trickle a large record), and M that send nothing;
 *            non-blocking: prints "sent K of N" (K sent all their bytes; the
 *            others met back-pressure) once no byte moves for a second, then
 *            waits for stdin to close and prints "closed by the reporter: C"
 *            (of all N + M); exit 0
 *   hold     the `leak` process without its EXIT, then waits for its stdin
 *            to close, sends EXIT and exits 3; 4 if the reporter had closed
 *            the connection meanwhile (it refused the process)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "encode.h"

static uint64_t exe_bias, exe_low, exe_high;
static char exe_path[4096];

__attribute__((noinline)) static uint64_t call_site(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) uint64_t fake_leaker(void);
__attribute__((noinline)) uint64_t fake_leaker(void)
{
	return call_site(); /* FAKE-LEAK */
}

__attribute__((noinline)) uint64_t fake_child_leaker(void);
__attribute__((noinline)) uint64_t fake_child_leaker(void)
{
	return call_site(); /* FAKE-CHILD-LEAK */
}

static int find_exe(struct dl_phdr_info *info, size_t size, void *arg)
{
	exe_bias = info->dlpi_addr;
	exe_low = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (exe_bias + ph->p_vaddr < exe_low)
			exe_low = exe_bias + ph->p_vaddr;
		if (exe_bias + ph->p_vaddr + ph->p_memsz > exe_high)
			exe_high = exe_bias + ph->p_vaddr + ph->p_memsz;
	}
	return 1;
}

static int connect_reporter(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *path = getenv(HL_ENV_SOCKET);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (!path) {
		fprintf(stderr, "fake_client: %s not set\n", HL_ENV_SOCKET);
		exit(90);
	}
	strncpy(addr.sun_path, path, sizeof(addr.sun_path) - 1);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("fake_client: connect");
		exit(91);
	}
	return fd;
}

static void send_all(int fd, const struct hl_enc *e)
{
	for (size_t off = 0; off < e->len;) {
		ssize_t n = write(fd, e->buf + off, e->len - off);

		if (n <= 0) {
			perror("fake_client: write");
			exit(92);
		}
		off += (size_t)n;
	}
}

static void prologue(struct hl_enc *e, uint32_t origin, int argc, char **argv)
{
	uint64_t frames[2];

	hl_enc_hello(e, (uint32_t)getpid(), (uint32_t)getppid(), origin, exe_path,
		     argc, (const char *const *)argv);
	hl_enc_batch(e, (uint32_t)getpid(), 1, 0);
	hl_enc_module(e, 1, exe_path, exe_bias, exe_low, exe_high, NULL, 0);
	frames[0] = fake_leaker();
	frames[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	hl_enc_stack(e, 1, frames, 2, 0);
	frames[0] = fake_child_leaker();
	hl_enc_stack(e, 2, frames, 2, 0);
}

/* The `leak` process; extra (if not NULL) adds records after the prologue. */
static void leak_process_extra(int fd, int argc, char **argv, bool do_exit,
			       void (*extra)(struct hl_enc *e))
{
	struct hl_enc e;

	hl_enc_init(&e);
	prologue(&e, HL_ORIGIN_START, argc, argv);
	if (extra)
		extra(&e);
	/* Packed, as the hook sends them. */
	hl_enc_batch_packed(&e, (uint32_t)getpid(), 3000, 1, 10, 0x100000);
	for (uint64_t i = 0; i < 1000; i++)
		hl_enc_pack_alloc(&e, 0x100000 + i * 32, 24, 10 + i, 1, HL_KIND_MALLOC);
	for (uint64_t i = 0; i < 10; i++)
		hl_enc_pack_free(&e, 0x100000 + i * 32, 2000 + i, HL_KIND_MALLOC);
	if (do_exit)
		hl_enc_exit(&e, HL_EXIT_NORMAL, 3, 3000);
	send_all(fd, &e);
	hl_enc_destroy(&e);
}

static void leak_process(int fd, int argc, char **argv, bool do_exit)
{
	leak_process_extra(fd, argc, argv, do_exit, NULL);
}

static int scenario_fork(int argc, char **argv)
{
	struct hl_enc e;
	int fd = connect_reporter(), status;
	pid_t child;

	hl_enc_init(&e);
	prologue(&e, HL_ORIGIN_START, argc, argv);
	hl_enc_alloc(&e, 0x200000, 100, 10, 1, HL_KIND_MALLOC);
	send_all(fd, &e); /* sent before fork, like the hook's flush */
	e.len = 0;
	child = fork();
	if (child == 0) {
		int cfd = connect_reporter();

		hl_enc_hello(&e, (uint32_t)getpid(), (uint32_t)getppid(), HL_ORIGIN_FORK,
			     exe_path, argc, (const char *const *)argv);
		hl_enc_stack(&e, 1, (uint64_t[]){ fake_child_leaker() }, 1, 0);
		hl_enc_alloc(&e, 0x300000, 7, 20, 1, HL_KIND_MALLOC);
		hl_enc_exit(&e, HL_EXIT_NORMAL, 0, 21);
		send_all(cfd, &e);
		_exit(0);
	}
	waitpid(child, &status, 0);
	hl_enc_fork(&e, (uint32_t)child, 15);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 0, 30);
	send_all(fd, &e);
	hl_enc_destroy(&e);
	return 0;
}

static int scenario_sites(int argc, char **argv, unsigned long sites)
{
	struct hl_enc e;
	int fd = connect_reporter();

	hl_enc_init(&e);
	prologue(&e, HL_ORIGIN_START, argc, argv);
	for (unsigned long i = 0; i < sites; i++) {
		uint64_t frames[8];

		for (int f = 0; f < 8; f++)
			frames[f] = exe_low + ((i * 8 + (unsigned long)f) * 4) % (exe_high - exe_low);
		hl_enc_stack(&e, (uint32_t)i + 3, frames, 8, 0);
		hl_enc_alloc(&e, 0x1000000 + i * 64, 10 + i, i + 1, (uint32_t)i + 3, 0);
	}
	hl_enc_exit(&e, HL_EXIT_NORMAL, 0, sites + 10);
	send_all(fd, &e);
	hl_enc_destroy(&e);
	return 0;
}

static const char *module_path;

static void module_records(struct hl_enc *e)
{
	uint64_t frames[2] = { 0x7e0000001000, 0x7e0000002000 };

	hl_enc_module(e, 9, module_path, 0x7e0000000000, 0x7e0000000000, 0x7e0000100000,
		      NULL, 0);
	hl_enc_stack(e, 9, frames, 2, 0);
	for (uint64_t i = 0; i < 3; i++)
		hl_enc_alloc(e, 0x900000 + i * 64, 40, 5 + i, 9, HL_KIND_MALLOC);
}

static int scenario_module(int argc, char **argv, const char *path)
{
	module_path = path;
	leak_process_extra(connect_reporter(), argc, argv, true, module_records);
	return 3;
}

static int scenario_checks(int argc, char **argv)
{
	const struct hl_wire_live_block first[] = {
		{ .address = 0x500000, .size = 24, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x500040, .size = 24, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x500080, .size = 100, .stack_id = 2, .leak_class = HL_CLASS_REACHABLE },
	};
	const struct hl_wire_live_block second[] = {
		first[0], first[2],
		{ .address = 0x5000c0, .size = 16, .stack_id = 2, .leak_class = HL_CLASS_DEFINITE },
	};
	struct hl_enc e;
	int fd = connect_reporter();

	hl_enc_init(&e);
	prologue(&e, HL_ORIGIN_START, argc, argv);
	for (size_t i = 0; i < 3; i++)
		hl_enc_alloc(&e, first[i].address, first[i].size, 10 + i, first[i].stack_id, 0);
	hl_enc_live(&e, first, 3, HL_LIVE_SCANNED | HL_LIVE_CHECK);
	hl_enc_check(&e, 1, 0, 20);
	hl_enc_free(&e, first[1].address, 30, 0);
	hl_enc_alloc(&e, second[2].address, second[2].size, 31, second[2].stack_id, 0);
	hl_enc_live(&e, second, 3, HL_LIVE_SCANNED | HL_LIVE_CHECK);
	hl_enc_check(&e, 2, HL_CHECK_SIGNAL, 40);
	hl_enc_live(&e, second, 3, HL_LIVE_SCANNED);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 0, 100);
	send_all(fd, &e);
	hl_enc_destroy(&e);
	return 0;
}

#define MANY_RECORDS 1200
static int scenario_many_checks(int argc, char **argv)
{
	static struct hl_wire_live_block live[MANY_RECORDS + 1];
	uint64_t frames[2] = { fake_leaker(), 0 };
	struct hl_enc e;
	int fd = connect_reporter();

	hl_enc_init(&e);
	prologue(&e, HL_ORIGIN_START, argc, argv);
	for (uint32_t i = 0; i < MANY_RECORDS; i++) {
		frames[1] = exe_low + 16 * i;
		hl_enc_stack(&e, 3 + i, frames, 2, 0);
		live[i] = (struct hl_wire_live_block){ .address = 0x1000000 + 0x1000 * (uint64_t)i,
						       .size = 1000 + 10 * i, .stack_id = 3 + i,
						       .leak_class = HL_CLASS_DEFINITE };
	}
	hl_enc_live(&e, live, MANY_RECORDS, HL_LIVE_SCANNED | HL_LIVE_CHECK);
	hl_enc_check(&e, 1, 0, 20);
	live[MANY_RECORDS] = (struct hl_wire_live_block){ .address = 0x900000, .size = 8,
							  .stack_id = 3,
							  .leak_class = HL_CLASS_DEFINITE };
	hl_enc_live(&e, live, MANY_RECORDS + 1, HL_LIVE_SCANNED | HL_LIVE_CHECK);
	hl_enc_check(&e, 2, 0, 40);
	hl_enc_live(&e, live, 0, HL_LIVE_SCANNED);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 0, 100);
	send_all(fd, &e);
	hl_enc_destroy(&e);
	return 0;
}

static int scenario_classes(int argc, char **argv)
{
	const struct hl_wire_live_block live[] = {
		{ .address = 0x400000, .size = 24, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x400040, .size = 24, .stack_id = 1, .leak_class = HL_CLASS_DEFINITE },
		{ .address = 0x400080, .size = 100, .stack_id = 1, .leak_class = HL_CLASS_REACHABLE },
		{ .address = 0x400100, .size = 16, .stack_id = 2, .leak_class = HL_CLASS_INDIRECT },
		{ .address = 0x400140, .size = 16, .stack_id = 2, .leak_class = HL_CLASS_INDIRECT },
		{ .address = 0x400180, .size = 16, .stack_id = 2, .leak_class = HL_CLASS_INDIRECT },
		{ .address = 0x4001c0, .size = 40, .stack_id = 2, .leak_class = HL_CLASS_POSSIBLE },
	};
	size_t n = sizeof(live) / sizeof(live[0]);
	struct hl_enc e;
	int fd = connect_reporter();

	hl_enc_init(&e);
	prologue(&e, HL_ORIGIN_START, argc, argv);
	for (size_t i = 0; i < n; i++)
		hl_enc_alloc(&e, live[i].address, live[i].size, 10 + i, live[i].stack_id,
			     HL_KIND_MALLOC);
	hl_enc_live(&e, live, (uint32_t)n, HL_LIVE_SCANNED);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 0, 100);
	send_all(fd, &e);
	hl_enc_destroy(&e);
	return 0;
}

static int scenario_gate_classes(int argc, char **argv, bool with_error)
{
	static const struct hl_wire_live_block blocks[] = {
		{ 0x400000, 100, 1, HL_CLASS_DEFINITE, HL_KIND_MALLOC, 0 },
		{ 0x400100, 25, 1, HL_CLASS_INDIRECT, HL_KIND_MALLOC, 0 },
		{ 0x400200, 25, 1, HL_CLASS_INDIRECT, HL_KIND_MALLOC, 0 },
		{ 0x400300, 30, 2, HL_CLASS_POSSIBLE, HL_KIND_MALLOC, 0 },
		{ 0x400400, 20, 2, HL_CLASS_REACHABLE, HL_KIND_MALLOC, 0 },
	};
	struct hl_rec_error error = { .kind = HL_ERROR_DOUBLE_FREE, .stack_id = 1,
				      .address = 0x500000, .ticks = 30 };
	struct hl_enc e;
	int fd = connect_reporter();

	hl_enc_init(&e);
	prologue(&e, HL_ORIGIN_START, argc, argv);
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		hl_enc_alloc(&e, blocks[i].address, blocks[i].size, 10 + i, blocks[i].stack_id,
			     HL_KIND_MALLOC);
	if (with_error)
		hl_enc_error(&e, &error);
	hl_enc_live(&e, blocks, sizeof(blocks) / sizeof(blocks[0]), HL_LIVE_SCANNED);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 0, 40);
	send_all(fd, &e);
	hl_enc_destroy(&e);
	return 0;
}

static int scenario_hold(int argc, char **argv)
{
	int fd = connect_reporter();
	struct hl_enc e;
	char c;

	signal(SIGPIPE, SIG_IGN);
	leak_process(fd, argc, argv, false);
	while (read(0, &c, 1) > 0)
		;
	/* A connection the reporter closed reads as its end (or a reset). */
	{
		int flags = MSG_DONTWAIT;
		ssize_t n = recv(fd, &c, 1, flags);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return 4;
	}
	hl_enc_init(&e);
	hl_enc_exit(&e, HL_EXIT_NORMAL, 3, 3000);
	if (write(fd, e.buf, e.len) != (ssize_t)e.len)
		return 4;
	hl_enc_destroy(&e);
	return 3;
}

/* True when the reporter has closed fd (its end reads as end of file). */
static bool closed_by_peer(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static int scenario_slow(int argc, char **argv, int n, size_t bytes, int mute)
{
	struct hl_enc *e = calloc((size_t)n, sizeof(*e));
	size_t *off = calloc((size_t)n, sizeof(*off));
	int *fds = calloc((size_t)(n + mute), sizeof(*fds));
	struct pollfd *pf = calloc((size_t)n, sizeof(*pf));
	int sent = 0, closed = 0;
	char c;

	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < n + mute; i++) {
		fds[i] = connect_reporter();
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
	}
	for (int i = 0; i < n; i++) {
		struct hl_rec_live *live;
		size_t head;

		hl_enc_init(&e[i]);
		prologue(&e[i], HL_ORIGIN_START, argc, argv);
		head = e[i].len;
		live = hl_enc_record(&e[i], HL_REC_LIVE, (uint32_t)(sizeof(*live) +
				     HL_WIRE_MAX_LIVE_PER_RECORD * sizeof(struct hl_wire_live_block)));
		live->count = HL_WIRE_MAX_LIVE_PER_RECORD;
		if (head + bytes < e[i].len)
			e[i].len = head + bytes; /* the record's start only */
	}
	for (;;) {
		int waiting = 0;

		for (int i = 0; i < n; i++) {
			while (off[i] < e[i].len) {
				ssize_t w = write(fds[i], e[i].buf + off[i], e[i].len - off[i]);

				if (w <= 0)
					break;
				off[i] += (size_t)w;
			}
			if (off[i] < e[i].len && !closed_by_peer(fds[i]))
				pf[waiting++] = (struct pollfd){ .fd = fds[i], .events = POLLOUT };
		}
		if (!waiting || poll(pf, (nfds_t)waiting, 1000) <= 0)
			break;
	}
	for (int i = 0; i < n; i++)
		sent += off[i] == e[i].len;
	printf("sent %d of %d\n", sent, n);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (int i = 0; i < n + mute; i++)
		closed += closed_by_peer(fds[i]);
	printf("closed by the reporter: %d\n", closed);
	fflush(stdout); /* before a sanitizer's exit-time checks can abort */
	for (int i = 0; i < n; i++)
		hl_enc_destroy(&e[i]);
	free(e);
	free(off);
	free(fds);
	free(pf);
	return 0;
}

int main(int argc, char **argv)
{
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);

	exe_path[n > 0 ? n : 0] = 0;
	dl_iterate_phdr(find_exe, NULL);
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "leak")) {
		leak_process(connect_reporter(), argc, argv, true);
		return 3;
	}
	if (!strcmp(argv[1], "hostile")) {
		int bad = connect_reporter();

		if (write(bad, "\x07garbage-not-a-record-at-all...", 32) != 32)
			return 93;
		leak_process(connect_reporter(), argc, argv, true);
		return 3;
	}
	if (!strcmp(argv[1], "kill")) {
		leak_process(connect_reporter(), argc, argv, false);
		raise(SIGKILL);
	}
	if (!strcmp(argv[1], "fork"))
		return scenario_fork(argc, argv);
	if (!strcmp(argv[1], "module") && argc > 2)
		return scenario_module(argc, argv, argv[2]);
	if (!strcmp(argv[1], "checks"))
		return scenario_checks(argc, argv);
	if (!strcmp(argv[1], "many_checks"))
		return scenario_many_checks(argc, argv);
	if (!strcmp(argv[1], "classes"))
		return scenario_classes(argc, argv);
	if (!strcmp(argv[1], "gate_classes"))
		return scenario_gate_classes(argc, argv, argc > 2 && !strcmp(argv[2], "error"));
	if (!strcmp(argv[1], "slow") && argc > 4)
		return scenario_slow(argc, argv, atoi(argv[2]), strtoul(argv[3], NULL, 10),
				     atoi(argv[4]));
	if (!strcmp(argv[1], "hold"))
		return scenario_hold(argc, argv);
	if (!strcmp(argv[1], "sites") && argc > 2)
		return scenario_sites(argc, argv, strtoul(argv[2], NULL, 10));
	return 2;
}
