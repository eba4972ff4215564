/*
 * libhook/emit_conn.c: the one socket writer and the connection's life.
 *
 * Everything that goes to the reporter goes through here, under
 * hl_emit_write_lock, so records never interleave: HELLO and OPTIONS when
 * connecting, the definitions a batch may name (MODULE_LOAD/UNLOAD from
 * modules.c, STACKs with ids not yet sent from stack.c, DROPPED) before
 * every batch, so an id is always defined before its first use, EXEC, and
 * what a fork child sends of its own. The per-thread buffers are
 * emit_events.c's, the block sets emit_live.c's.
 *
 * If a write fails (reporter gone: EPIPE, never SIGPIPE thanks to
 * MSG_NOSIGNAL) the connection is closed, one warning is printed and later
 * events are counted as dropped; the program keeps running.
 *
 * The program never waits on the reporter for long: the socket is
 * non-blocking, connect() retries a full backlog and a send polls a full
 * socket for at most wait_ms (HEAPLEDGER_OPTIONS) each time no byte goes out,
 * then the hook goes on standalone. Nothing is sent before SO_PEERCRED shows
 * the listener runs as our user or root (another user may have bound the
 * path first). The socket sits high in the descriptor table (fd.c) and is
 * checked before each send: a program that took its number gets neither our
 * bytes nor a close().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "emit_int.h"
#include "tally_hook.h"
#include "leakcheck.h"
#include "lock.h"
#include "scan.h"
#include "track.h"

struct hl_lock hl_emit_write_lock;
static _Atomic int state_static;
_Atomic int *hl_emit_state_word = &state_static;
/* The state as this process image last set it, on ordinary memory: what a
 * fork child (or a raw clone child at its exit) inherited. write_lock */
static int state_mirror;
/* A wait for the reporter timed out: it is stopped or stuck, so a forked
 * child does not wait for it again (each would stall wait_ms). */
static bool reporter_stuck;
struct hl_fd hl_emit_sock = HL_FD_NONE;
uint64_t hl_emit_batch_sequence;
uint64_t hl_emit_records_total;
uint32_t hl_emit_stacks_sent = 1;
_Atomic uint64_t hl_emit_dropped_count;
static uint64_t dropped_sent;            /* `dropped` as last told in DROPPED; write_lock */
static uint64_t lost_stacks_sent;        /* hl_stack_lost() as last told; write_lock */
uint8_t hl_emit_scratch[SCRATCH_BYTES] __attribute__((aligned(8)));
size_t hl_emit_scratch_used;

static int state_now(void)
{
	return atomic_load_explicit(hl_emit_state_word, memory_order_relaxed);
}

bool hl_emit_is_live(void)
{
	int s = state_now();
	return s == EMIT_LIVE || (s == EMIT_DEFERRED && hl_emit_fork_resolve(NULL));
}

bool hl_emit_is_connected(void)
{
	int s = state_now();
	return s == EMIT_LIVE || s == EMIT_DEFERRED;
}

bool hl_emit_is_deferred(void)
{
	return state_now() == EMIT_DEFERRED;
}

bool hl_emit_was_lost(void)
{
	return atomic_load_explicit(hl_emit_state_word, memory_order_relaxed) == EMIT_LOST;
}

uint64_t hl_emit_dropped(void)
{
	return atomic_load_explicit(&hl_emit_dropped_count, memory_order_relaxed);
}


/* ---- the socket ------------------------------------------------------------ */

int hl_emit_state_swap_locked(int s)
{
	hl_assert_held(&hl_emit_write_lock);
	state_mirror = s;
	return atomic_exchange(hl_emit_state_word, s);
}

/* The state's wipe-on-fork page, before the first connection; false if the
 * kernel has none (Linux < 4.14): then no buffer is shared either. */
static bool state_page_locked(void)
{
	hl_assert_held(&hl_emit_write_lock);
	if (hl_emit_state_word != &state_static)
		return true;
	size_t page = hl_os_page_size();
	_Atomic int *word = hl_os_map(page);
	if (word == NULL)
		return false;
	if (!hl_os_wipe_on_fork((void *)word, page)) {
		hl_os_unmap((void *)word, page);
		return false;
	}
	atomic_store(word, atomic_load(&state_static));
	hl_emit_state_word = word;
	return true;
}

