/*
 * reporter/ingest/lifecycle.c: a process's birth in the reporter's state:
 * HELLO makes a new image, a fork child starts with a copy of its parent's
 * stacks, modules and live blocks (the blocks marked inherited, entering
 * the child's table at ticks 0), an exec image follows its predecessor.
 * Records after HELLO are state.c's; the end of a process is finish.c's.
 */
#include "state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "state_int.h"

/* ---- notes of children, from either side ---------------------------------- */

static void add_note(struct hl_run *run, enum hl_birth birth, uint32_t ppid, uint32_t pid,
		     const char *exe, bool from_parent)
{
	hl_grow((void **)&run->forks, &run->forks_cap, run->nforks, sizeof(*run->forks));
	run->forks[run->nforks++] = (struct hl_fork_note){
		.ppid = ppid, .pid = pid, .birth = birth, .from_parent = from_parent,
		.realtime_ns = hl_now_realtime_ns(),
		.exe = from_parent && exe ? hl_xstrdup(exe) : NULL,
	};
}

/* Forgets the note of `birth` for (ppid, pid) from the side that is not
 * from_parent's; true if there was one (both sides came). */
static bool forget_side(struct hl_run *run, enum hl_birth birth, uint32_t ppid, uint32_t pid,
			bool from_parent)
{
	for (size_t i = 0; i < run->nforks; i++) {
		struct hl_fork_note *f = &run->forks[i];

		if (f->birth == birth && f->ppid == ppid && f->pid == pid &&
		    f->from_parent != from_parent) {
			free(f->exe); /* both sides came: nothing left to say */
			*f = run->forks[--run->nforks];
			return true;
		}
	}
	return false;
}

/* The child's HELLO came: forgets its parent's note. */
static bool forget_note(struct hl_run *run, enum hl_birth birth, uint32_t ppid, uint32_t pid)
{
	return forget_side(run, birth, ppid, pid, false);
}

/* run->started holds, by ppid << 32 | pid, 1 for a START child whose HELLO
 * came before its parent's SPAWN, 0 once the SPAWN came. */
static uint64_t started_key(uint32_t ppid, uint32_t pid)
{
	return (uint64_t)ppid << 32 | pid;
}

/* A START child said HELLO before its parent's SPAWN told of it. */
static void note_started_hello(struct hl_run *run, uint32_t ppid, uint32_t pid)
{
	bool added = false;

	*hl_map_find_or_insert(&run->started, started_key(ppid, pid), &added) = 1;
}

/* A SPAWN came: did its child say HELLO already? Either way the child's
 * entry is spent. */
static bool spawned_child_came(struct hl_run *run, uint32_t ppid, uint32_t pid)
{
	bool added = false;
	uint64_t *v = hl_map_find_or_insert(&run->started, started_key(ppid, pid), &added);
	bool came = !added && *v == 1;

	*v = 0;
	return came;
}

/* ---- HELLO: new images, forks, execs ------------------------------------ */

static struct hl_process *run_find_pid(struct hl_run *run, uint32_t pid,
				       const struct hl_process *except)
{
	for (size_t i = run->nprocs; i-- > 0;)
		if (run->procs[i]->pid == pid && run->procs[i] != except)
			return run->procs[i];
	return NULL;
}

void hl_state_inherit_from(struct hl_process *child, const struct hl_process *parent)
{
	for (size_t i = 0; i < parent->nmodules; i++) {
		struct hl_module *m = hl_state_module_add(child);

		*m = parent->modules[i];
		m->wire_id = 0;
		m->path = hl_bump_strdup(&child->arena, m->path);
		m->load_seq = 0;
		m->unload_seq = m->unload_seq ? 1 : 0;
	}
	for (size_t i = 0; i < parent->nstacks; i++) {
		struct hl_process_stack *s = hl_state_stack_add(child);
		const struct hl_process_stack *ps = &parent->stacks[i];

		memset(s, 0, sizeof(*s));
		s->depth = ps->depth;
		s->truncated = ps->truncated;
		s->frames = hl_bump_alloc(&child->arena, (size_t)s->depth * 8);
		memcpy(s->frames, ps->frames, (size_t)s->depth * 8);
		s->frames_hash = ps->frames_hash;
	}
	/* Blocks keep their stack references: the child's first stacks are
	 * the parent's, in the same order. Counters start from the copy. */
	for (struct hl_block *b = hl_table_next(&parent->live, NULL); b;
	     b = hl_table_next(&parent->live, b)) {
		struct hl_block nb = *b;

		if (b->flags & HL_BLOCK_FREED)
			continue;
		nb.flags = HL_BLOCK_INHERITED;
		nb.ticks = 0; /* see HL_INHERITED_TICKS */
		hl_state_block_alloc(child, &nb);
		child->inherited_at_fork++;
	}
}

static char **argv_copy(struct hl_process *p, const char *s, uint32_t argc)
{
	char **argv = hl_bump_alloc(&p->arena, (argc + 1) * sizeof(*argv));

	for (uint32_t i = 0; i < argc; i++) {
		argv[i] = hl_bump_strdup(&p->arena, s);
		s += strlen(s) + 1;
	}
	return argv;
}

struct hl_process *hl_state_on_hello(struct hl_run *run, const struct hl_rec_hello *r)
{
	struct hl_process *p = hl_xcalloc(1, sizeof(*p));
	const char *exe = (const char *)(r + 1);
	struct hl_process *other;

