/*
 * reporter/ingest/listen.c: accept loop and per-connection reads (see listen.h).
 */
#define _GNU_SOURCE
#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

static void drain_pid(void *ctx, uint32_t pid);

static int bind_socket(struct hl_listener *l, const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, 512) < 0)
		goto out_close_fd;
	l->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epoll_fd < 0 || epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		goto out_close_fd;
	l->listen_fd = fd;
	l->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->run->drain = drain_pid;
	l->run->drain_ctx = l;
	return 0;
out_close_fd:
	{
		int err = -errno;

		close(fd);
		if (l->epoll_fd >= 0)
			close(l->epoll_fd);
		l->epoll_fd = -1;
		return err;
	}
}

static void listener_init(struct hl_listener *l, struct hl_run *run)
{
	memset(l, 0, sizeof(*l));
	l->listen_fd = -1;
	l->epoll_fd = -1;
	l->reserve_fd = -1;
	l->run = run;
	l->growth_max = HL_CONN_GROWTH_MAX;
}

/* A fresh 0700 directory under base with a socket in it. */
static int open_private_in(struct hl_listener *l, const char *base)
{
	char path[PATH_MAX + 8];
	int err;

	if (snprintf(l->dir, sizeof(l->dir), "%s/heapledger.XXXXXX", base) >= (int)sizeof(l->dir)) {
		l->dir[0] = 0;
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(l->dir)) { /* mkdtemp makes it 0700 */
		l->dir[0] = 0;
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/sock", l->dir);
	err = bind_socket(l, path);
	if (err) {
		rmdir(l->dir);
		l->dir[0] = 0;
	}
	return err;
}

int hl_listen_open_private(struct hl_listener *l, struct hl_run *run)
{
	const char *tmp = getenv("TMPDIR");
	int first, err;

	listener_init(l, run);
	if (!tmp || !*tmp)
		return open_private_in(l, "/tmp");
	first = open_private_in(l, tmp);
	if (!first || !strcmp(tmp, "/tmp"))
		return first;
	/* A stale TMPDIR must not stop the program from running. */
	err = open_private_in(l, "/tmp");
	if (!err)
		hl_log("TMPDIR %s is not usable (%s); the socket is %s", tmp,
		       strerror(-first), l->path);
	return err;
}

/* dir exists (made 0700 if not), is a real directory, ours, and private. */
static int private_dir(const char *dir, char *why, size_t why_len)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(why, why_len, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (lstat(dir, &st) < 0) {
		snprintf(why, why_len, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077)) {
		snprintf(why, why_len, "%s is not a private directory of this user (a"
			 " directory, owned by uid %u, mode 0700); give --socket", dir,
			 (unsigned)getuid());
		return -EPERM;
	}
	return 0;
}

int hl_listen_default_path(char *out, size_t len, char *why, size_t why_len)
{
	const char *runtime = getenv("XDG_RUNTIME_DIR");
	char dir[PATH_MAX];
	int err;

	if (runtime && runtime[0] == '/')
		snprintf(dir, sizeof(dir), "%s/heapledger", runtime);
	else
		snprintf(dir, sizeof(dir), "/tmp/heapledger-%u", (unsigned)getuid());
	err = private_dir(dir, why, why_len);
	if (err)
		return err;
	if (snprintf(out, len, "%s/daemon.sock", dir) >= (int)len) {
		snprintf(why, why_len, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* True if something accepts connections on path. */
static bool socket_is_live(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	live = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
	close(fd);
	return live;
}

int hl_listen_open_path(struct hl_listener *l, struct hl_run *run, const char *path)
{
	struct stat st;

	listener_init(l, run);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (socket_is_live(path))
			return -EADDRINUSE;
		unlink(path);
	}
	return bind_socket(l, path);
}

static bool peer_is_us(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == getuid();
}

/* Out of descriptors (EMFILE/ENFILE): the pending connections would stay
 * in the backlog, the listening socket readable, and the loop would spin.
 * The reserve descriptor is given up to accept each pending connection and
 * close it at once, so its program sees the end of the connection (and
 * reports standalone) instead of waiting. If even that fails, the socket is
 * left out of the poll for a moment. Logged once per episode. Returns true
 * if a connection was taken (there may be more). */
static bool accept_overflow(struct hl_listener *l, int err)
{
	int fd;

	if (!l->at_fd_limit)
		hl_log("at the file descriptor limit (%s) with %zu connections: new"
		       " connections are closed until some end", strerror(err),
		       hl_listen_open_count(l));
	l->at_fd_limit = true;
	if (l->reserve_fd >= 0) {
		close(l->reserve_fd);
		l->reserve_fd = -1;
	}
	fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		l->refused++;
	} else if (errno != EAGAIN && errno != EWOULDBLOCK) {
		epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, l->listen_fd, NULL);
		l->accept_paused_until = hl_now_monotonic_ns() + HL_ACCEPT_PAUSE_NS;
	}
	l->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

static void accept_resume(struct hl_listener *l)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

	if (!l->accept_paused_until || hl_now_monotonic_ns() < l->accept_paused_until)
		return;
	l->accept_paused_until = 0;
	epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, l->listen_fd, &ev);
}

