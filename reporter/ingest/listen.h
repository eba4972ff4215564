/*
 * reporter/ingest/listen.h: the reporter's socket: accepts any number of hook
 * connections, reads them as data arrives (epoll, non-blocking), and feeds
 * each through its own decoder into the run's state.
 *
 * Each connection owns a read buffer that always starts at a record
 * boundary, so records (multiples of 8 bytes) stay 8-aligned for the
 * decoder; a record split across reads waits in the buffer for its tail.
 * A connection whose peer is another user (SO_PEERCRED) or that breaks the
 * protocol is closed with one log line; the others carry on.
 */
#ifndef HL_REPORTER_LISTEN_H
#define HL_REPORTER_LISTEN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "recover.h"
#include "state.h"

struct hl_conn {
	int fd;
	uint32_t id;               /* connection number, for log lines */
	uint8_t *buf;              /* unparsed bytes, starting at a record */
	size_t fill;               /* bytes in buf */
	size_t cap;                /* bytes allocated; grows for big records */
	struct hl_decoder decoder;
	struct hl_conn_state state; /* the process this connection reports */
	struct hl_shared_view shared; /* its hook's event buffers (recover.h) */
	bool paused;               /* out of the epoll set: waits for buffer room */
	bool overdraft;            /* read past the cap (resume_paused in listen.c) */
	bool lent;                 /* read past the cap for a record all in its socket */
	uint64_t last_read_ns;     /* monotonic: accepted, last bytes, or resumed */
	uint64_t progress_ns;      /* monotonic: accepted, or its last record finished */
	uint64_t resumed_ns;       /* monotonic: last read again after waiting, 0: never */
	bool dead;                 /* closed, to be reaped from the list */
};

struct hl_listener {
	int listen_fd;
	int epoll_fd;
	char dir[PATH_MAX];        /* our mkdtemp directory, "" if none */
	char path[PATH_MAX];       /* socket path */
	struct hl_conn **conns;
	size_t nconns, conns_cap;
	uint32_t next_id;
	struct hl_run *run;
	uint64_t bytes;            /* bytes read over all connections */
	int reserve_fd;            /* /dev/null, given up to refuse at the fd limit */
	bool at_fd_limit;          /* accept failed with EMFILE/ENFILE (logged) */
	uint64_t refused;          /* connections closed unread at the limit */
	uint64_t accept_paused_until; /* monotonic ns; 0: accepting */
	uint64_t growth_max;       /* cap on `grown`: HL_CONN_GROWTH_MAX unless set */
	uint64_t grown;            /* bytes of connection buffers beyond HL_CONN_BUFFER_MIN */
	uint64_t grown_peak;
	size_t npaused;            /* connections waiting for buffer room */
	uint64_t paused_episode;   /* connections paused since the cap was last reached */
	struct hl_conn *overdraft; /* the one connection read past the cap, or NULL */
	uint64_t overdrafts;       /* times one was, this episode */
	uint64_t idle_timeout_ns;  /* 0: never; see HL_CONN_IDLE_TIMEOUT_NS */
	uint64_t next_idle_check;  /* monotonic ns */
	uint64_t idle_dropped;     /* connections closed by the idle timeout */
	uint64_t stall_timeout_ns; /* 0: never; see HL_CONN_STALL_TIMEOUT_NS */
	uint64_t next_stall_check; /* monotonic ns */
	uint64_t stall_cut;        /* connections cut by the stall timeout */
	uint64_t episode_cut;      /* of them, this episode at the cap */
	uint64_t lent;             /* records read past the cap, all queued (fair share) */
	bool closing;              /* hl_listen_close: read everything, caps aside */
};
/* Accepting pauses this long when even the reserve descriptor is gone. */
#define HL_ACCEPT_PAUSE_NS 100000000ull

/* The daemon's default socket: $XDG_RUNTIME_DIR/heapledger/daemon.sock, or
 * /tmp/heapledger-UID/daemon.sock without it. The directory is created 0700
 * and must be ours, private and not a symbolic link (another user must not
 * be able to plant a listener there). Returns 0, or -errno with why in
 * `why` (why_len bytes). */
