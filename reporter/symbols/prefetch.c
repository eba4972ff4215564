/*
 * reporter/symbols/prefetch.c: background symbolization during the run (see
 * prefetch.h).
 */
#define _GNU_SOURCE
#include "prefetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"
#include "table.h"
#include "util.h"

/* Addresses queued at most (a bound on memory for programs with millions of
 * distinct return addresses; what is not queued is symbolized at the end). */
#define PREFETCH_MAX_QUEUED (1u << 20)

struct pf_item {
	const struct hl_module *module; /* a copy owned by the prefetcher */
	uint64_t address;
};

/* What has been looked at in one process. */
struct pf_proc {
	const struct hl_process *p;
	size_t nstacks_seen;
	struct hl_module **modules; /* copies, by index in p->modules */
	size_t nmodules;
};

struct hl_prefetch {
	struct hl_symbolizer *sym;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;                /* under lock */
	bool paused;              /* under lock: the symbolizer is the main thread's */
	bool busy;                /* under lock: the thread is symbolizing an item */
	pthread_cond_t idle;      /* signalled when busy clears while paused */
	/* Module copies of forgotten processes: queued items may still point
	 * at them, so they are freed once the queue is empty (main thread). */
	struct pf_proc *retired;
	size_t nretired, retired_cap;
	struct pf_item *queue;    /* under lock: [head, count) pending */
	size_t head, count, cap;
	size_t queued;            /* ever queued (main thread) */
	size_t done;              /* symbolized (thread; read after join) */
	/* main thread only */
	struct pf_proc *procs;
	size_t nprocs, procs_cap;
	struct hl_map seen;       /* addresses queued once (the keys; values 0) */
};

static void *prefetch_main(void *arg)
{
	struct hl_prefetch *pf = arg;

	pthread_mutex_lock(&pf->lock);
	for (;;) {
		struct pf_item it;
		size_t n;

		while (!pf->stop && (pf->paused || pf->head == pf->count))
			pthread_cond_wait(&pf->wake, &pf->lock);
		if (pf->stop)
			break;
		it = pf->queue[pf->head++];
		pf->busy = true;
		pthread_mutex_unlock(&pf->lock);
		hl_symbolize(pf->sym, it.module, it.address, &n);
		pf->done++;
		pthread_mutex_lock(&pf->lock);
		pf->busy = false;
		if (pf->paused)
			pthread_cond_signal(&pf->idle);
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

struct hl_prefetch *hl_prefetch_start(struct hl_symbolizer *sym)
{
	struct hl_prefetch *pf = hl_xcalloc(1, sizeof(*pf));

	pf->sym = sym;
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->wake, NULL);
	pthread_cond_init(&pf->idle, NULL);
	hl_map_init(&pf->seen);
	if (pthread_create(&pf->thread, NULL, prefetch_main, pf) != 0) {
		pthread_cond_destroy(&pf->wake);
		pthread_cond_destroy(&pf->idle);
		pthread_mutex_destroy(&pf->lock);
		free(pf);
		return NULL;
	}
	return pf;
}

static struct pf_proc *proc_slot(struct hl_prefetch *pf, size_t i,
				 const struct hl_process *p)
{
	if (i == pf->nprocs) {
		hl_grow((void **)&pf->procs, &pf->procs_cap, pf->nprocs, sizeof(*pf->procs));
		memset(&pf->procs[i], 0, sizeof(pf->procs[i]));
		pf->procs[i].p = p;
		pf->nprocs++;
	}
	return pf->procs[i].p == p ? &pf->procs[i] : NULL;
}

/* The prefetcher's copy of p->modules[index] (the array may move). */
static const struct hl_module *module_copy(struct pf_proc *pp, const struct hl_process *p,
					   size_t index)
{
	struct hl_module *copy;

	if (index >= pp->nmodules) {
		pp->modules = hl_xrealloc(pp->modules, p->nmodules * sizeof(*pp->modules));
		memset(pp->modules + pp->nmodules, 0,
		       (p->nmodules - pp->nmodules) * sizeof(*pp->modules));
		pp->nmodules = p->nmodules;
	}
	if (!pp->modules[index]) {
		copy = hl_xmalloc(sizeof(*copy));
		*copy = p->modules[index];
		copy->path = hl_xstrdup(p->modules[index].path);
		pp->modules[index] = copy;
	}
	return pp->modules[index];
}

static void enqueue(struct hl_prefetch *pf, const struct pf_item *items, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&pf->lock);
	if (pf->head == pf->count) {
		pf->head = pf->count = 0;
	} else if (pf->head > pf->cap / 2) {
		memmove(pf->queue, pf->queue + pf->head,
			(pf->count - pf->head) * sizeof(*pf->queue));
		pf->count -= pf->head;
		pf->head = 0;
	}
	if (pf->count + n > pf->cap) {
		pf->cap = (pf->count + n) * 2;
		pf->queue = hl_xrealloc(pf->queue, pf->cap * sizeof(*pf->queue));
	}
	memcpy(pf->queue + pf->count, items, n * sizeof(*items));
	pf->count += n;
	pthread_cond_signal(&pf->wake);
	pthread_mutex_unlock(&pf->lock);
}