/* Goes on standalone; `reason` (enum hl_standalone) reaches the reporter
 * through the shared area, stored before the socket closes. */
static void disconnect_locked(uint32_t reason, const char *why)
{
	hl_assert_held(&hl_emit_write_lock);
	if (atomic_load_explicit(hl_emit_state_word, memory_order_relaxed) == EMIT_LIVE)
		hl_shared_note_standalone_locked(reason);
	hl_fd_release(&hl_emit_sock); /* closed only if the number is still ours */
	hl_tally_stop(); /* the counts stay as they were for the reporter */
	if (hl_emit_state_swap_locked(EMIT_LOST) == EMIT_LIVE) {
		hl_notice(why);
	}
}

/* Waits until fd takes more bytes (or `events` happen), at most wait_ms;
 * false on timeout. */
static bool wait_ready(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t start = hl_os_now_ms(), waited = 0;
	while (waited <= hl_options.wait_ms) {
		int n = poll(&p, 1, (int)(hl_options.wait_ms - waited));
		if (n > 0)
			return true;
		if (n == 0 || errno != EINTR)
			return false;
		waited = hl_os_now_ms() - start;
	}
	return false;
}

/* Sends iov[0..count) whole; `pass_fd` >= 0 rides along (SCM_RIGHTS) with
 * the first bytes. */
static bool send_iov_fd_locked(struct iovec *iov, int count, int pass_fd)
{
	hl_assert_held(&hl_emit_write_lock);
	if (atomic_load_explicit(hl_emit_state_word, memory_order_relaxed) != EMIT_LIVE)
		return false;
	if (hl_unlikely(!hl_process_is_owner()))
		return false; /* a vfork or raw clone child: the connection is not its own */
	if (!hl_fd_is_ours(&hl_emit_sock)) {
		disconnect_locked(HL_STANDALONE_DESCRIPTOR,
				  "the program took the reporter connection's descriptor; "
				  "continuing standalone, events are dropped");
		return false;
	}
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)count };
	union {
		struct cmsghdr h;
		char bytes[CMSG_SPACE(sizeof(int))];
	} control;
	if (pass_fd >= 0) {
		msg.msg_control = control.bytes;
		msg.msg_controllen = sizeof(control.bytes);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	while (msg.msg_iovlen > 0) {
		ssize_t n = sendmsg(hl_emit_sock.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (wait_ready(hl_emit_sock.fd, POLLOUT))
				continue;
			reporter_stuck = true;
			disconnect_locked(HL_STANDALONE_STALLED,
					  "the reporter stopped reading (wait_ms passed); "
					  "continuing standalone, events are dropped");
			return false;
		}
		if (n <= 0) {
			disconnect_locked(HL_STANDALONE_LOST,
					  "reporter connection lost; continuing standalone, "
					  "events are dropped");
			return false;
		}
		msg.msg_control = NULL; /* went with the first bytes */
		msg.msg_controllen = 0;
		while (msg.msg_iovlen > 0 && (size_t)n >= msg.msg_iov->iov_len) {
			n -= (ssize_t)msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen > 0) {
			msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + n;
			msg.msg_iov->iov_len -= (size_t)n;
		}
	}
	return true;
}

bool hl_emit_send_iov_locked(struct iovec *iov, int count)
{
	hl_assert_held(&hl_emit_write_lock);
	return send_iov_fd_locked(iov, count, -1);
}

bool hl_emit_lock_is_held(void)
{
	return hl_lock_is_held(&hl_emit_write_lock) && hl_lock_is_mine(&hl_emit_write_lock);
}

bool hl_emit_send_locked(const void *data, size_t len)
{
	hl_assert_held(&hl_emit_write_lock);
	struct iovec iov = { (void *)data, len };
	return hl_emit_send_iov_locked(&iov, 1);
}

bool hl_emit_scratch_flush_locked(void)
{
	hl_assert_held(&hl_emit_write_lock);
	bool ok = hl_emit_scratch_used == 0 || hl_emit_send_locked(hl_emit_scratch, hl_emit_scratch_used);
	hl_emit_scratch_used = 0;
	return ok;
}