static void accept_all(struct hl_listener *l)
{
	while (!l->accept_paused_until) {
		int fd = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
		struct hl_conn *c;

		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			if (accept_overflow(l, errno))
				continue;
			return;
		}
		if (fd < 0)
			return; /* EAGAIN, or a transient error: next poll */
		if (l->at_fd_limit) {
			hl_log("file descriptors available again; %llu connections were closed"
			       " unread meanwhile", (unsigned long long)l->refused);
			l->at_fd_limit = false;
			l->refused = 0;
		}
		if (!peer_is_us(fd)) {
			hl_log("connection refused: peer is another user");
			close(fd);
			continue;
		}
		c = hl_xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->id = ++l->next_id;
		c->last_read_ns = hl_now_monotonic_ns(); /* buf: allocated on the first read */
		c->progress_ns = c->last_read_ns;
		c->state.run = l->run;
		c->state.shared = &c->shared;
		c->state.decoder = &c->decoder;
		hl_state_decoder_init(&c->decoder, &c->state);
		ev.data.ptr = c;
		if (epoll_ctl(l->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			hl_log("connection %u: epoll: %s", c->id, strerror(errno));
			close(fd);
			free(c);
			continue;
		}
		hl_grow((void **)&l->conns, &l->conns_cap, l->nconns, sizeof(c));
		l->conns[l->nconns++] = c;
	}
}

static uint64_t beyond_min(size_t cap)
{
	return cap > HL_CONN_BUFFER_MIN ? cap - HL_CONN_BUFFER_MIN : 0;
}

/* Resizes (0: frees) c's buffer, keeping l->grown in step. */
static void conn_set_buffer(struct hl_listener *l, struct hl_conn *c, size_t cap)
{
	l->grown = l->grown - beyond_min(c->cap) + beyond_min(cap);
	if (l->grown > l->grown_peak)
		l->grown_peak = l->grown;
	if (cap <= HL_CONN_BUFFER_MIN && c->overdraft) {
		c->overdraft = false; /* its growth is back: others may grow again */
		l->overdraft = NULL;
	}
	if (!cap) {
		free(c->buf);
		c->buf = NULL;
	} else {
		c->buf = hl_xrealloc(c->buf, cap);
	}
	c->cap = cap;
}

/* The buffer size c needs before its next read: HL_CONN_BUFFER_MIN if it
 * has none, what it has while that has room, else (a record fills it) the
 * first doubling that holds the whole record: its header, at the start of
 * the buffer, was checked by the decoder (length within the maximum). A
 * connection asks for all the room its record needs at once, so one that
 * waits for room holds none of it (grown part way, waiting connections
 * held all the room between them: 466 of 600 slow peers did, and a real
 * program behind them waited out its hook's wait_ms). */
