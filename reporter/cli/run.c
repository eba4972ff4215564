/*
 * reporter/cli/run.c: `heapledger run [options] -- prog args...`.
 *
 * Starts prog with the hook preloaded and a private socket, follows every
 * process of the tree (the hook connects from each image; we are the child
 * subreaper so orphans are reaped here and their wait status is known), and
 * when prog has exited and every connection has closed (or the grace period
 * ran out) prints the report to stderr, stores the run, writes --json, and
 * exits with prog's own status (128+signal if it was killed). While prog
 * runs, ended processes are reported, stored and freed in rounds (see
 * stream_ended), so memory follows what is live, not how many processes a
 * long script started; the text, --json and the gate still come at the end,
 * in the order of HELLO.
 *
 * prog keeps our stdin/stdout/stderr; we never read or write its stdin or
 * stdout. SIGINT/SIGQUIT from the terminal reach prog directly (same process
 * group), so we ignore them while it runs; SIGTERM/SIGHUP sent to us are
 * passed on to prog.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "from_live.h"
#include "cli.h"
#include "listen.h"
#include "policy.h"
#include "prefetch.h"
#include "report_formats.h"
#include "runinfo.h"

#define NOT_GIVEN ULONG_MAX /* an unsigned option left to the hook's default */

struct run_options {
	const char *db_path;
	const char *json_path;
	const char *log_file;    /* text report into this file (%p: one per process), else stderr */
	const char *xml_file;    /* valgrind's XML into this file (%p: one per process) */
	unsigned long depth;     /* 0 = hook default */
	const char *on_error;    /* heap misuse: "continue" or "abort", NULL = hook default */
	const char *checks;      /* "default", "full" or "guard", NULL = hook default */
	unsigned long redzone, quarantine, fill, guard_sample; /* NOT_GIVEN = hook default */
	unsigned long wait_ms;   /* grace for connections after prog exits */
	char *trace, *exclude;    /* $HEAPLEDGER_TRACE / _EXCLUDE for the program, NULL: unset */
	const char *trace_children; /* --trace-children: "yes", "no", NULL = hook default (yes) */
	bool no_db;
	struct hl_policy policy; /* fingerprints, suppressions */
	struct hl_report *report; /* takes --label */
	char **command;
	int command_argc;
};

static volatile sig_atomic_t forward_signal;
static int interrupted_by; /* the first signal forwarded to the program */
/* The signals install_signals changes, and each one's action as we found
 * it: the program gets them back before exec, so it starts with what it
 * would have had without us (an ignored SIGHUP under nohup, SIGINT and
 * SIGQUIT ignored in a shell's background job). A handler of ours would
 * become SIG_DFL at exec; SIG_IGN would be lost. */
static const int changed_signals[] = { SIGTERM, SIGHUP, SIGCHLD, SIGINT, SIGQUIT, SIGPIPE, SIGXFSZ };
#define NCHANGED (sizeof(changed_signals) / sizeof(changed_signals[0]))
static struct sigaction signals_before[NCHANGED];

