/*
 * ui/events.c: server-sent events for a run still being written (a daemon
 * run): GET /api/runs/ID/events is a text/event-stream whose "progress"
 * events say how many processes the run holds and whether it has ended,
 * once at once and then whenever that changes; after the run's end the
 * stream ends. The run page redraws when a process arrives, without
 * asking again and again.
 *
 * A stream that has nothing to say is suspended (libmicrohttpd's
 * suspend/resume), so it holds no server thread; one watcher thread, with
 * its own read-only connection, asks the query layer about each watched
 * run every WATCH_MS and resumes the streams that have news, or a comment
 * every KEEPALIVE_MS (which is also how a closed stream is noticed: a
 * suspended connection's disconnect is not seen until it writes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "events.h"
#include "store_query.h"
#include "util.h"

#define WATCH_MS 250
#define KEEPALIVE_MS 10000

struct stream {
	struct hl_ui_events *ev;
	struct MHD_Connection *c;
	int64_t run_id;
	int64_t processes;      /* as last sent; -1: nothing sent yet */
	bool ended;             /* the run's end was queued: end after it */
	bool suspended;
	bool closing;           /* the server stops: end now */
	int quiet_ms;           /* since the last write */
	char buf[160];
	size_t len, off;
	struct stream *next;
};

struct hl_ui_events {
	char *db;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool stop;
	struct stream *streams;
};

/* Queues what changed since the last event; false if nothing did. */
static bool queue_progress(struct stream *st, int64_t processes, bool ended)
{
	if (st->processes == processes && !ended)
		return false;
	st->len = (size_t)snprintf(st->buf, sizeof(st->buf),
				   "event: progress\ndata: {\"processes\":%lld,\"ended\":%s}\n\n",
				   (long long)processes, ended ? "true" : "false");
	st->off = 0;
	st->processes = processes;
	st->ended = ended;
	return true;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	ssize_t n;

	(void)pos;
	pthread_mutex_lock(&st->ev->lock);
	if (st->off < st->len) {
		n = (ssize_t)(st->len - st->off < max ? st->len - st->off : max);
		memcpy(buf, st->buf + st->off, (size_t)n);
		st->off += (size_t)n;
		st->quiet_ms = 0;
	} else if (st->ended || st->closing) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		st->suspended = true;
		MHD_suspend_connection(st->c);
		n = 0;
	}
	pthread_mutex_unlock(&st->ev->lock);
	return n;
}

static void stream_free(void *cls)
{
	struct stream *st = cls, **p;

	pthread_mutex_lock(&st->ev->lock);
	for (p = &st->ev->streams; *p; p = &(*p)->next) {
		if (*p == st) {
			*p = st->next;
			break;
		}
	}
	pthread_mutex_unlock(&st->ev->lock);
	free(st);
}

/* Streams to resume, collected under the lock and resumed after it (the
 * lock is not held across a call into libmicrohttpd that may wait for its
 * own). A stream taken off "suspended" here is resumed by whoever took it,
 * and cannot go away meanwhile: libmicrohttpd does not close a suspended
 * connection. */
struct wake_list {
	struct MHD_Connection **c;
	size_t n, cap;
};

static void take(struct wake_list *w, struct stream *st)
{
	st->suspended = false;
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 16;
		w->c = hl_xrealloc(w->c, w->cap * sizeof(*w->c));
	}
	w->c[w->n++] = st->c;
}

static void wake(struct wake_list *w)
{
	for (size_t i = 0; i < w->n; i++)
		MHD_resume_connection(w->c[i]);
	w->n = 0;
}

static struct hl_store *open_store(const char *db)
{
	static bool said;
	struct hl_store *store = NULL;
	struct stat st;

	if (stat(db, &st) || st.st_size == 0)
		return NULL;
	if (!hl_store_open_strict_ro(db, &store))
		return store;
	if (!said)
		hl_log("ui: events: %s", hl_store_error(store));
	said = true;
	hl_store_close(store);
	return NULL;
}