static size_t conn_wants(const struct hl_conn *c)
{
	const struct hl_wire_header *first = (const void *)c->buf;
	size_t want;

	if (!c->buf)
		return HL_CONN_BUFFER_MIN;
	if (c->fill < c->cap || c->cap >= HL_CONN_BUFFER)
		return c->cap;
	want = c->cap * 2;
	while (want < first->length && want < HL_CONN_BUFFER)
		want *= 2;
	return want < HL_CONN_BUFFER ? want : HL_CONN_BUFFER;
}

static bool conn_fits(const struct hl_listener *l, const struct hl_conn *c, size_t want)
{
	return beyond_min(want) <= beyond_min(c->cap) ||
	       l->grown - beyond_min(c->cap) + beyond_min(want) <= l->growth_max;
}

/* Keeps only what an unfinished record needs. */
static void conn_trim(struct hl_listener *l, struct hl_conn *c)
{
	if (!c->fill)
		conn_set_buffer(l, c, 0);
	else if (c->cap > HL_CONN_BUFFER_MIN && c->fill <= HL_CONN_BUFFER_MIN)
		conn_set_buffer(l, c, HL_CONN_BUFFER_MIN);
}

/* c's first record, unfinished in its full buffer (its header checked by
 * the decoder), is all in the socket already: read past the cap, it is
 * finished within the same read and the room given back. A hook writes
 * each batch whole, so a busy program's batches are; a peer that trickles
 * a record never is. */
static bool conn_record_queued(const struct hl_conn *c)
{
	const struct hl_wire_header *first = (const void *)c->buf;
	int queued;

	return c->fill >= sizeof(*first) && ioctl(c->fd, FIONREAD, &queued) == 0 &&
	       queued >= 0 && (size_t)queued >= first->length - c->fill;
}

/* Bytes to ask of c's socket: the rest of its record only while it is read
 * past the cap for it (conn_record_queued), so no more is held there. */
static size_t conn_read_room(const struct hl_conn *c)
{
	const struct hl_wire_header *first = (const void *)c->buf;

	if (c->lent && c->fill >= sizeof(*first) && first->length > c->fill)
		return first->length - c->fill;
	return c->cap - c->fill;
}

/* Back-pressure: c is not read until buffer room frees (resume_paused).
 * Its peer's hangup is still watched: paused connections can hold the
 * whole budget between them, and one whose peer has gone must then be read
 * to its end and let go, or none would ever be read again. */