/* User and system CPU seconds of a getrusage() answer. */
static double rusage_seconds(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

/* HEAPLEDGER_TIMING=1: one log line at the end with the phases after the
 * program exited (how the "report within 0.2 s" figure is measured). */
static uint64_t timing_exit_ns;
static double timing_serve_cpu; /* CPU seconds of the reading thread in serve() */

static void on_forward_signal(int sig)
{
	forward_signal = sig;
}

/* Only there so a child's exit interrupts epoll_wait: the program closes its
 * connection a little before it becomes a zombie, and without this the loop
 * reaped it only at the next 20 ms poll timeout. */
static void on_child(int sig)
{
	(void)sig;
}

/* args.h callback of --log-file and --xml-file: a valid valgrind-style
 * file name pattern (%p, %q{VAR}, %%). */
static const char *file_pattern_arg(const char *value, void *out)
{
	const char *why = *value ? hl_report_check_file_name(value) : "needs a file name";

	if (!why)
		*(const char **)out = value;
	return why;
}

/* Fills o from the command line; returns -1 to go on, else the status to
 * exit with (0 after --help). */
static int parse_run_options(int argc, char **argv, struct run_options *o)
{
	/* One line per option (args.h explains the macros). */
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &o->db_path,
			      "store the run in FILE (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_FLAG("no-db", 0, &o->no_db, "do not store the run"),
		HL_ARG_STRING("json", 0, "FILE", &o->json_path, "also write the report as JSON to FILE"),
		HL_ARG_CALL("log-file", 0, "FILE", file_pattern_arg, &o->log_file,
			    "write the text report to FILE instead of stderr (%p: a file per "
			    "process, named by its pid; %q{VAR}: $VAR)"),
		HL_ARG_CALL("xml-file", 0, "FILE", file_pattern_arg, &o->xml_file,
			    "also write the report as valgrind memcheck's XML (protocol 4) to FILE "
			    "(%p: a file per process)"),
		HL_ARG_UNSIGNED("depth", 0, "N", &o->depth, 0, HL_WIRE_MAX_FRAMES,
				"capture and show at most N frames per stack (0: the hook's default)"),
		HL_ARG_CHOICE("on-error", 0, "continue|abort", &o->on_error,
			      "on heap misuse (invalid or double free, mismatched delete) report and "
			      "go on (default), or report and abort the program"),
		HL_ARG_CHOICE("checks", 0, "default|full|guard", &o->checks,
			      "heap misuse checks: default, full (guard bytes after blocks for "
			      "overflows, a quarantine of freed blocks for writes after free), or guard "
			      "(blocks against PROT_NONE pages: overflows and reads or writes after "
			      "free fault at the instruction)"),
		HL_ARG_UNSIGNED("guard-sample", 0, "N", &o->guard_sample, 0, 1000000000,
				"put one allocation in N against a PROT_NONE page, as --checks guard "
				"does for all (0: none)"),
		HL_ARG_UNSIGNED("redzone", 0, "N", &o->redzone, 1, 4096,
				"with --checks full: guard bytes after each block (default 16)"),
		HL_ARG_UNSIGNED("quarantine", 0, "MIB", &o->quarantine, 0, 65536,
				"with --checks full: MiB of freed blocks held back from reuse "
				"(default 20, 0: none)"),
		HL_ARG_UNSIGNED("fill", 0, "BYTE", &o->fill, 0, 255,
				"with --checks full: the byte freed blocks are filled with (default 221)"),
		HL_ARG_UNSIGNED("wait-ms", 0, "N", &o->wait_ms, 0, 3600000,
				"wait at most N ms for connections after the program exits (default 3000)"),
		HL_ARG_FLAG("quiet", 'q', &hl_log_quiet, "print no messages of heapledger's own"),
		HL_TRACE_ARGS(&o->trace, &o->exclude),
		HL_TRACE_CHILDREN_ARG(&o->trace_children, "yes"),
		HL_VIEW_ARGS(&o->report->view),
		HL_ARG_CALL("label", 0, "KEY=VALUE", hl_runinfo_label_arg, o->report,
			    "store a label with the run (repeatable)"),
		HL_POLICY_ARGS(&o->policy),
		HL_GATE_ARGS(&o->policy.gate_options),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"run", "[--] PROG [ARGS...]", 1, -1,
		"Run PROG with leak tracking (libheapledger.so preloaded into it and every\n"
		"process it starts), print the heap summary and the leaks on stderr, store\n"
		"the run, and exit with PROG's status (128+N if signal N killed it; 125 if\n"
		"heapledger itself failed, 126 if PROG cannot be executed, 127 if not found).",
		args, NULL,
	};
	int rc, first;

	o->wait_ms = 3000;
	o->redzone = o->quarantine = o->fill = o->guard_sample = NOT_GIVEN;
	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (!o->no_db && !o->db_path)
		o->db_path = hl_default_db(true);
	o->no_db = o->no_db || !o->db_path;
	o->command = argv + first;
	o->command_argc = argc - first;
	return -1;
}

/* HEAPLEDGER_OPTIONS with depth=N, on_error=..., children= and the checks=
 * keys added in front, so a user's own options still win when they name
 * them too. */