int hl_listen_default_path(char *out, size_t len, char *why, size_t why_len);

/* Creates a fresh 0700 directory (under $TMPDIR or /tmp) with a socket in it. */
int hl_listen_open_private(struct hl_listener *l, struct hl_run *run);
/* Listens on path (its directory must exist). A stale socket file nobody
 * listens on is replaced; a live one is an error (-EADDRINUSE). */
int hl_listen_open_path(struct hl_listener *l, struct hl_run *run, const char *path);
/* Waits up to timeout_ms for activity and handles it. Returns 0, -EINTR when a
 * signal interrupted the wait, or another -errno on failure. */
int hl_listen_poll(struct hl_listener *l, int timeout_ms);
/* Connections still open. */
size_t hl_listen_open_count(const struct hl_listener *l);
/* Closes every connection (ending their processes), the socket and its
 * directory if we made it. */
void hl_listen_close(struct hl_listener *l);

/* Reads and decodes one connection's available bytes until EAGAIN; for
 * tests and the bench. Returns 0, or -1 if the connection ended. */
int hl_conn_pump(struct hl_listener *l, struct hl_conn *c);

/* Buffering. A connection holds a read buffer only while it has bytes of
 * an unfinished record (freed when a read leaves nothing over, so an idle
 * peer costs no buffer): HL_CONN_BUFFER_MIN, grown for a record larger
 * than that up to HL_CONN_BUFFER (the per-connection cap: a maximal record
 * plus a read). What all connections hold beyond HL_CONN_BUFFER_MIN each
 * is capped at HL_CONN_GROWTH_MAX: a connection that needs more waits out
 * of the poll set, unread (back-pressure: the hook's bounded send wait then
 * falls back to a standalone report, as it does for a stopped reporter),
 * and is read again as other connections finish their large records. When
 * the waiting connections hold all that growth between them, the oldest is
 * read past the cap until its record is done, so one always progresses:
 * buffers stay within HL_CONN_GROWTH_MAX plus one HL_CONN_BUFFER. A
 * connection stuck inside a record, or silent before its HELLO, for the
 * idle timeout is closed with a log line (its process is reported with
 * the stream-cut warning); one that is idle between records never is: a
 * traced program may rest for hours.
 *
 * Fair share: a few slow peers must not decide whether honest programs
 * are recorded (held at the cap, a program's hook waits out its wait_ms
 * and goes on standalone: 600 peers trickling large records stopped every
 * program whose batches pass 64 KiB). So:
 *  - a connection asks for all the room its record needs at once
 *    (conn_wants), so one that waits holds none of it;
 *  - a connection whose unfinished record is all in its socket already is
 *    read past the cap for that record alone and gives the room back in
 *    the same read (a hook writes each batch whole, so a busy program's
 *    batches never wait): buffers then stay within the cap plus two
 *    HL_CONN_BUFFER for a moment;
 *  - with a stall timeout, while any connection waits for room, one that
 *    holds room for an unfinished record and has finished no record for
 *    the stall timeout (since it was last read again, if it waited) is
 *    cut: one log line, and its process is reported as cut by the
 *    reporter (HL_STANDALONE_CUT). Progress is a finished record: bytes
 *    trickled into a large one are not. */
#define HL_CONN_BUFFER_MIN (1u << 16)
#define HL_CONN_BUFFER (HL_WIRE_MAX_RECORD + (1u << 18))
#define HL_CONN_GROWTH_MAX (32u << 20) /* the default; the daemon's --buffer-cap-kib */
/* The daemon's default idle timeout (its --idle-timeout-ms); `run` has none. */
#define HL_CONN_IDLE_TIMEOUT_NS 30000000000ull
/* The daemon's default stall timeout (its --stall-timeout-ms): well inside
 * the hook's wait_ms (10 s), so a program kept waiting by stalled holders
 * is read before its hook gives up; a hook writes each record whole, so an
 * honest one is finished as soon as the reporter reads it. `run` has none:
 * its processes are its own program's. */
#define HL_CONN_STALL_TIMEOUT_NS 2000000000ull

#endif /* HL_REPORTER_LISTEN_H */