/* Room for `len` bytes in the scratch buffer, flushing it first if needed. */
void *hl_emit_scratch_reserve_locked(size_t len)
{
	hl_assert_held(&hl_emit_write_lock);
	if (hl_emit_scratch_used + len > sizeof(hl_emit_scratch) && !hl_emit_scratch_flush_locked())
		return NULL;
	void *p = hl_emit_scratch + hl_emit_scratch_used;
	hl_emit_scratch_used += len;
	return p;
}

/* Puts STACK records for ids not yet sent on this connection into the
 * scratch buffer. */
static bool put_stacks_locked(void)
{
	hl_assert_held(&hl_emit_write_lock);
	uint32_t end = hl_stack_next_id();
	for (; hl_emit_stacks_sent < end; hl_emit_stacks_sent++) {
		const struct hl_stack *s = hl_stack_get(hl_emit_stacks_sent);
		uint32_t len = (uint32_t)(sizeof(struct hl_rec_stack) + s->depth * 8u);
		struct hl_rec_stack *rec = hl_emit_scratch_reserve_locked(len);
		if (rec == NULL)
			return false;
		rec->h = hl_wire_hdr(HL_REC_STACK, 0, len);
		rec->stack_id = s->id;
		rec->depth = s->depth;
		rec->truncated = s->truncated;
		memcpy(rec + 1, s->frames, s->depth * 8u);
		hl_emit_records_total++;
	}
	return true;
}

bool hl_emit_send_stacks_locked(void)
{
	return put_stacks_locked() && hl_emit_scratch_flush_locked();
}

/* Events dropped on a live connection (no buffer for a new thread, a
 * vfork child's events past its parent's full buffer, a record too long to
 * pack, the early log past its bound) and stacks captured but not kept are
 * told in a DROPPED record before the next batch and before EXIT, so the
 * report says how much may be missing. */
static bool put_dropped_locked(void)
{
	hl_assert_held(&hl_emit_write_lock);
	uint64_t now = atomic_load_explicit(&hl_emit_dropped_count, memory_order_relaxed);
	uint64_t lost = hl_stack_lost();
	if (now == dropped_sent && lost == lost_stacks_sent)
		return true;
	struct hl_rec_dropped *rec = hl_emit_scratch_reserve_locked(sizeof(*rec));
	if (rec == NULL)
		return false;
	*rec = (struct hl_rec_dropped){ .h = hl_wire_hdr(HL_REC_DROPPED, 0, sizeof(*rec)),
					.events = now - dropped_sent,
					.stacks = lost - lost_stacks_sent };
	dropped_sent = now;
	lost_stacks_sent = lost;
	hl_emit_records_total++;
	return true;
}

void hl_emit_send_new_stacks(void)
{
	/* A racy peek first: most calls find nothing new and take no lock. A
	 * deferred fork snapshot sends the stacks with it. */
	if (state_now() != EMIT_LIVE || hl_stack_next_id() <= hl_emit_stacks_sent ||
	    !hl_process_is_owner())
		return;
	int saved = errno;
	hl_lock(&hl_emit_write_lock);
	hl_emit_send_definitions_locked();
	hl_unlock(&hl_emit_write_lock);
	errno = saved;
}

void hl_emit_count_dropped(uint64_t n)
{
	atomic_fetch_add_explicit(&hl_emit_dropped_count, n, memory_order_relaxed);
}

/* Everything a batch may name, and the DROPPED count, put into the scratch
 * buffer: the batch's own send carries them (a short process's eight
 * modules, its stacks and its first batch went out in ten writes, each
 * waking the reporter; now in one). A vfork child's would be its parent's
 * records, marked sent and never sent. */
bool hl_emit_put_definitions_locked(void)
{
	hl_assert_held(&hl_emit_write_lock);
	return hl_process_is_owner() && hl_modules_put_locked() && put_stacks_locked() &&
	       put_dropped_locked();
}

bool hl_emit_send_definitions_locked(void)
{
	return hl_emit_put_definitions_locked() && hl_emit_scratch_flush_locked();
}

/* ---- connection ------------------------------------------------------------- */

/* /proc/self/cmdline into buf: NUL-terminated strings; returns bytes and
 * sets *argc. Truncated at a string boundary if longer than the buffer. */
