/*
 * reporter/cli/daemon.c: `heapledger daemon [--socket PATH] [--db FILE]`, the
 * long-lived reporter for a whole test suite. Every process that connects
 * (started with the environment `heapledger env` prints) becomes part of one
 * run; each is reported and stored shortly after its connection closes, then
 * forgotten, so memory stays bounded. SIGTERM/SIGINT stop it after the
 * processes still connected have been reported and stored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "daemon_writer.h"
#include "listen.h"
#include "policy.h"
#include "runinfo.h"

/* A closed image waits this long before it is reported, so an exec'd
 * successor can say HELLO first and the image is reported as replaced. */
#define HL_DAEMON_SETTLE_NS 500000000ull

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	stop_requested = sig;
}

static struct hl_policy policy;
/* --idle-timeout-ms (listen.h says which connections it closes). */
static unsigned long idle_timeout_ms = HL_CONN_IDLE_TIMEOUT_NS / 1000000;
/* --stall-timeout-ms and --buffer-cap-kib (listen.h, "Buffering"). */
static unsigned long stall_timeout_ms = HL_CONN_STALL_TIMEOUT_NS / 1000000;
static unsigned long buffer_cap_kib = HL_CONN_GROWTH_MAX >> 10;

/* Hands the images that closed long enough ago (all of them if `all`) to
 * the reporting thread. Finishing is cheap (no symbols, no database). */
static void settle(struct hl_run *run, struct hl_daemon_writer *w, bool all)
{
	uint64_t now = hl_now_monotonic_ns();

	for (size_t i = 0; i < run->nprocs;) {
		struct hl_process *p = run->procs[i];

		if (p->closed && (all || now - p->closed_mono_ns >= HL_DAEMON_SETTLE_NS)) {
			hl_process_finish(p);
			hl_run_detach(run, p);
			hl_daemon_writer_submit(w, p);
		} else {
			i++;
		}
	}
}

/* Connections the kernel took before the stop (in the listen backlog, or
 * with data not read yet) belong to processes that already reported: "run
 * the suite, then kill the daemon" lost the last 1-8 processes in 6 of 15
 * runs of a real suite. Accept and read until a pass finds nothing new,
 * bounded in case clients keep coming. Processes still running are
 * reported as they are when the socket closes. */
static void drain_before_stop(struct hl_listener *l)
{
	uint64_t deadline = hl_now_monotonic_ns() + 5000000000ull;

	for (;;) {
		uint64_t bytes = l->bytes;
		uint32_t conns = l->next_id;
		int err = hl_listen_poll(l, 0);

		if ((err && err != -EINTR) || hl_now_monotonic_ns() > deadline)
			return;
		if (!err && l->bytes == bytes && l->next_id == conns)
			return;
	}
}

static int daemon_loop(struct hl_listener *l, struct hl_daemon_writer *w)
{
	while (!stop_requested) {
		int err = hl_listen_poll(l, 200);

		if (err && err != -EINTR) {
			hl_log("daemon: poll failed: %s", strerror(-err));
			return HL_EXIT_FAILURE;
		}
		settle(l->run, w, false);
	}
	hl_log("daemon: stopping on signal %d", (int)stop_requested);
	drain_before_stop(l);
	return 0;
}