static void conn_pause(struct hl_listener *l, struct hl_conn *c)
{
	struct epoll_event ev = { .events = EPOLLRDHUP, .data.ptr = c };

	epoll_ctl(l->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
	c->paused = true;
	if (!l->npaused++ && !l->paused_episode)
		hl_log("connection buffers at their cap (%llu KiB beyond %u KiB each): a"
		       " connection sending a larger record waits, unread, until others"
		       " finish theirs", (unsigned long long)(l->growth_max >> 10),
		       HL_CONN_BUFFER_MIN >> 10);
	l->paused_episode++;
}

/* Why the hook of p went on standalone when its stream ended without EXIT:
 * a reason the reporter gave already (conn_cut); what the hook stored in
 * the shared area; else, when the reporter itself ends a connection whose
 * process runs on (it stops, or drops the connection), the connection is
 * lost to the hook, which finds out at its next send and stores it too
 * late for us. */
static uint32_t standalone_why(const struct hl_listener *l, const struct hl_conn *c,
			       const char *why, bool ran_on)
{
	uint32_t stored = hl_recover_standalone(&c->shared);

	if (c->state.proc->standalone != HL_STANDALONE_NONE)
		return c->state.proc->standalone;
	if (stored == HL_STANDALONE_NONE && ran_on && (why || l->closing))
		return HL_STANDALONE_LOST;
	return stored;
}

static void conn_end(struct hl_listener *l, struct hl_conn *c, const char *why)
{
	struct hl_process *p = c->state.proc;

	/* Ended without EXIT: what its threads had committed and not sent. */
	if (p && !p->has_exit) {
		/* asked before the area is read (hl_process_standalone) */
		bool ran_on = !p->exec_pending && hl_process_runs_on(p);

		if (!why) {
			p->shared_buffers = c->shared.base != NULL;
			/* The stacks its threads' unsent events name may never
			 * have been sent either: the hook logs them as it
			 * interns them (tally.h's stack log). */
			hl_recover_tally_stacks(&c->shared, &c->decoder);
			p->recovered_events = hl_recover_feed(&c->shared, &c->decoder, p);
			hl_state_tally_end(&c->state, &c->decoder);
			/* A fork child killed before it sent what it inherited
			 * (an image that exec replaced leaked nothing). */
			if (!p->exec_pending)
				hl_process_count_dropped(p, hl_recover_unsent_inherited(&c->shared));
			if (!hl_recover_ending(&c->shared, &p->hook_ending))
				p->hook_ending.ended = 0;
		}
		hl_process_standalone(p, ran_on, standalone_why(l, c, why, ran_on));
	}
	hl_recover_release(&c->shared);
	epoll_ctl(l->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->dead = true;
	/* Said once it is done: whoever reads the line finds it closed. */
	if (why)
		hl_log("connection %u (pid %u): dropped: %s", c->id,
		       c->decoder.pid, why);
	else if (c->fill)
		hl_log("connection %u (pid %u): ended inside a record (%zu bytes left)",
		       c->id, c->decoder.pid, c->fill);
	hl_decode_destroy(&c->decoder);
	conn_set_buffer(l, c, 0);
	if (c->paused) {
		c->paused = false;
		l->npaused--;
	}
	if (p)
		hl_process_closed(p);
}

/* Reads c until EAGAIN; `force` (a fork parent's records before its
 * child's HELLO, the final reads) grows the buffer past the cap. */
static int conn_pump(struct hl_listener *l, struct hl_conn *c, bool force)
{
	for (;;) {
		size_t want;
		ssize_t n;
		long used;

		if (c->dead)
			return -1;
		want = conn_wants(c);
		if (want != c->cap) {
			if (!force && !c->overdraft && !conn_fits(l, c, want)) {
				if (!conn_record_queued(c)) {
					if (!c->paused)
						conn_pause(l, c);
					return 0;
				}
				c->lent = true;
				l->lent++;
			}
			conn_set_buffer(l, c, want);
		}
		n = hl_recover_read(c->fd, c->buf + c->fill, conn_read_room(c), &c->shared);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			conn_trim(l, c);
			return 0;
		}
		if (n <= 0) {
			conn_end(l, c, n < 0 ? strerror(errno) : NULL);
			return -1;
		}
		l->bytes += (size_t)n;
		c->last_read_ns = hl_now_monotonic_ns();
		c->fill += (size_t)n;
		used = hl_decode_feed(&c->decoder, c->buf, c->fill);
		if (used < 0) {
			conn_end(l, c, c->decoder.error);
			return -1;
		}
		if (used > 0)
			c->progress_ns = c->last_read_ns;
		c->fill -= (size_t)used;
		memmove(c->buf, c->buf + used, c->fill);
		if (used > 0 && c->lent) {
			c->lent = false; /* its record is done: the room goes back */
			conn_trim(l, c);
		}
	}
}

int hl_conn_pump(struct hl_listener *l, struct hl_conn *c)
{
	return conn_pump(l, c, l->closing);
}

/* Puts c back in the poll set and reads it. */
static void conn_resume(struct hl_listener *l, struct hl_conn *c)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c };

	c->paused = false;
	l->npaused--;
	c->last_read_ns = hl_now_monotonic_ns(); /* it waited for us */
	c->resumed_ns = c->last_read_ns;
	if (epoll_ctl(l->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		conn_end(l, c, "epoll failed after waiting for buffer room");
		return;
	}
	conn_pump(l, c, false);
}

/* True if a connection that is read holds growth: it frees it when its
 * record is done (or the idle timeout closes it). */