static uint32_t read_cmdline(char *buf, uint32_t cap, uint32_t *argc)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	uint32_t used = 0;
	ssize_t n = 1;
	while (fd >= 0 && used < cap && n > 0) {
		n = read(fd, buf + used, cap - used);
		if (n > 0)
			used += (uint32_t)n;
	}
	if (fd >= 0)
		close(fd);
	while (used > 0 && buf[used - 1] != '\0')
		used--; /* drop a cut-off last string */
	*argc = 0;
	for (uint32_t i = 0; i < used; i++)
		*argc += buf[i] == '\0';
	return used;
}

static uint64_t run_id_from_env(void)
{
	const char *s = getenv(HL_ENV_RUN_ID);
	uint64_t v = 0;
	while (s && *s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	return v;
}

/* HELLO in scratch: header, exe path, argv strings, padding. */
static bool send_hello_locked(uint32_t origin, uint32_t ppid)
{
	hl_assert_held(&hl_emit_write_lock);
	const char *exe = hl_modules_exe_path();
	uint32_t exe_len = (uint32_t)strlen(exe) + 1, argc;
	struct hl_rec_hello *hello = (void *)hl_emit_scratch;
	char *text = (char *)(hello + 1);
	memcpy(text, exe, exe_len);
	uint32_t argv_len = read_cmdline(text + exe_len,
					 SCRATCH_BYTES - sizeof(*hello) - exe_len - 8 -
						 sizeof(struct hl_rec_options), &argc);
	/* The test's name, set by the runner, names the process under a daemon. */
	const char *test = hl_env_get(HL_ENV_TEST_NAME);
	uint32_t test_len = test && *test ? (uint32_t)strnlen(test, HL_WIRE_MAX_TEST_NAME - 1) + 1 : 0;
	if (sizeof(*hello) + exe_len + argv_len + test_len + 8 + sizeof(struct hl_rec_options) >
	    SCRATCH_BYTES)
		test_len = 0;
	if (test_len) {
		memcpy(text + exe_len + argv_len, test, test_len - 1);
		text[exe_len + argv_len + test_len - 1] = 0;
	}
	uint32_t len = hl_wire_padded((uint32_t)sizeof(*hello) + exe_len + argv_len + test_len);
	memset(text + exe_len + argv_len + test_len, 0,
	       len - sizeof(*hello) - exe_len - argv_len - test_len);
	/* The shared buffers' memfd goes with HELLO; ours is closed at once. */
	int area_fd = !state_page_locked() ? -1 :
		hl_shared_fd_take(sizeof(struct emit_buffer),
				  (uint32_t)offsetof(struct emit_buffer, data), BUFFER_BYTES,
				  (uint32_t)offsetof(struct emit_buffer, delta));
	bool tally = area_fd >= 0 && hl_tally_begin(origin);
	*hello = (struct hl_rec_hello){
		.h = hl_wire_hdr(HL_REC_HELLO, 0, len),
		.pid = (uint32_t)getpid(),
		.ppid = ppid,
		.start_realtime_ns = clock_ns(CLOCK_REALTIME),
		.run_id = run_id_from_env(),
		.origin = origin,
		.argc = argc,
		.exe_len = exe_len,
		.argv_len = argv_len,
		.stack_depth = hl_options.stack_depth,
		.pointer_bytes = sizeof(void *),
		.hook_flags = (hl_options.stack_depth ? HL_HOOK_STACKS : 0) | HL_TICKS_FLAGS |
			      (origin == HL_ORIGIN_FORK ? HL_HOOK_FORK_SNAPSHOT : 0) |
			      (tally ? HL_HOOK_TALLY : 0),
		.test_len = test_len,
	};
	/* OPTIONS rides in the same write, so the reporter knows them before
	 * it can report anything of this process. */
	struct hl_rec_options *options = (void *)(hl_emit_scratch + len);
	*options = (struct hl_rec_options){
		.h = hl_wire_hdr(HL_REC_OPTIONS, 0, sizeof(*options)),
		.given = hl_options_given & (1ull << HL_OPTION_INDEX_max_leaks) ?
				 HL_OPTIONS_MAX_LEAKS : 0,
		.max_leaks = hl_options.max_leaks,
	};
	len += (uint32_t)sizeof(*options);
	hl_emit_records_total = 2;
	hl_emit_scratch_used = 0;
	struct iovec iov = { hl_emit_scratch, len };
	bool ok = send_iov_fd_locked(&iov, 1, area_fd);
	if (!ok)
		hl_tally_stop();
	if (area_fd >= 0) {
		int saved = errno;
		close(area_fd);
		errno = saved;
	}
	return ok;
}

/* A fresh connection on `fd`: nothing was sent on it yet. */
static bool start_locked(int fd, uint32_t origin, uint32_t ppid)
{
	hl_assert_held(&hl_emit_write_lock);
	if (!hl_fd_keep(&hl_emit_sock, fd))
		return false;
	hl_emit_state_swap_locked(EMIT_LIVE);
	hl_track_frees_set(true); /* a reporter now keeps the live set */
	hl_emit_batch_sequence = 0;
	hl_emit_stacks_sent = 1;
	atomic_store(&hl_emit_dropped_count, 0);
	dropped_sent = 0;
	lost_stacks_sent = hl_stack_lost(); /* a fork child's: from here on */
	hl_modules_reset_sent_locked();
	return send_hello_locked(origin, ppid);
}

bool hl_emit_connect_fd(int fd, uint32_t origin, uint32_t ppid)
{
	/* Room for several threads' batches in flight: with the default
	 * (208 KiB, one 128 KiB batch) a thread whose batch found the socket
	 * full waited for the reporter holding write_lock, and every other
	 * thread that had to send waited behind it (8 threads passing blocks
	 * under --checks full: 98 such waits, 8 after; 5-9% less CPU). The
	 * kernel caps it at net.core.wmem_max. */
	int sndbuf = SOCKET_BUFFER_BYTES;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	hl_lock(&hl_emit_write_lock);
	bool ok = start_locked(fd, origin, ppid);
	hl_unlock(&hl_emit_write_lock);
	return ok;
}

bool hl_emit_peer_trusted(uint32_t peer_uid, uint32_t own_uid)
{
	return peer_uid == own_uid || peer_uid == 0;
}

/* connect() without blocking for long: a reporter whose backlog is full
 * (it is not accepting: stopped, or at its descriptor limit) makes a
 * non-blocking AF_UNIX connect fail with EAGAIN at once, so it is retried
 * every few ms until wait_ms have passed. 0 or -errno. */
static int connect_bounded(int fd, const struct sockaddr_un *addr)
{
	uint64_t start = hl_os_now_ms();
	for (;;) {
		if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0)
			return 0;
		if (errno == EINPROGRESS) {
			int err = 0;
			socklen_t len = sizeof(err);
			if (!wait_ready(fd, POLLOUT))
				return -ETIMEDOUT;
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
			return -err;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (hl_os_now_ms() - start > hl_options.wait_ms)
			return -ETIMEDOUT;
		struct timespec pause = { 0, 5 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
}

/* Whoever listens must be our user or root: a socket another user bound
 * first would otherwise receive our argv, paths and addresses. */
static bool peer_is_trusted(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return false;
	return hl_emit_peer_trusted(cred.uid, (uint32_t)geteuid());
}

bool hl_emit_connect(const char *path, uint32_t origin, uint32_t ppid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	const char *why = "cannot reach the reporter at " HL_ENV_SOCKET "; standalone";
	if (len >= sizeof(addr.sun_path)) {
		hl_notice("reporter socket path too long; standalone");
		return false;
	}
	memcpy(addr.sun_path, path, len + 1);
	int err, fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = -errno;
		goto out_fail;
	}
	fd = hl_fd_move_high(fd);
	err = connect_bounded(fd, &addr);
	reporter_stuck = err == -ETIMEDOUT;
	if (err == -ETIMEDOUT)
		why = "the reporter at " HL_ENV_SOCKET " is not accepting (wait_ms passed); "
		      "standalone";
	else if (err == 0 && !peer_is_trusted(fd))
		why = "the socket at " HL_ENV_SOCKET " belongs to another user; nothing sent, "
		      "standalone";
	else if (err == 0)
		return hl_emit_connect_fd(fd, origin, ppid);
	close(fd);
out_fail:
	if (err != 0 && err != -ETIMEDOUT) /* say which path and why: refused, missing, denied */
		hl_notice_errno("cannot reach the reporter (" HL_ENV_SOCKET ") at", path, -err,
				"standalone");
	else
		hl_notice(why);
	return false;
}


/* Every buffered event, then EXEC naming path (wire.h): the last record of
 * this image if the exec succeeds. */
void hl_emit_exec(const char *path)
{
	/* The old image's live set, as events would have left it. */
	hl_tally_exec();
	size_t len = strnlen(path ? path : "", HL_WIRE_MAX_PATH - 1) + 1;
	size_t padded = hl_wire_padded((uint32_t)(sizeof(struct hl_rec_exec) + len));
	/* A fork child that execs before anything else sends EXEC alone: the
	 * snapshot stays deferred (its buffer holds only THREAD_START), and
	 * goes out only if the exec fails and the child goes on. */
	bool deferred = state_now() == EMIT_DEFERRED;
	if (!deferred && !hl_emit_is_live())
		return;
	hl_lock(&hl_emit_write_lock);
	if (deferred && state_now() == EMIT_DEFERRED)
		hl_emit_state_swap_locked(EMIT_LIVE); /* for the EXEC record's send */
	else
		deferred = false;
	if (!deferred)
		hl_emit_flush_all_locked();
	struct hl_rec_exec *rec = hl_emit_scratch_reserve_locked(padded);
	if (rec != NULL) {
		hl_emit_records_total++;
		memset(rec, 0, padded);
		unsigned flags = hl_trace_expects_children() ? HL_EXEC_TRACED : 0;
		*rec = (struct hl_rec_exec){ .h = hl_wire_hdr(HL_REC_EXEC, flags, (uint32_t)padded),
					     .path_len = (uint32_t)len };
		memcpy(rec + 1, path ? path : "", len - 1);
	}
	hl_emit_scratch_flush_locked();
	if (deferred && state_now() == EMIT_LIVE)
		hl_emit_state_swap_locked(EMIT_DEFERRED);
	hl_unlock(&hl_emit_write_lock);
}


/* ---- fork ------------------------------------------------------------------- */

void hl_emit_fork_prepare(void)
{
	/* write_lock is held across fork so the child finds the buffer list
	 * and the scratch buffer consistent. The child does not depend on the
	 * parent's stream: it sends its own heap (HL_HOOK_FORK_SNAPSHOT, see
	 * hl_emit_fork_child); other threads keep appending to their buffers
	 * until fork, and those events reach the reporter on the parent's
	 * connection only. Flushing here just sends the parent's committed
	 * events before the child's HELLO. */
	hl_lock(&hl_emit_write_lock);
	if (state_now() == EMIT_LIVE) /* a deferred snapshot: nothing is buffered */
		hl_emit_flush_all_locked();
}

void hl_emit_fork_parent(void)
{
	hl_unlock(&hl_emit_write_lock);
}

void hl_emit_fork_record(pid_t child)
{
	struct hl_rec_fork rec = { .h = hl_wire_hdr(HL_REC_FORK, 0, sizeof(rec)),
				   .child_pid = (uint32_t)child, .ticks = hl_ticks() };
	hl_emit_record(&rec, sizeof(rec));
}

/* SPAWN (wire.h): the path's last bytes when it is longer than a packed
 * record holds, as its end names the program. Packed into this thread's
 * buffer, also from a vfork child, whose buffer is its parent's thread's
 * (the parent, suspended until the exec, sends it later); not when that
 * thread has no buffer yet, as one made here would carry the child's tid. */
void hl_emit_spawn(pid_t child, const char *path, unsigned flags)
{
	struct {
		struct hl_rec_spawn rec;
		char path[HL_PACK_MAX_RECORD - sizeof(struct hl_rec_spawn)];
	} s;
	size_t len = strlen(path ? path : "");
	const char *from = path ? path : "";
	if (!hl_emit_is_live() || child <= 0 || !hl_trace_expects_children() ||
	    (!hl_process_is_owner() && hl_emit_tls_buffer == NULL))
		return;
	if (len >= sizeof(s.path)) {
		from += len - (sizeof(s.path) - 1);
		len = sizeof(s.path) - 1;
	}
	memcpy(s.path, from, len);
	memset(s.path + len, 0, sizeof(s.path) - len);
	uint32_t bytes = hl_wire_padded((uint32_t)(sizeof(s.rec) + len + 1));
	s.rec = (struct hl_rec_spawn){ .h = hl_wire_hdr(HL_REC_SPAWN, flags, bytes),
				       .child_pid = (uint32_t)child,
				       .path_len = (uint32_t)len + 1, .ticks = hl_ticks() };
	hl_emit_record(&s, bytes);
}

/* Only this thread exists now: other threads' buffers are forgotten, the
 * parent's connection is closed without a byte written to it, and this
 * thread's unflushed events (the parent's) are dropped. */
void hl_emit_fork_child(void)
{
	/* Held since prepare, and this thread is the only one: kept while the
	 * buffers are sorted, as the _locked calls below assert. */
	hl_lock_reset(&hl_emit_write_lock);
	hl_lock(&hl_emit_write_lock);
	struct emit_buffer *own = hl_emit_tls_buffer;
	/* First, before a byte is written: the shared buffers are the parent's
	 * pages until the child has its own. */
	if (!hl_shared_fork_child(own))
		own = hl_emit_tls_buffer = NULL; /* still the parent's: left alone */
	for (struct emit_buffer *b = hl_emit_buffers, *next; b; b = next) {
		next = b->next;
		if (b != own)
			hl_emit_buffer_free_locked(b);
	}
	hl_emit_buffers = NULL;
	atomic_store_explicit(&hl_emit_threaded, false, memory_order_relaxed); /* only this thread now */
	if (own) {
		own->next = own->prev = NULL;
		hl_emit_buffers = own;
		hl_emit_buffer_reset(own);
		hl_emit_buffer_start(own, current_tid());
	}
	hl_fd_release(&hl_emit_sock);
	int was = state_mirror; /* the page of state_word reads EMIT_OFF here */
	hl_emit_state_swap_locked(EMIT_OFF);
	hl_unlock(&hl_emit_write_lock);
	const char *path = hl_env_get(HL_ENV_SOCKET);
	/* The child's heap is an exact copy of the parent's at the instant of
	 * fork, blocks other threads were busy with included: it is the
	 * child's starting state (HL_HOOK_FORK_SNAPSHOT), sent before the
	 * child's first record, if any but EXEC comes (hl_emit_fork_resolve).
	 * Until then nothing changes the heap: every allocation and free of
	 * the child's sends an event, which sends the snapshot first. */
	if ((was == EMIT_LIVE || was == EMIT_DEFERRED || (was == EMIT_LOST && !reporter_stuck)) &&
	    path && *path && hl_emit_connect(path, HL_ORIGIN_FORK, (uint32_t)getppid())) {
		struct heapledger_stats stats;
		hl_stats_get(&stats);
		hl_lock(&hl_emit_write_lock);
		if (state_now() == EMIT_LIVE) {
			hl_shared_note_unsent_inherited(stats.in_use_blocks);
			hl_emit_state_swap_locked(EMIT_DEFERRED);
		}
		hl_unlock(&hl_emit_write_lock);
	}
	hl_shared_fd_drop(); /* no HELLO took it: the program's table as it was */
}

bool hl_emit_fork_resolve(const struct hl_snapshot_fix *fix)
{
	/* A vfork or raw clone child cannot send on our connection, and walks
	 * a heap its parent may change: vfork() sends it first (vfork.c). */
	if (!hl_process_is_owner())
		return false;
	int saved = errno;
	bool held = hl_emit_lock_is_held();
	if (!held)
		hl_lock(&hl_emit_write_lock);
	if (state_now() == EMIT_DEFERRED) {
		/* One thread runs: pthread_create sends the snapshot before a
		 * second one starts (threadstart.c). */
		hl_emit_state_swap_locked(EMIT_LIVE);
		hl_guard_enter();
		if (hl_emit_send_definitions_locked())
			hl_emit_send_snapshot_locked(fix);
		hl_guard_leave();
		if (state_now() == EMIT_LIVE)
			hl_shared_note_unsent_inherited(0);
	}
	bool live = state_now() == EMIT_LIVE;
	if (!held)
		hl_unlock(&hl_emit_write_lock);
	errno = saved;
	return live;
}