static void set_hook_options(const struct run_options *o)
{
	const char *old = getenv(HL_ENV_OPTIONS);
	const char *children = hl_trace_children_key(o->trace_children);
	char buf[4096];
	int used = 0;

	if (!o->depth && !o->on_error && !o->checks && o->redzone == NOT_GIVEN &&
	    o->quarantine == NOT_GIVEN && o->fill == NOT_GIVEN && o->guard_sample == NOT_GIVEN &&
	    !children)
		return;
	if (children)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "%s:", children);
	if (o->depth)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "depth=%lu:", o->depth);
	if (o->on_error)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "on_error=%s:", o->on_error);
	if (o->checks)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "checks=%s:", o->checks);
	if (o->redzone != NOT_GIVEN)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "redzone=%lu:", o->redzone);
	if (o->quarantine != NOT_GIVEN)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "quarantine=%lu:",
				 o->quarantine);
	if (o->fill != NOT_GIVEN)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "fill=%lu:", o->fill);
	if (o->guard_sample != NOT_GIVEN)
		used += snprintf(buf + used, sizeof(buf) - (size_t)used, "guard_sample=%lu:",
				 o->guard_sample);
	snprintf(buf + used, sizeof(buf) - (size_t)used, "%s", old ? old : "");
	setenv(HL_ENV_OPTIONS, buf, 1);
}

/* The errno of a failed exec, through a close-on-exec pipe: 0 once the
 * program runs (the pipe closed at exec), so a program that cannot be run
 * gets one message and its 126 or 127, not a report of no process. */
static int exec_result(int fd)
{
	int err = 0;
	ssize_t n;

	do
		n = read(fd, &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(fd);
	return n == (ssize_t)sizeof(err) ? err : 0;
}

static pid_t start_program(const struct run_options *o, const char *lib,
			   const char *socket_path, uint64_t run_id, int *exec_errno)
{
	char *preload = hl_preload_value(lib, getenv("LD_PRELOAD"));
	char id[32];
	int fds[2] = { -1, -1 };
	pid_t pid;

	snprintf(id, sizeof(id), "%llu", (unsigned long long)run_id);
	*exec_errno = 0;
	if (pipe2(fds, O_CLOEXEC) != 0)
		fds[0] = fds[1] = -1; /* no early answer: the report says it */
	pid = fork();
	if (pid != 0) {
		free(preload);
		if (fds[1] >= 0)
			close(fds[1]);
		if (fds[0] >= 0)
			*exec_errno = pid > 0 ? exec_result(fds[0]) : (close(fds[0]), 0);
		return pid;
	}
	if (fds[0] >= 0)
		close(fds[0]);
	for (size_t i = 0; i < NCHANGED; i++)
		sigaction(changed_signals[i], &signals_before[i], NULL);
	setenv("LD_PRELOAD", preload, 1);
	setenv(HL_ENV_SOCKET, socket_path, 1);
	setenv(HL_ENV_RUN_ID, id, 1);
	/* Each image writes its pid over the zeros, so an image that execs
	 * through a path the hook does not interpose still says origin EXEC. */
	setenv(HL_ENV_PID, "0000000000", 1);
	if (o->trace)
		setenv(HL_ENV_TRACE, o->trace, 1);
	else
		unsetenv(HL_ENV_TRACE);
	if (o->exclude)
		setenv(HL_ENV_EXCLUDE, o->exclude, 1);
	else
		unsetenv(HL_ENV_EXCLUDE);
	set_hook_options(o);
	execvp(o->command[0], o->command);
	{
		int err = errno;
		ssize_t ignored = 0;

		fprintf(stderr, "heapledger: cannot run %s: %s\n", o->command[0], strerror(err));
		if (fds[1] >= 0)
			ignored = write(fds[1], &err, sizeof(err)); /* else the status says it */
		(void)ignored;
		_exit(err == ENOENT ? HL_EXIT_NOT_FOUND : HL_EXIT_CANNOT_EXEC);
	}
}

/* Reaps every exited descendant; returns true if any remain. */
static bool reap_children(struct hl_run *run, pid_t main_pid, int *main_status,
			  bool *main_done)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid == 0)
			return true;
		if (pid < 0)
			return errno != ECHILD;
		hl_run_note_reaped(run, pid, status);
		if (pid == main_pid) {
			*main_status = status;
			*main_done = true;
			timing_exit_ns = hl_now_monotonic_ns();
		}
	}
}

/* The database is opened (created, migrated) in a thread while the program
 * runs: that is mostly waiting for the disk (a new database syncs its
 * journal, the file and its directory 4 times before it is in WAL mode),
 * which took 10-30 ms after every program's exit here, before the store
 * could begin. If it fails, the store opens it again after the exit as it
 * did before, so every error is told the same way. */