void hl_prefetch_scan(struct hl_prefetch *pf, const struct hl_run *run)
{
	struct pf_item *items = NULL;
	size_t nitems = 0, cap = 0;

	if (!pf)
		return;
	for (size_t i = 0; i < run->nprocs && i <= pf->nprocs; i++) {
		const struct hl_process *p = run->procs[i];
		struct pf_proc *pp = proc_slot(pf, i, p);

		if (!pp)
			break; /* the list changed under us: stop prefetching */
		for (; pp->nstacks_seen < p->nstacks; pp->nstacks_seen++) {
			const struct hl_process_stack *s = &p->stacks[pp->nstacks_seen];

			for (uint32_t f = 0; f < s->depth; f++) {
				uint64_t a = s->frames[f];
				const struct hl_module *m;

				if (!a || pf->queued >= PREFETCH_MAX_QUEUED ||
				    hl_map_find(&pf->seen, a))
					continue;
				/* As the report will look it up (the stack's seq
				 * fixes which modules were loaded). */
				m = hl_process_module_for(p, a, s->seq);
				if (!m)
					continue;
				hl_map_insert(&pf->seen, a, 0);
				hl_grow((void **)&items, &cap, nitems, sizeof(*items));
				items[nitems].module =
					module_copy(pp, p, (size_t)(m - p->modules));
				items[nitems].address = a;
				nitems++;
				pf->queued++;
			}
		}
	}
	enqueue(pf, items, nitems);
	free(items);
}

static void pf_proc_free(struct pf_proc *pp)
{
	for (size_t j = 0; j < pp->nmodules; j++) {
		if (pp->modules[j]) {
			free(pp->modules[j]->path);
			free(pp->modules[j]);
		}
	}
	free(pp->modules);
}

void hl_prefetch_pause(struct hl_prefetch *pf)
{
	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->paused = true;
	while (pf->busy)
		pthread_cond_wait(&pf->idle, &pf->lock);
	if (pf->head == pf->count) {
		for (size_t i = 0; i < pf->nretired; i++)
			pf_proc_free(&pf->retired[i]);
		pf->nretired = 0;
	}
	pthread_mutex_unlock(&pf->lock);
}

void hl_prefetch_resume(struct hl_prefetch *pf)
{
	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->paused = false;
	pthread_cond_signal(&pf->wake);
	pthread_mutex_unlock(&pf->lock);
}

void hl_prefetch_forget(struct hl_prefetch *pf, const struct hl_process *p)
{
	if (!pf)
		return;
	for (size_t i = 0; i < pf->nprocs; i++) {
		if (pf->procs[i].p != p)
			continue;
		hl_grow((void **)&pf->retired, &pf->retired_cap, pf->nretired,
			sizeof(*pf->retired));
		pf->retired[pf->nretired++] = pf->procs[i];
		memmove(&pf->procs[i], &pf->procs[i + 1],
			(pf->nprocs - i - 1) * sizeof(*pf->procs));
		pf->nprocs--;
		return;
	}
}

size_t hl_prefetch_stop(struct hl_prefetch *pf)
{
	size_t done;

	if (!pf)
		return 0;
	pthread_mutex_lock(&pf->lock);
	pf->stop = true;
	pthread_cond_signal(&pf->wake);
	pthread_mutex_unlock(&pf->lock);
	pthread_join(pf->thread, NULL);
	done = pf->done;
	for (size_t i = 0; i < pf->nprocs; i++)
		pf_proc_free(&pf->procs[i]);
	for (size_t i = 0; i < pf->nretired; i++)
		pf_proc_free(&pf->retired[i]);
	free(pf->procs);
	free(pf->retired);
	free(pf->queue);
	hl_map_destroy(&pf->seen);
	pthread_cond_destroy(&pf->wake);
	pthread_cond_destroy(&pf->idle);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
	return done;
}