static bool growth_held_by_readers(const struct hl_listener *l)
{
	for (size_t i = 0; i < l->nconns; i++) {
		const struct hl_conn *c = l->conns[i];

		if (!c->dead && !c->paused && beyond_min(c->cap))
			return true;
	}
	return false;
}

/* Reads paused connections again, oldest first, while their buffers fit
 * or once the rest of their record has come (conn_record_queued: read past
 * the cap for it). If the connections that wait hold all the growth between them (each grew
 * part way, none fits its next step), none of them would ever be read
 * again, live peers included: the oldest is then read past the cap, alone,
 * until its buffer is back to HL_CONN_BUFFER_MIN, so one always progresses
 * (the cap is exceeded by at most one HL_CONN_BUFFER). Being read again,
 * it is subject to the idle timeout like any other. */
static void resume_paused(struct hl_listener *l)
{
	for (size_t i = 0; i < l->nconns && l->npaused; i++) {
		struct hl_conn *c = l->conns[i];

		/* the rest of its record may have come since it paused */
		if (c->paused && !c->dead &&
		    (conn_fits(l, c, conn_wants(c)) || conn_record_queued(c)))
			conn_resume(l, c);
	}
	if (!l->npaused || l->overdraft || growth_held_by_readers(l))
		return;
	for (size_t i = 0; i < l->nconns; i++) {
		struct hl_conn *c = l->conns[i];

		if (c->paused && !c->dead) {
			c->overdraft = true;
			l->overdraft = c;
			l->overdrafts++;
			conn_resume(l, c);
			return;
		}
	}
}

/* An episode at the cap ends when no connection waits any more, however
 * the last one stopped waiting (resumed, or its peer gone): said once, so
 * the next time the cap is reached is said again. */
static void end_pause_episode(struct hl_listener *l)
{
	char cut[160] = "";

	if (l->npaused || !l->paused_episode)
		return;
	if (l->episode_cut)
		snprintf(cut, sizeof(cut), "; %llu connections were cut for holding room"
			 " without finishing a record (--stall-timeout-ms)",
			 (unsigned long long)l->episode_cut);
	if (l->overdrafts)
		hl_log("connection buffers below their cap again: %llu times a connection"
		       " waited for room, %llu times one was read past the cap because"
		       " the waiting ones held all of it%s", (unsigned long long)l->paused_episode,
		       (unsigned long long)l->overdrafts, cut);
	else
		hl_log("connection buffers below their cap again: %llu times a connection"
		       " waited for room%s", (unsigned long long)l->paused_episode, cut);
	l->paused_episode = 0;
	l->overdrafts = 0;
	l->episode_cut = 0;
}

/* Since when c has had to finish a record: its last one, or its being read
 * again after it waited for us. */
static uint64_t conn_owes_since(const struct hl_conn *c)
{
	return c->progress_ns > c->resumed_ns ? c->progress_ns : c->resumed_ns;
}

static void conn_cut(struct hl_listener *l, struct hl_conn *c)
{
	char why[320];

	snprintf(why, sizeof(why), "cut: it held %zu KiB of read buffer inside a record"
		 " (%zu bytes of it read) and completed no record for %llu ms while others"
		 " waited for room (%zu waiting; --stall-timeout-ms)", c->cap >> 10, c->fill,
		 (unsigned long long)(l->stall_timeout_ns / 1000000), l->npaused);
	if (c->state.proc)
		c->state.proc->standalone = HL_STANDALONE_CUT;
	l->stall_cut++;
	l->episode_cut++;
	conn_end(l, c, why);
}

/* Fair share (listen.h): while others wait for room, a connection that
 * holds room for an unfinished record and finished none for the stall
 * timeout is cut. (Out of a read, room beyond HL_CONN_BUFFER_MIN is only
 * ever held for bytes of an unfinished record: conn_trim.) */