struct early_db {
	pthread_t thread;
	const char *path;
	struct hl_store *store;
	int err;
	bool started;
};

static struct hl_store *early_db_take(struct early_db *e);

/* Ended processes reported and freed while the run goes on, as the daemon
 * does, so that the reporter's memory follows what is live, not how many
 * processes have ended (a shell script of 5,000 commands held 494 MB). */
struct run_stream {
	struct hl_output out;     /* opened at the first process reported early */
	struct early_db *db;
	bool opened;              /* out's run row exists */
	size_t streamed;          /* processes reported and freed during the run */
	size_t held_max;          /* most ended processes held at once */
	/* Their counters, for HEAPLEDGER_TIMING's lines: */
	uint64_t events, tally_events, tombstones_forgotten, tombstones_dropped;
};

/* An ended image waits this long, so an exec'd successor can say HELLO
 * first and it is reported as replaced (the daemon's settle time). */
#define HL_RUN_SETTLE_NS 500000000ull
/* Ended, settled processes held before they are reported early: a short
 * run reports everything at its end, in one transaction, as before. */
#define HL_RUN_STREAM_AFTER 32u

/* An image whose stream ended on EXEC waits up to this long for its
 * successor's HELLO while its pid lives: on a loaded machine (load 15 on 2
 * cores) the new image can take longer than the settle time to load the
 * hook, and the old one would be reported as replaced by an untracked
 * image, the new one without its parent. */
#define HL_RUN_EXEC_WAIT_NS 5000000000ull