static void *watch(void *arg)
{
	struct hl_ui_events *ev = arg;
	struct hl_store *store = NULL;
	struct wake_list w = { 0 };
	struct timespec until;

	pthread_mutex_lock(&ev->lock);
	while (!ev->stop) {
		/* A database no run has written yet is opened once one has. */
		if (!store && ev->streams)
			store = open_store(ev->db);
		for (struct stream *st = ev->streams; st; st = st->next) {
			int64_t processes = 0;
			bool ended = false, news;

			if (!st->suspended)
				continue;
			st->quiet_ms += WATCH_MS;
			if (!store || hl_query_run_progress(store, st->run_id, &processes, &ended))
				news = queue_progress(st, st->processes, true); /* cannot tell: end */
			else
				news = queue_progress(st, processes, ended);
			if (!news && st->quiet_ms >= KEEPALIVE_MS) {
				st->len = (size_t)snprintf(st->buf, sizeof(st->buf), ": still writing\n\n");
				st->off = 0;
				news = true;
			}
			if (news)
				take(&w, st);
		}
		pthread_mutex_unlock(&ev->lock);
		wake(&w);
		pthread_mutex_lock(&ev->lock);
		if (ev->stop)
			break;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += WATCH_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&ev->wake, &ev->lock, &until);
	}
	pthread_mutex_unlock(&ev->lock);
	free(w.c);
	hl_store_close(store);
	return NULL;
}

struct hl_ui_events *hl_ui_events_start(const char *db)
{
	struct hl_ui_events *ev = hl_xcalloc(1, sizeof(*ev));

	ev->db = hl_xstrdup(db);
	pthread_mutex_init(&ev->lock, NULL);
	pthread_cond_init(&ev->wake, NULL);
	if (pthread_create(&ev->thread, NULL, watch, ev)) {
		hl_log("ui: cannot start the events thread: %s", strerror(errno));
		free(ev->db);
		free(ev);
		return NULL;
	}
	return ev;
}

void hl_ui_events_close_all(struct hl_ui_events *ev)
{
	struct wake_list w = { 0 };

	if (!ev)
		return;
	pthread_mutex_lock(&ev->lock);
	ev->stop = true;
	pthread_cond_signal(&ev->wake);
	pthread_mutex_unlock(&ev->lock);
	pthread_join(ev->thread, NULL);
	/* The watcher is gone: every stream still suspended is resumed here,
	 * to end (libmicrohttpd must not stop with one suspended). */
	pthread_mutex_lock(&ev->lock);
	for (struct stream *st = ev->streams; st; st = st->next) {
		st->closing = true;
		if (st->suspended)
			take(&w, st);
	}
	pthread_mutex_unlock(&ev->lock);
	wake(&w);
	free(w.c);
}

void hl_ui_events_free(struct hl_ui_events *ev)
{
	if (!ev)
		return;
	pthread_mutex_destroy(&ev->lock);
	pthread_cond_destroy(&ev->wake);
	free(ev->db);
	free(ev);
}

struct MHD_Response *hl_ui_events_stream(struct hl_ui_events *ev, struct hl_store *store,
					 struct MHD_Connection *c, int64_t run_id, int *status,
					 char *error, size_t error_len)
{
	struct stream *st;
	struct MHD_Response *r;
	int64_t processes;
	bool ended;
	int err = hl_query_run_progress(store, run_id, &processes, &ended);

	if (err) {
		*status = err == -ENOENT ? 404 : 500;
		snprintf(error, error_len, "%s", hl_store_error(store));
		return NULL;
	}
	st = hl_xcalloc(1, sizeof(*st));
	st->ev = ev;
	st->c = c;
	st->run_id = run_id;
	st->processes = -1;
	queue_progress(st, processes, ended);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stream_read, st, stream_free);
	if (!r) {
		free(st);
		*status = 500;
		snprintf(error, error_len, "cannot make the event stream");
		return NULL;
	}
	pthread_mutex_lock(&ev->lock);
	if (ev->stop)
		st->closing = true;
	st->next = ev->streams;
	ev->streams = st;
	pthread_mutex_unlock(&ev->lock);
	*status = 200;
	return r;
}