/* Returns -1 to go on, else the status to exit with (0 after --help). */
static int parse_daemon_options(int argc, char **argv, const char **socket_path,
				struct hl_output *out, struct hl_report *r)
{
	bool no_db = false;
	const char *clean = NULL;
	/* One line per option (args.h explains the macros). */
	const struct hl_arg args[] = {
		HL_ARG_STRING("socket", 0, "PATH", socket_path,
			      "listen on this Unix socket (default: $XDG_RUNTIME_DIR/heapledger/"
			      "daemon.sock, or /tmp/heapledger-UID/daemon.sock)"),
		HL_ARG_STRING("db", 0, "FILE", &out->db_path,
			      "store the run in FILE (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_FLAG("no-db", 0, &no_db, "do not store the run"),
		HL_ARG_FLAG("quiet", 'q', &out->quiet, "print no reports, only heapledger's own messages"),
		HL_ARG_UNSIGNED("idle-timeout-ms", 0, "N", &idle_timeout_ms, 0, 86400000,
				"close a connection that sends nothing for N ms inside a record or"
				" before its HELLO (default 30000; 0: never); one idle between"
				" records stays"),
		HL_ARG_UNSIGNED("buffer-cap-kib", 0, "N", &buffer_cap_kib, 2048, 4194304,
				"what all connections may buffer beyond 64 KiB each, in KiB"
				" (default 32768); a connection needing more waits, unread"),
		HL_ARG_UNSIGNED("stall-timeout-ms", 0, "N", &stall_timeout_ms, 0, 86400000,
				"while connections wait for buffer room, cut one that holds room"
				" inside a large record and finishes no record for N ms (default"
				" 2000; 0: never)"),
		HL_VIEW_ARGS(&out->view),
		HL_ARG_CHOICE("clean-processes", 0, "line|full", &clean,
			      "a process with no loss record shown, no heap error and no warning:"
			      " one line (default) or its whole report"),
		HL_ARG_CALL("label", 0, "KEY=VALUE", hl_runinfo_label_arg, r,
			    "store a label with the run (repeatable)"),
		HL_POLICY_ARGS(&policy),
		HL_GATE_ARGS(&policy.gate_options),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"daemon", "", 0, 0,
		"Collect every process started with the environment `heapledger env` prints,\n"
		"as one run: each is reported and stored shortly after it ends. SIGTERM or\n"
		"SIGINT stops the daemon once everything is written.",
		args, NULL,
	};
	int rc, first;

	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	out->view.brief_clean = !clean || !strcmp(clean, "line");
	if (no_db)
		out->db_path = NULL;
	else if (!out->db_path && !(out->db_path = hl_default_db(true)))
		return HL_EXIT_FAILURE;
	return -1;
}

/* What a CI log needs at the end of a test suite: how many processes, which
 * leaked (with their command lines), where the run is, and the verdict. */
static void print_suite_summary(const struct hl_gate *gate, int64_t run_id, const char *db)
{
	fprintf(stderr, "heapledger: suite summary: %llu %s, %zu with leaks or heap errors",
		(unsigned long long)gate->processes,
		hl_plural(gate->processes, "process", "processes"), gate->nfailing);
	if (run_id)
		fprintf(stderr, "; run %lld in %s", (long long)run_id, db);
	fputs("\n", stderr);
	hl_gate_print_failing(gate, stderr);
	hl_gate_print(gate, &policy.gate_options, stderr);
}

int hl_cmd_daemon(int argc, char **argv)
{
	const char *socket_path = NULL;
	char default_path[PATH_MAX], why[PATH_MAX + 128];
	/* A suite's log stays readable: at most the hook's standalone
	 * max_leaks default of records per process (the database keeps all). */
	struct hl_output out = { .view = { .show_kinds = HL_SHOW_DEFAULT, .max_leaks = 50 } };
	struct hl_listener l;
	struct hl_run run;
	struct hl_report r;
	struct hl_daemon_writer *w;
	struct hl_gate gate;
	struct sigaction sa = { .sa_handler = on_stop };
	int err, rc;

	hl_report_init(&r);
	hl_gate_options_init(&policy.gate_options);
	hl_gate_init(&gate);
	policy.gate = &gate;
	rc = parse_daemon_options(argc, argv, &socket_path, &out, &r);
	if (rc < 0 && hl_policy_load(&policy, "daemon"))
		rc = HL_EXIT_FAILURE;
	if (rc >= 0) {
		hl_policy_destroy(&policy);
		hl_report_destroy(&r);
		return rc;
	}
	if (policy.gate_options.error_exitcode) /* the ERROR SUMMARY counts what the gate counts */
		out.view.leak_error_kinds = hl_gate_show_kinds(&policy.gate_options);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN); /* past RLIMIT_FSIZE: EFBIG, reported per process */
	hl_run_init(&run);
	if (!socket_path) {
		err = hl_listen_default_path(default_path, sizeof(default_path), why,
					     sizeof(why));
		if (err) {
			hl_log("daemon: no default socket: %s", why);
			hl_report_destroy(&r);
			return HL_EXIT_FAILURE;
		}
		socket_path = default_path;
	}
	err = hl_listen_open_path(&l, &run, socket_path);
	if (err) {
		hl_log("daemon: cannot listen on %s: %s", socket_path, strerror(-err));
		hl_report_destroy(&r);
		return HL_EXIT_FAILURE;
	}
	r.mode = "daemon";
	r.argv = (const char **)argv;
	r.argc = (uint32_t)argc;
	r.started_ns = hl_now_realtime_ns();
	if (out.db_path) {
		hl_runinfo_uuid(&r);
		hl_runinfo_git(&r);
		hl_runinfo_host(&r);
	}
	out.sym = hl_symbolizer_new();
	hl_output_open_db(&out, &r);
	if (out.db_path && !out.store) {
		hl_listen_close(&l);
		hl_symbolizer_free(out.sym);
		hl_report_destroy(&r);
		return HL_EXIT_FAILURE;
	}
	l.idle_timeout_ns = (uint64_t)idle_timeout_ms * 1000000ull;
	l.growth_max = (uint64_t)buffer_cap_kib << 10;
	l.stall_timeout_ns = (uint64_t)stall_timeout_ms * 1000000ull;
	hl_log("daemon: listening on %s", l.path);
	w = hl_daemon_writer_start(&out, &policy);
	rc = daemon_loop(&l, w);
	hl_listen_close(&l);
	hl_run_add_unobserved(&run); /* fork children that never connected */
	settle(&run, w, true);
	hl_daemon_writer_stop(w);
	hl_policy_print_used(&policy, stderr);
	print_suite_summary(&gate, out.run_id, out.db_path);
	if (!rc && policy.gate_options.error_exitcode && hl_gate_failed(&gate, &policy.gate_options))
		rc = (int)policy.gate_options.error_exitcode;
	hl_policy_destroy(&policy);
	hl_gate_destroy(&gate);
	hl_output_close(&out, hl_now_realtime_ns(), rc);
	hl_symbolizer_free(out.sym);
	hl_report_destroy(&r);
	hl_run_destroy(&run);
	return rc;
}