static bool pid_exists(uint32_t pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

static bool process_settled(const struct hl_process *p, uint64_t now)
{
	uint64_t waited = now - p->closed_mono_ns;

	if (!p->closed || waited < HL_RUN_SETTLE_NS)
		return false;
	return !p->exec_pending || p->exec_successor || waited >= HL_RUN_EXEC_WAIT_NS ||
	       !pid_exists(p->pid);
}

/* Creates the run row before the first process is stored early. */
static void stream_open(struct run_stream *st, const struct run_options *o)
{
	struct hl_report *r = o->report;

	st->opened = true;
	st->out.store = early_db_take(st->db);
	st->out.batch = false; /* a transaction per process: others may write meanwhile */
	if (!o->no_db || o->json_path) {
		hl_runinfo_uuid(r);
		hl_runinfo_git(r);
		hl_runinfo_host(r);
	}
	hl_output_open_db(&st->out, r);
}

/* Reports, stores and frees the settled processes once enough wait. */
static void stream_ended(struct hl_run *run, const struct run_options *o,
			 struct run_stream *st, struct hl_prefetch *pf)
{
	uint64_t now = hl_now_monotonic_ns();
	size_t ready = 0, closed = 0;

	for (size_t i = 0; i < run->nprocs; i++) {
		closed += run->procs[i]->closed;
		ready += process_settled(run->procs[i], now);
	}
	if (closed > st->held_max)
		st->held_max = closed;
	if (ready < HL_RUN_STREAM_AFTER)
		return;
	hl_prefetch_pause(pf); /* the symbolizer is ours meanwhile */
	if (!st->opened)
		stream_open(st, o);
	/* One transaction per round, not per process (a commit each made a
	 * 2,000-command script 10x slower); the lock is held for one round. */
	bool batched = st->out.store && hl_store_batch_begin(st->out.store) == 0;
	for (size_t i = 0; i < run->nprocs;) {
		struct hl_process *p = run->procs[i];

		if (!process_settled(p, now)) {
			i++;
			continue;
		}
		hl_process_finish(p);
		hl_policy_apply(&o->policy, p, st->out.sym);
		hl_report_add_process(o->report, p, st->out.sym, (unsigned)o->depth);
		if (st->out.store)
			hl_output_store(&st->out, p);
		st->events += p->events;
		st->tally_events += p->tally_events;
		st->tombstones_forgotten += p->tombstones_forgotten;
		st->tombstones_dropped += p->tombstones_dropped;
		hl_prefetch_forget(pf, p);
		hl_run_detach(run, p);
		hl_process_destroy(p);
		st->streamed++;
	}
	if (batched && hl_store_batch_end(st->out.store))
		hl_log("database %s: %s; processes reported during the run were not stored",
		       st->out.db_path, hl_store_error(st->out.store));
	hl_prefetch_resume(pf);
}

/* Runs the event loop until prog and its tree are done (bounded). */
static void serve(struct hl_listener *l, const struct run_options *o, pid_t main_pid,
		  int *main_status, struct hl_prefetch *pf, struct run_stream *st)
{
	bool main_done = false, others = true;
	uint64_t deadline = 0;

	for (;;) {
		int err = hl_listen_poll(l, 20);

		if (err && err != -EINTR) {
			hl_log("run: poll failed: %s", strerror(-err));
			break;
		}
		if (forward_signal) {
			if (!interrupted_by)
				interrupted_by = forward_signal;
			kill(main_pid, forward_signal);
			forward_signal = 0;
		}
		hl_prefetch_scan(pf, l->run);
		others = reap_children(l->run, main_pid, main_status, &main_done);
		if (!main_done)
			stream_ended(l->run, o, st, pf);
		if (!main_done)
			continue;
		if (!deadline)
			deadline = hl_now_monotonic_ns() + o->wait_ms * 1000000ull;
		if (!others && hl_listen_open_count(l) == 0) {
			/* Every process has exited, but one may have connected
			 * and exited between the last poll and waitpid: its
			 * connection still waits in the listen backlog. It was
			 * queued before the exit waitpid saw, so one more look
			 * finds it (a fork child went missing under load). */
			hl_listen_poll(l, 0);
			if (hl_listen_open_count(l) == 0)
				break;
		}
		if (hl_now_monotonic_ns() >= deadline) {
			if (hl_listen_open_count(l))
				hl_log("run: %zu connections still open %lu ms after the "
				       "program exited; reporting them as they are",
				       hl_listen_open_count(l), o->wait_ms);
			break;
		}
	}
	{
		struct rusage ru;

		if (getrusage(RUSAGE_THREAD, &ru) == 0)
			timing_serve_cpu = rusage_seconds(&ru);
	}
}

static int exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* Why no process reported, from what this command saw: a program killed
 * (Ctrl-C reaches it directly) or this command interrupted before the hook
 * connected is not a program the hook could not load into. NULL when the
 * program exited by itself: then the hook was not there. */
static const char *unreported_reason(struct hl_report *r, const char *prog, int status)
{
	char why[600];
	int n = 0;

	if (interrupted_by)
		n = snprintf(why, sizeof(why), "heapledger run was interrupted by SIG%s and passed it "
			     "on; ", sigabbrev_np(interrupted_by) ? sigabbrev_np(interrupted_by) : "?");
	if (WIFSIGNALED(status))
		snprintf(why + n, sizeof(why) - (size_t)n,
			 "%.200s was killed by signal %d (%s) before it reported (the hook reports once "
			 "the program is loaded)",
			 prog, WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (interrupted_by)
		snprintf(why + n, sizeof(why) - (size_t)n,
			 "%.200s then exited with status %d without reporting (was libheapledger.so "
			 "preloaded, and is the program dynamically linked?)", prog,
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	else
		return NULL;
	return hl_bump_strdup(&r->arena, why);
}

static void write_json(const char *path, struct hl_report *r)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f) {
		hl_log("cannot write --json %s: %s", path, strerror(errno));
		return;
	}
	err = hl_report_write_json(r, f);
	if (fclose(f) != 0 || err)
		hl_log("cannot write --json %s: %s", path, strerror(errno ? errno : EIO));
}

static void *early_db_main(void *arg)
{
	struct early_db *e = arg;

	e->err = hl_store_open(e->path, false, &e->store);
	return NULL;
}

/* With every signal blocked in it: SIGCHLD must interrupt the main
 * thread's epoll_wait (on_child), and a forwarded signal reach its flag. */
static void early_db_start(struct early_db *e, const char *path)
{
	sigset_t all, old;

	e->path = path;
	if (!path)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e->started = pthread_create(&e->thread, NULL, early_db_main, e) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The store opened during the run, or NULL (then the store opens it). */
static struct hl_store *early_db_take(struct early_db *e)
{
	if (!e->started)
		return NULL;
	pthread_join(e->thread, NULL);
	e->started = false;
	if (!e->err)
		return e->store;
	hl_store_close(e->store);
	return NULL;
}

/* Finishes every image, prints the report, then stores and writes JSON. */
/* CPU time of the calling thread: the store's cost on a machine whose
 * other load makes wall time say little. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int report_process_by_serial(const void *a, const void *b)
{
	const struct hl_report_process *x = a, *y = b;

	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static void report_run(struct hl_run *run, const struct run_options *o,
		       struct hl_report *r, size_t prefetched, struct run_stream *st)
{
	struct hl_output out = st->out;
	const char *timing = getenv("HEAPLEDGER_TIMING");
	uint64_t t_start = hl_now_monotonic_ns(), t_model, t_printed, t_stored;
	uint64_t cpu_start = thread_cpu_ns(), cpu_model, cpu_printed, cpu_stored;
	bool files_failed = false;

	for (size_t i = 0; i < run->nprocs; i++) {
		hl_process_finish(run->procs[i]);
		hl_policy_apply(&o->policy, run->procs[i], out.sym);
		hl_report_add_process(r, run->procs[i], out.sym, (unsigned)o->depth);
	}
	/* Processes reported early came first: back to the order of HELLO. */
	if (st->streamed)
		qsort(r->procs, r->nprocs, sizeof(*r->procs), report_process_by_serial);
	t_model = hl_now_monotonic_ns();
	cpu_model = thread_cpu_ns();
	if (!r->nprocs && (o->trace || o->exclude))
		hl_log("run: no process matched --trace/--exclude; nothing to report");
	else if (!o->log_file)
		hl_output_print(r);
	else if (hl_report_write_files(r, o->log_file, HL_REPORT_FILE_TEXT))
		files_failed = true;
	if (o->xml_file && hl_report_write_files(r, o->xml_file, HL_REPORT_FILE_XML))
		files_failed = true;
	/* -q, --log-file: stderr is the program's alone; valgrind's -q: errors only */
	if ((!o->log_file || !hl_log_quiet) && !r->view.errors_only)
		hl_policy_print_used(&o->policy, stderr);
	if (o->policy.gate_options.error_exitcode) {
		if ((!o->log_file || !hl_log_quiet) && !r->view.errors_only)
			hl_gate_print(o->policy.gate, &o->policy.gate_options, stderr);
		if (hl_gate_failed(o->policy.gate, &o->policy.gate_options))
			r->exit_code = (int)o->policy.gate_options.error_exitcode;
	}
	/* A report that could not be written must not pass for a clean run. */
	if (files_failed)
		r->exit_code = HL_EXIT_FAILURE;
	t_printed = hl_now_monotonic_ns();
	cpu_printed = thread_cpu_ns();
	if (!st->opened)
		hl_output_open_db(&out, r);
	else if (out.store && run->nprocs && hl_store_batch_begin(out.store) != 0)
		hl_log("database %s: %s; storing process by process", out.db_path,
		       hl_store_error(out.store)); /* the last ones, in one transaction */
	for (size_t i = 0; i < run->nprocs && out.store; i++)
		hl_output_store(&out, run->procs[i]);
	hl_output_close(&out, r->ended_ns, r->exit_code);
	r->run_id = out.run_id; /* 0 when the run was removed as empty */
	t_stored = hl_now_monotonic_ns();
	cpu_stored = thread_cpu_ns();
	if (r->run_id)
		hl_log("run %lld stored in %s", (long long)r->run_id, o->db_path);
	else if (out.db_path && r->nprocs)
		hl_log("run not stored in %s", o->db_path);
	if (o->json_path)
		write_json(o->json_path, r);
	if (timing && *timing && strcmp(timing, "0") != 0) {
		uint64_t t_end = hl_now_monotonic_ns(), t0 = timing_exit_ns ? timing_exit_ns : t_start;
		uint64_t events = st->events, forgotten = st->tombstones_forgotten;
		uint64_t pruned = st->tombstones_dropped, counted = st->tally_events;

		for (size_t i = 0; i < run->nprocs; i++) {
			events += run->procs[i]->events;
			counted += run->procs[i]->tally_events;
			forgotten += run->procs[i]->tombstones_forgotten;
			pruned += run->procs[i]->tombstones_dropped;
		}
		struct rusage ru = { 0 };

		if (getrusage(RUSAGE_SELF, &ru) != 0)
			ru.ru_maxrss = 0;
		/* Events the hooks counted themselves were never read. */
		events -= counted < events ? counted : events;
		hl_log("timing: during the run the reading thread used %.3f s of CPU for %llu "
		       "alloc/free events (%.1f M/s, startup included), %llu more counted in the "
		       "hooks; heapledger's peak RSS %.1f MiB", timing_serve_cpu,
		       (unsigned long long)events,
		       timing_serve_cpu > 0 ? (double)events / timing_serve_cpu / 1e6 : 0.0,
		       (unsigned long long)counted, (double)ru.ru_maxrss / 1024.0);
		/* What tracking costs beside the program: every thread of
		 * heapledger (reading, symbols, store) against the processes it
		 * waited for (the program and the children it waited for).
		 * bench/run.sh reads this line for RESULTS.md. */
		struct rusage kids;

		if (getrusage(RUSAGE_CHILDREN, &kids) == 0) {
			double self_cpu = rusage_seconds(&ru), prog_cpu = rusage_seconds(&kids);

			hl_log("timing: CPU of heapledger %.3f s, of the program %.3f s: "
			       "reporter/program %.1f%%", self_cpu, prog_cpu,
			       prog_cpu > 0 ? 100.0 * self_cpu / prog_cpu : 0.0);
		}
		hl_log("timing: remembered frees (state.h): %llu forgotten once no older event "
		       "could come, %llu dropped at the bound", (unsigned long long)forgotten,
		       (unsigned long long)pruned);
		hl_log("timing: %zu ended processes reported and freed during the run; at most "
		       "%zu ended processes held at once", st->streamed, st->held_max);

		/* ms after the program was reaped: */
		hl_log("timing: %zu addresses symbolized during the run; after it: connections "
		       "done %.1f ms, symbolized %.1f ms (%.1f ms of CPU), report printed %.1f ms, "
		       "stored %.1f ms (%lld database pages written) with %.1f ms of CPU, all done "
		       "%.1f ms", prefetched,
		       (double)(t_start - t0) / 1e6, (double)(t_model - t0) / 1e6,
		       (double)(cpu_model - cpu_start) / 1e6,
		       (double)(t_printed - t0) / 1e6, (double)(t_stored - t0) / 1e6,
		       (long long)out.pages_written, (double)(cpu_stored - cpu_printed) / 1e6,
		       (double)(t_end - t0) / 1e6);
	}
}

static uint64_t new_run_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = hl_now_realtime_ns() ^ (uint64_t)getpid() << 32;
	return id >> 1 ? id >> 1 : 1; /* positive as an SQLite integer */
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_forward_signal };
	struct sigaction chld = { .sa_handler = on_child,
				  .sa_flags = SA_RESTART | SA_NOCLDSTOP };
	struct sigaction ign = { .sa_handler = SIG_IGN };

	for (size_t i = 0; i < NCHANGED; i++)
		sigaction(changed_signals[i], NULL, &signals_before[i]);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGCHLD, &chld, NULL);
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGQUIT, &ign, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	/* Past RLIMIT_FSIZE a write fails with EFBIG and the store says so;
	 * SIGXFSZ would kill us before the program's status is passed on. */
	sigaction(SIGXFSZ, &ign, NULL);
}