static void check_stalls(struct hl_listener *l)
{
	uint64_t now;

	if (!l->stall_timeout_ns)
		return;
	now = hl_now_monotonic_ns();
	if (now < l->next_stall_check)
		return;
	l->next_stall_check = now + l->stall_timeout_ns / 4;
	for (size_t i = 0; i < l->nconns && l->npaused; i++) {
		struct hl_conn *c = l->conns[i];

		if (!c->dead && !c->paused && beyond_min(c->cap) &&
		    now - conn_owes_since(c) >= l->stall_timeout_ns)
			conn_cut(l, c);
	}
}

/* Closes connections stuck inside a record, or silent before their HELLO,
 * for the idle timeout (listen.h). Paused ones wait for us, not the peer. */
static void close_idle(struct hl_listener *l)
{
	uint64_t now = hl_now_monotonic_ns();
	char why[160];

	if (!l->idle_timeout_ns || now < l->next_idle_check)
		return;
	l->next_idle_check = now + l->idle_timeout_ns / 4;
	for (size_t i = 0; i < l->nconns; i++) {
		struct hl_conn *c = l->conns[i];

		if (c->dead || c->paused || now - c->last_read_ns < l->idle_timeout_ns)
			continue;
		if (c->fill)
			snprintf(why, sizeof(why), "no data for %llu ms inside a record (%zu bytes"
				 " of it read)", (unsigned long long)(l->idle_timeout_ns / 1000000),
				 c->fill);
		else if (!c->decoder.hello_seen)
			snprintf(why, sizeof(why), "no HELLO within %llu ms",
				 (unsigned long long)(l->idle_timeout_ns / 1000000));
		else
			continue; /* idle between records: a program at rest */
		l->idle_dropped++;
		conn_end(l, c, why);
	}
}

static void reap_dead(struct hl_listener *l)
{
	size_t out = 0;

	for (size_t i = 0; i < l->nconns; i++) {
		if (l->conns[i]->dead)
			free(l->conns[i]);
		else
			l->conns[out++] = l->conns[i];
	}
	l->nconns = out;
}

static void drain_pid(void *ctx, uint32_t pid)
{
	struct hl_listener *l = ctx;

	for (size_t i = 0; i < l->nconns; i++) {
		struct hl_conn *c = l->conns[i];

		if (!c->dead && c->state.proc && c->state.proc->pid == pid)
			conn_pump(l, c, true);
	}
}

int hl_listen_poll(struct hl_listener *l, int timeout_ms)
{
	struct epoll_event events[64];
	int n = epoll_wait(l->epoll_fd, events, HL_ARRAY_SIZE(events), timeout_ms);

	if (n < 0)
		return -errno;
	accept_resume(l);
	for (int i = 0; i < n; i++) {
		struct hl_conn *c = events[i].data.ptr;

		if (!c)
			accept_all(l);
		else /* a paused connection reports only its peer's hangup:
		      * what is left is read past the cap, once, to its end */
			conn_pump(l, c, l->closing || c->paused);
	}
	check_stalls(l);
	if (l->npaused)
		resume_paused(l);
	close_idle(l);
	end_pause_episode(l);
	reap_dead(l);
	return 0;
}

size_t hl_listen_open_count(const struct hl_listener *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->nconns; i++)
		n += !l->conns[i]->dead;
	return n;
}

void hl_listen_close(struct hl_listener *l)
{
	l->closing = true;
	for (size_t i = 0; i < l->nconns; i++) {
		if (!l->conns[i]->dead) {
			hl_conn_pump(l, l->conns[i]);
			if (!l->conns[i]->dead)
				conn_end(l, l->conns[i], NULL);
		}
	}
	reap_dead(l);
	free(l->conns);
	l->conns = NULL;
	if (l->listen_fd >= 0) {
		close(l->listen_fd);
		unlink(l->path);
	}
	if (l->epoll_fd >= 0)
		close(l->epoll_fd);
	if (l->reserve_fd >= 0)
		close(l->reserve_fd);
	l->reserve_fd = -1;
	if (l->dir[0])
		rmdir(l->dir);
	l->listen_fd = l->epoll_fd = -1;
	if (l->run->drain_ctx == l)
		l->run->drain = NULL;
}