	hl_bump_init(&p->arena);
	p->run = run;
	hl_tombwatch_init(&p->tombwatch);
	p->pid = r->pid;
	p->ppid = r->ppid;
	p->origin = r->origin;
	p->hook_flags = r->hook_flags;
	p->stack_depth = r->stack_depth;
	p->run_id = r->run_id;
	p->start_realtime_ns = r->start_realtime_ns;
	p->exe = hl_bump_strdup(&p->arena, exe);
	p->argc = r->argc;
	p->argv = argv_copy(p, exe + r->exe_len, r->argc);
	if (r->test_len)
		p->test_name = hl_bump_strdup(&p->arena, exe + r->exe_len + r->argv_len);
	p->sample_every = 256;
	p->sample_countdown = 256;
	p->how = HL_EXIT_UNKNOWN;

	/* The parent's (or previous image's) records that are already in
	 * flight come first: the hook flushes them before fork and exec. A
	 * child that sends its own snapshot of what it inherited needs none. */
	bool snapshot = r->origin == HL_ORIGIN_FORK && (r->hook_flags & HL_HOOK_FORK_SNAPSHOT);
	if (run->drain && r->origin != HL_ORIGIN_START && !snapshot)
		run->drain(run->drain_ctx, r->origin == HL_ORIGIN_FORK ? r->ppid : r->pid);
	if (r->origin == HL_ORIGIN_FORK && (other = run_find_pid(run, r->ppid, NULL))) {
		p->parent = other;
		if (!snapshot)
			hl_state_inherit_from(p, other);
	} else if (r->origin == HL_ORIGIN_EXEC && (other = run_find_pid(run, r->pid, NULL))) {
		p->parent = other;
		other->exec_successor = p;
	}
	if (r->origin == HL_ORIGIN_FORK)
		hl_run_note_fork(run, r->ppid, r->pid, NULL, false);
	else if (r->origin == HL_ORIGIN_EXEC)
		forget_note(run, HL_BIRTH_EXEC, r->pid, r->pid);
	else if (r->ppid && !forget_note(run, HL_BIRTH_SPAWN, r->ppid, r->pid))
		note_started_hello(run, r->ppid, r->pid);
	p->parent_serial = p->parent ? p->parent->serial : 0;
	hl_grow((void **)&run->procs, &run->procs_cap, run->nprocs, sizeof(p));
	run->procs[run->nprocs++] = p;
	/* Not nprocs: a daemon forgets stored processes, serials stay unique. */
	p->serial = ++run->next_serial;
	return p;
}

/* ---- children that never connected ---------------------------------------- */

void hl_run_note_fork(struct hl_run *run, uint32_t ppid, uint32_t pid, const char *exe,
		      bool from_parent)
{
	if (!forget_side(run, HL_BIRTH_FORK, ppid, pid, from_parent))
		add_note(run, HL_BIRTH_FORK, ppid, pid, exe, from_parent);
}

void hl_run_note_spawn(struct hl_run *run, uint32_t ppid, const struct hl_rec_spawn *rec)
{
	const char *path = (const char *)(rec + 1);

	if (rec->h.flags & HL_SPAWN_FAILED) {
		forget_side(run, HL_BIRTH_SPAWN, ppid, rec->child_pid, false);
		return;
	}
	if (!spawned_child_came(run, ppid, rec->child_pid))
		add_note(run, HL_BIRTH_SPAWN, ppid, rec->child_pid, path, true);
}

void hl_run_note_stream_end(struct hl_run *run, const struct hl_process *p)
{
	if (p->exec_pending && p->exec_traced && !p->exec_successor)
		add_note(run, HL_BIRTH_EXEC, p->pid, p->pid, p->exec_pending, true);
}

static const struct {
	uint32_t origin;
	uint32_t standalone;
} unobserved_as[] = {
	[HL_BIRTH_FORK] = { HL_ORIGIN_FORK, HL_STANDALONE_UNOBSERVED },
	[HL_BIRTH_SPAWN] = { HL_ORIGIN_START, HL_STANDALONE_UNSPAWNED },
	[HL_BIRTH_EXEC] = { HL_ORIGIN_EXEC, HL_STANDALONE_UNEXECED },
};

/* The process of a child that never said HELLO: the image it was to run
 * (a fork child: its parent's), no events, no exit record. */
static void add_unobserved(struct hl_run *run, const struct hl_fork_note *f)
{
	const char *exe = f->exe ? f->exe : "";
	size_t exe_len = strlen(exe) + 1;
	struct hl_rec_hello *hello = hl_xcalloc(1, sizeof(*hello) + exe_len);
	struct hl_process *p;

	hello->pid = f->pid;
	hello->ppid = f->birth == HL_BIRTH_EXEC ? 0 : f->ppid;
	hello->origin = unobserved_as[f->birth].origin;
	hello->hook_flags = HL_HOOK_FORK_SNAPSHOT; /* inherits nothing: none of it is known */
	hello->start_realtime_ns = f->realtime_ns;
	hello->exe_len = (uint32_t)exe_len;
	memcpy(hello + 1, exe, exe_len);
	p = hl_state_on_hello(run, hello);
	free(hello);
	p->standalone = unobserved_as[f->birth].standalone;
	hl_process_closed(p);
}

size_t hl_run_add_unobserved(struct hl_run *run)
{
	size_t added = 0;

	/* on_hello notes the fork again (from the child's side): take the list */
	struct hl_fork_note *forks = run->forks;
	size_t n = run->nforks;

	run->forks = NULL;
	run->nforks = run->forks_cap = 0;
	for (size_t i = 0; i < n; i++) {
		if (forks[i].from_parent) {
			add_unobserved(run, &forks[i]);
			added++;
		}
		free(forks[i].exe);
	}
	free(forks);
	for (size_t i = 0; i < run->nforks; i++)
		free(run->forks[i].exe);
	free(run->forks);
	run->forks = NULL;
	run->nforks = run->forks_cap = 0;
	return added;
}