const char *hl_trace_children_key(const char *trace_children)
{
	if (!trace_children)
		return NULL;
	return strcmp(trace_children, "no") ? "children=1" : "children=0";
}

int hl_cmd_run(int argc, char **argv)
{
	return hl_run_command(argc, argv, NULL);
}

/* The fields of the text view only valgrind's command line sets. */
static void take_valgrind_view(struct hl_report_view *view, const struct hl_report_view *vg)
{
	if (!vg)
		return;
	view->leak_error_kinds = vg->leak_error_kinds;
	view->errors_only = vg->errors_only;
	view->error_summary = vg->error_summary;
	view->below_main = vg->below_main;
	view->silent_forks = vg->silent_forks;
	view->time_origin_ns = vg->time_origin_ns;
}

int hl_run_command(int argc, char **argv, const struct hl_report_view *valgrind_view)
{
	struct run_options o = { 0 };
	struct hl_listener l;
	struct hl_run run;
	struct hl_report r;
	struct hl_gate gate;
	struct hl_symbolizer *sym;
	struct hl_prefetch *pf;
	struct early_db db = { 0 };
	struct run_stream st = { 0 };
	size_t prefetched;
	char lib[PATH_MAX];
	int status = 0, err, exec_errno;
	pid_t pid;

	hl_report_init(&r);
	o.report = &r;
	hl_gate_options_init(&o.policy.gate_options);
	hl_gate_init(&gate);
	o.policy.gate = &gate;
	err = parse_run_options(argc, argv, &o);
	if (err < 0 && hl_policy_load(&o.policy, "run"))
		err = HL_EXIT_FAILURE;
	if (err >= 0) {
		hl_policy_destroy(&o.policy);
		hl_report_destroy(&r);
		return err;
	}
	r.gen_suppressions = hl_policy_gen_suppressions(&o.policy);
	take_valgrind_view(&r.view, valgrind_view);
	/* Gated: the ERROR SUMMARY counts what the gate counts, as valgrind's
	 * does with --error-exitcode (a log grepped for "0 errors" agrees). */
	if (o.policy.gate_options.error_exitcode)
		r.view.leak_error_kinds = hl_gate_show_kinds(&o.policy.gate_options);
	r.gate_kinds = o.policy.gate_options.kinds; /* --xml-file rates records as the gate */
	hl_runinfo_test_name(&r);
	if (hl_find_hook_library(lib, sizeof(lib))) {
		hl_log("run: cannot find libheapledger.so (set HEAPLEDGER_LIB)");
		return HL_EXIT_FAILURE;
	}
	hl_run_init(&run);
	run.run_id = new_run_id();
	run.share_frames = true; /* a fork child's stacks are its parent's */
	err = hl_listen_open_private(&l, &run);
	if (err) {
		hl_log("run: cannot create the socket: %s", strerror(-err));
		return HL_EXIT_FAILURE;
	}
	/* Orphaned grandchildren come to us, so we learn how they ended. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	r.argv = (const char **)o.command;
	r.argc = (uint32_t)o.command_argc;
	r.started_ns = hl_now_realtime_ns();
	/* Before the fork: a SIGTERM that comes as soon as the program runs is
	 * passed on to it, rather than ending this command and leaving the
	 * program behind unreported. The program gets its own dispositions back
	 * (the handlers reset at exec; start_program restores the rest). */
	install_signals();
	pid = start_program(&o, lib, l.path, run.run_id, &exec_errno);
	if (pid < 0 || exec_errno) {
		if (pid < 0)
			hl_log("run: fork: %s", strerror(errno));
		else
			waitpid(pid, &status, 0); /* it said why; nothing ran to report */
		hl_listen_close(&l);
		hl_report_destroy(&r);
		hl_run_destroy(&run);
		hl_policy_destroy(&o.policy);
		hl_gate_destroy(&gate);
		return pid < 0 ? HL_EXIT_FAILURE
			       : exec_errno == ENOENT ? HL_EXIT_NOT_FOUND : HL_EXIT_CANNOT_EXEC;
	}
	early_db_start(&db, o.no_db ? NULL : o.db_path);
	sym = hl_symbolizer_new();
	pf = hl_prefetch_start(sym);
	st.db = &db;
	st.out = (struct hl_output){
		.sym = sym,
		.db_path = o.no_db ? NULL : o.db_path,
		.max_frames = (unsigned)o.depth,
		.batch = true,
	};
	serve(&l, &o, pid, &status, pf, &st);
	hl_listen_close(&l);
	prefetched = hl_prefetch_stop(pf);
	hl_run_add_unobserved(&run); /* fork children that never connected */
	r.ended_ns = hl_now_realtime_ns();
	r.exit_code = exit_code_of(status);
	if (!run.nprocs && !st.streamed)
		r.unreported = unreported_reason(&r, o.command[0], status);
	if ((!o.no_db || o.json_path) && !st.opened) {
		hl_runinfo_uuid(&r);
		hl_runinfo_git(&r);
		hl_runinfo_host(&r);
	}
	if (!st.opened)
		st.out.store = early_db_take(&db);
	report_run(&run, &o, &r, prefetched, &st);
	status = r.exit_code; /* the program's, or --error-exitcode's */
	hl_symbolizer_free(sym);
	hl_report_destroy(&r);
	hl_run_destroy(&run);
	hl_policy_destroy(&o.policy);
	hl_gate_destroy(&gate);
	free(o.trace);
	free(o.exclude);
	return status;
}
