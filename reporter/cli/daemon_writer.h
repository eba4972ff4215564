/*
 * reporter/cli/daemon_writer.h: the daemon's reporting thread. The receive loop
 * never waits on the database or on symbols: a process that ended is handed
 * over here (finished and detached from the run), and this thread prints its
 * report and stores it, retrying while another connection holds the
 * database's lock. The queue between them is bounded (processes and bytes of
 * their block tables); a process that does not fit is named in a log line,
 * never dropped silently.
 */
#ifndef HL_REPORTER_DAEMON_WRITER_H
#define HL_REPORTER_DAEMON_WRITER_H

#include "cli.h"
#include "policy.h"

#define HL_WRITER_QUEUE_MAX 1024                /* processes waiting */
#define HL_WRITER_QUEUE_BYTES (512ull << 20)    /* their block tables, about */
/* After stop is asked, a locked database is still retried this long. */
#define HL_WRITER_STOP_GRACE_NS (30ull * 1000000000ull)

struct hl_daemon_writer;

/* Starts the thread; it owns out (symbolizer and store) until stopped, and
 * applies policy (fingerprints, suppressions) to each process. */
struct hl_daemon_writer *hl_daemon_writer_start(struct hl_output *out,
						const struct hl_policy *policy);
/* Hands over p (finished, detached: hl_run_detach); it is freed by the
 * writer, or at once when the queue is full. */
void hl_daemon_writer_submit(struct hl_daemon_writer *w, struct hl_process *p);
/* Reports and stores what is queued (retrying a locked database for at most
 * HL_WRITER_STOP_GRACE_NS), then joins the thread and frees w. */
void hl_daemon_writer_stop(struct hl_daemon_writer *w);

#endif /* HL_REPORTER_DAEMON_WRITER_H */
