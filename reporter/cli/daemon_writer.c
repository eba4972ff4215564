/*
 * reporter/cli/daemon_writer.c: the daemon's reporting thread (see
 * daemon_writer.h). The queue is a ring of process pointers under one mutex;
 * the receive loop only takes the mutex to push.
 */
#define _GNU_SOURCE
#include "daemon_writer.h"
#include "from_live.h"

#include <pthread.h>
#include <stdlib.h>

struct hl_daemon_writer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct hl_output *out;        /* used by the thread only */
	const struct hl_policy *policy;
	struct hl_process *queue[HL_WRITER_QUEUE_MAX]; /* ring */
	size_t head;                  /* oldest entry */
	size_t count;                 /* entries */
	uint64_t bytes;               /* queued processes' estimated size */
	uint64_t dropped;             /* processes that did not fit */
	bool stopping;
};

/* What a finished process holds, roughly: its block table and stacks. */
static uint64_t process_bytes(const struct hl_process *p)
{
	return (uint64_t)p->live.capacity * (sizeof(struct hl_block) + 1) +
	       (uint64_t)p->nstacks * (sizeof(struct hl_process_stack) + 64) + 4096;
}

static void report_and_store(struct hl_daemon_writer *w, struct hl_process *p)
{
	struct hl_output *out = w->out;
	struct hl_report r;

	hl_policy_apply(w->policy, p, out->sym);
	hl_report_init(&r);
	r.mode = "daemon";
	r.view = out->view;
	r.gen_suppressions = hl_policy_gen_suppressions(w->policy);
	hl_report_add_process(&r, p, out->sym, out->max_frames);
	if (!out->quiet)
		hl_output_print(&r);
	hl_report_destroy(&r);
	hl_output_store(out, p);
	hl_process_destroy(p);
}

static void *writer_main(void *arg)
{
	struct hl_daemon_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct hl_process *p;
		uint64_t bytes;

		while (!w->count && !w->stopping)
			pthread_cond_wait(&w->wake, &w->lock);
		if (!w->count)
			break;
		p = w->queue[w->head];
		bytes = process_bytes(p);
		pthread_mutex_unlock(&w->lock);
		report_and_store(w, p);
		pthread_mutex_lock(&w->lock);
		/* Only now: a full queue means the database is behind. */
		w->head = (w->head + 1) % HL_WRITER_QUEUE_MAX;
		w->count--;
		w->bytes -= bytes;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct hl_daemon_writer *hl_daemon_writer_start(struct hl_output *out,
						const struct hl_policy *policy)
{
	struct hl_daemon_writer *w = hl_xcalloc(1, sizeof(*w));

	w->out = out;
	w->policy = policy;
	/* While the daemon runs, a locked database is waited out for as long
	 * as it takes; the queue bounds what waits meanwhile. */
	__atomic_store_n(&out->retry_until_ns, UINT64_MAX, __ATOMIC_RELAXED);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
		hl_log("daemon: cannot start the reporting thread");
		abort();
	}
	return w;
}

void hl_daemon_writer_submit(struct hl_daemon_writer *w, struct hl_process *p)
{
	uint64_t bytes = process_bytes(p);
	size_t waiting;

	pthread_mutex_lock(&w->lock);
	waiting = w->count;
	if (waiting < HL_WRITER_QUEUE_MAX &&
	    (waiting == 0 || w->bytes + bytes <= HL_WRITER_QUEUE_BYTES)) {
		w->queue[(w->head + w->count) % HL_WRITER_QUEUE_MAX] = p;
		w->count++;
		w->bytes += bytes;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
		return;
	}
	w->dropped++;
	pthread_mutex_unlock(&w->lock);
	hl_log("daemon: process %u (%s) was neither reported nor stored: %zu processes"
	       " are still waiting for the database (%s)", p->pid, p->exe, waiting,
	       w->out->db_path ? w->out->db_path : "no database");
	hl_process_destroy(p);
}

void hl_daemon_writer_stop(struct hl_daemon_writer *w)
{
	__atomic_store_n(&w->out->retry_until_ns,
			 hl_now_monotonic_ns() + HL_WRITER_STOP_GRACE_NS, __ATOMIC_RELAXED);
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	if (w->dropped)
		hl_log("daemon: %llu processes were neither reported nor stored (the"
		       " database was too far behind)", (unsigned long long)w->dropped);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	free(w);
}
