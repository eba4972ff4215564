/*
 * reporter/main.c: the `heapledger` command: dispatches subcommands, and
 * holds the two small ones (env, report).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "gate.h"
#include "listen.h"
#include "report_formats.h"
#include "report_speedscope.h"
#include "sites_text.h"
#include "store_query.h"
#include "stored_verdict.h"
#include "ui.h"

/* The git top level of the current directory (the nearest directory up
 * with a .git entry) into buf; false if there is none. */
static bool git_toplevel(char *buf, size_t len)
{
	char *slash;

	if (!getcwd(buf, len))
		return false;
	for (;;) {
		size_t n = strlen(buf);
		struct stat st;

		if (n + 6 > len)
			return false;
		strcpy(buf + n, n > 1 ? "/.git" : ".git");
		if (!stat(buf, &st)) {
			buf[n] = 0;
			return true;
		}
		buf[n] = 0;
		slash = strrchr(buf, '/');
		if (!slash || n == 1)
			return false;
		*(slash == buf ? slash + 1 : slash) = 0;
	}
}

/* Prints s single-quoted for sh. */
static void print_quoted(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

/* True when something listens on the Unix socket at path. A connection
 * that sends nothing is closed at once; the daemon forgets it without a
 * report (it never said HELLO). */
static bool socket_listens(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct stat st;
	bool ok;
	int fd;

	if (stat(path, &st) || !S_ISSOCK(st.st_mode) || strlen(path) >= sizeof(addr.sun_path))
		return false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	ok = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
	close(fd);
	return ok;
}

/* `heapledger daemon & eval "$(heapledger env)"; make check`: the daemon
 * may not listen yet when env runs, and a program that finds no listener
 * goes on standalone. So env waits for it, up to wait_ms, and says so when
 * none came: the exports are printed either way. */
static void wait_for_daemon(const char *path, unsigned long wait_ms)
{
	const struct timespec step = { 0, 20 * 1000 * 1000 };

	for (unsigned long waited = 0; !socket_listens(path); waited += 20) {
		if (waited >= wait_ms) {
			hl_log("env: no daemon listens on %s yet: programs report standalone until one"
			       " does (start `heapledger daemon` first)", path);
			return;
		}
		nanosleep(&step, NULL);
	}
}

int hl_cmd_env(int argc, char **argv)
{
	char lib[PATH_MAX], socket_path[2 * PATH_MAX + 2], default_path[PATH_MAX];
	const char *path = NULL;
	char *trace = NULL, *exclude = NULL;
	const char *trace_children = NULL, *children;
	unsigned long wait_ms = 10000;
	const struct hl_arg args[] = {
		HL_ARG_STRING("socket", 0, "PATH", &path,
			      "the socket a `heapledger daemon` listens on (default: the"
			      " daemon's default)"),
		HL_ARG_UNSIGNED("wait-ms", 0, "N", &wait_ms, 0, 3600000,
				"wait at most N ms for a daemon to listen there (default 10000)"),
		HL_TRACE_ARGS(&trace, &exclude),
		HL_TRACE_CHILDREN_ARG(&trace_children, "yes"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"env", "", 0, 0,
		"Print the shell exports that make programs started from this shell report\n"
		"to the daemon listening on PATH (by default the daemon's own default):\n"
		"eval \"$(heapledger env)\".",
		args, NULL,
	};
	int rc, first;

	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (hl_find_hook_library(lib, sizeof(lib))) {
		hl_log("env: cannot find libheapledger.so (set HEAPLEDGER_LIB)");
		return HL_EXIT_FAILURE;
	}
	if (!path) {
		char why[PATH_MAX + 128];

		if (hl_listen_default_path(default_path, sizeof(default_path), why, sizeof(why))) {
			hl_log("env: no default socket: %s", why);
			return HL_EXIT_FAILURE;
		}
		path = default_path;
	}
	/* The socket path must be absolute: programs change directory. */
	if (path[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd))) {
			hl_log("env: cannot get the current directory: %s", strerror(errno));
			return HL_EXIT_FAILURE;
		}
		snprintf(socket_path, sizeof(socket_path), "%s/%s", cwd, path);
	} else {
		snprintf(socket_path, sizeof(socket_path), "%s", path);
	}
	wait_for_daemon(socket_path, wait_ms);
	fputs("export LD_PRELOAD=", stdout);
	print_quoted(lib);
	fputs("\"${LD_PRELOAD:+:$LD_PRELOAD}\"\nexport " HL_ENV_SOCKET "=", stdout);
	print_quoted(socket_path);
	/* Zeros each program's first image writes its pid over: so the hook
	 * tells a program the shell started from the programs it executes
	 * (HELLO origin, children=0), as under `heapledger run`, even when they
	 * are started by a path it does not interpose (posix_spawn, system). */
	fputs("\nexport " HL_ENV_PID "=0000000000\n", stdout);
	children = hl_trace_children_key(trace_children);
	if (children) {
		const char *old = getenv(HL_ENV_OPTIONS);

		fputs("export " HL_ENV_OPTIONS "=", stdout);
		printf("'%s%s'", children, old && *old ? ":" : "");
		if (old && *old)
			print_quoted(old);
		putchar('\n');
	}
	if (trace) {
		fputs("export " HL_ENV_TRACE "=", stdout);
		print_quoted(trace);
		putchar('\n');
	}
	if (exclude) {
		fputs("export " HL_ENV_EXCLUDE "=", stdout);
		print_quoted(exclude);
		putchar('\n');
	}
	free(trace);
	free(exclude);
	return 0;
}

/* report's JSON and text: each process is loaded, written and freed in
 * turn, so the time and memory of a large run go by its largest process. */
struct streamed {
	struct hl_report *r;
	bool json;
	size_t written;
};

static int write_streamed(void *ctx, const struct hl_report_process *p)
{
	struct streamed *w = ctx;

	if (!p && w->json)
		return hl_report_json_begin(w->r, stdout);
	if (!p) {
		printf("heapledger: run %lld (%s)\n", (long long)w->r->run_id, w->r->mode);
		return 0;
	}
	if (w->json)
		return hl_report_json_process(w->r, p, w->written++ == 0, stdout);
	w->written++;
	hl_report_print_process_text(w->r, p, stdout);
	return ferror(stdout) ? -EIO : 0;
}

/* After a run of several processes, its leak sites over all of them (the
 * web UI's leak table by site), the largest REPORT_SITES. */
#define REPORT_SITES 20
static int print_sites(struct hl_store *store, int64_t id)
{
	struct hl_query_page page = { 0, REPORT_SITES, NULL, "lost", true };
	struct hl_run_rows sites;
	int err;

	hl_run_rows_init(&sites);
	err = hl_query_leaks(store, id, &page, &sites);
	if (!err)
		hl_leak_sites_print_text(&sites, sites.leaks_total, stdout);
	hl_run_rows_destroy(&sites);
	return err;
}

static int report_streamed(struct hl_store *store, int64_t id, const struct hl_report_filter *f,
			   struct hl_report *r, const char *format)
{
	struct streamed w = { r, !strcmp(format, "json"), 0 };
	int err = hl_store_load_report_filtered(store, id, f, r, write_streamed, &w);

	if (err)
		return err;
	if (w.json)
		return hl_report_json_end(stdout);
	if (w.written > 1 && !f->pid && !f->program && !f->kinds)
		return print_sites(store, id);
	if (!w.written && (f->pid || f->program || f->kinds))
		printf("heapledger: no process of run %lld matches the filter\n", (long long)id);
	else if (!w.written)
		hl_report_print_text(r, stdout); /* says that no process reported */
	return 0;
}

/* The run's profiles, read by the query layer, in speedscope's format. */
static int write_speedscope(struct hl_store *store, int64_t id, FILE *out)
{
	struct hl_run_profiles run;
	int err;

	hl_run_profiles_init(&run);
	err = hl_query_run_profiles(store, id, &run);
	if (!err)
		err = hl_report_write_speedscope(&run, out);
	hl_run_profiles_destroy(&run);
	return err;
}

int hl_cmd_report(int argc, char **argv)
{
	const char *db = NULL, *format = "text", *sarif_root = NULL, *baseline_arg = NULL;
	unsigned long run_id = 0;
	struct hl_baseline baseline = { 0 };
	char git_top[PATH_MAX];
	struct hl_report_view view = { .show_kinds = HL_SHOW_DEFAULT };
	struct hl_report_filter filter = { 0 };
	struct hl_gate_options gate_options;
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &db, "the database to read (default: " HL_DEFAULT_DB_TEXT ")"),
		HL_ARG_UNSIGNED("run", 0, "ID", &run_id, 1, INT64_MAX, "the run to print (default: the latest)"),
		HL_ARG_UNSIGNED("process", 0, "PID", &filter.pid, 1, UINT32_MAX,
				"only the process PID (each image of it)"),
		HL_ARG_STRING("program", 0, "NAME", &filter.program,
			      "only the processes whose executable or argv[0] is named NAME (a basename)"),
		HL_ARG_CALL("kind", 0, "KINDS", hl_report_parse_kind_filter, &filter.kinds,
			    "only loss records of these kinds (definite, indirect, possible,"
			    " reachable, unknown, suppressed, comma-separated, or all), and the"
			    " processes that have one or a heap error"),
		HL_ARG_CHOICE("format", 0, "text|json|html|speedscope|sarif|junit|valgrind-xml", &format,
			      "text (default), json, html (the web UI's run page as one file),"
			      " speedscope (allocation and leak profiles), sarif (SARIF 2.1.0:"
			      " a result per leak site), junit (a testcase per test program) or"
			      " valgrind-xml (memcheck's XML, protocol 4)"),
		HL_ARG_STRING("sarif-root", 0, "DIR", &sarif_root,
			      "sarif: the source root, whose files are written relative to it"
			      " (uriBaseId SRCROOT; default: the git top level of the current"
			      " directory, if any)"),
		HL_VIEW_ARGS(&view),
		/* junit's failures are the gate's */
		HL_ARG_STRING("baseline", 0, "RUN|FILE", &baseline_arg,
			      "junit: fail only on leak sites this run or baseline file does not"
			      " have, as `gate --baseline` does; sarif: each result's"
			      " baselineState says whether the baseline has its site"),
		HL_GATE_KIND_ARGS(&gate_options),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"report", "", 0, 0,
		"Print a run stored in the database (the latest by default) in one of seven\n"
		"formats: text, JSON, HTML, speedscope, SARIF, JUnit or valgrind's XML.",
		args, NULL,
	};
	struct hl_store *store;
	struct hl_report r;
	int64_t id;
	int err, rc, first;

	hl_gate_options_init(&gate_options);
	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (!db && !(db = hl_default_db(false)))
		return HL_EXIT_FAILURE;
	err = hl_store_open(db, true, &store);
	if (!err && !run_id)
		err = hl_store_latest_run(store, &id);
	else
		id = (int64_t)run_id;
	if (!err && baseline_arg) {
		err = hl_baseline_from_arg(store, "report", baseline_arg, &baseline);
		gate_options.baseline = &baseline;
		if (err) {
			hl_store_close(store);
			return HL_EXIT_FAILURE;
		}
	}
	hl_report_init(&r);
	r.view = view;
	r.gate_kinds = gate_options.kinds; /* SARIF and XML rate records as the gate */
	r.view.kind_filter = filter.kinds;
	if (!err && !strcmp(format, "html"))
		err = hl_ui_write_html_report(store, id, stdout);
	else if (!err && !strcmp(format, "speedscope"))
		err = write_speedscope(store, id, stdout);
	else if (!err && (!strcmp(format, "json") || !strcmp(format, "text")))
		err = report_streamed(store, id, &filter, &r, format);
	else if (!err)
		err = hl_store_load_report_filtered(store, id, &filter, &r, NULL, NULL);
	if (err) {
		if (err != -EIO || !ferror(stdout))
			hl_log("report: %s: %s", db, hl_store_error(store));
	} else if (!strcmp(format, "html") || !strcmp(format, "speedscope") ||
		   !strcmp(format, "json") || !strcmp(format, "text")) {
		/* written above */
	} else if (!strcmp(format, "sarif")) {
		if (!sarif_root && git_toplevel(git_top, sizeof(git_top)))
			sarif_root = git_top;
		err = hl_report_write_sarif(&r, sarif_root, baseline_arg ? &baseline : NULL, stdout);
	} else if (!strcmp(format, "junit")) {
		err = hl_report_write_junit(&r, &gate_options, stdout);
	} else if (!strcmp(format, "valgrind-xml")) {
		err = hl_report_write_valgrind_xml(&r, r.procs, r.nprocs, stdout);
	}
	hl_report_destroy(&r);
	hl_baseline_destroy(&baseline);
	hl_store_close(store);
	if (!err && fflush(stdout) != 0)
		err = -errno;
	return err ? HL_EXIT_FAILURE : 0;
}

/* The commands; hidden ones have no summary. */
static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
} commands[] = {
	{ "run", hl_cmd_run, "run a program with leak tracking and report its leaks" },
	{ "valgrind", hl_cmd_valgrind, "run a program as valgrind would, with valgrind's options" },
	{ "daemon", hl_cmd_daemon, "collect the processes of a whole test suite as one run" },
	{ "env", hl_cmd_env, "print the shell exports that make programs report to a daemon" },
	{ "report", hl_cmd_report, "print a stored run" },
	{ "gate", hl_cmd_gate, "pass or fail a stored run (leaks, heap errors, baseline)" },
	{ "history", hl_cmd_history, "each leak site across the stored runs" },
	{ "diff", hl_cmd_diff, "leak sites new, fixed and changed between two runs" },
	{ "baseline", hl_cmd_baseline, "export a run's leak sites as a baseline file" },
	{ "db", hl_cmd_db, "database maintenance: prune --keep N (the newest N runs)" },
	{ "import", hl_cmd_import, "merge the runs of other databases into this one (by UUID)" },
	{ "ui", hl_cmd_ui_exec, "serve the web UI over the database (runs, leaks, charts, diffs)" },
	{ "bench-ingest", hl_cmd_bench_ingest, NULL }, /* measures ingest speed */
};

int main(int argc, char **argv)
{
	bool version = false;
	const struct hl_arg args[] = {
		HL_ARG_FLAG("version", 'V', &version, "print the version and exit"),
		HL_ARG_END
	};
	char command_list[1024];
	const struct hl_command_line cmd = {
		"", "COMMAND [ARGS...]", 0, -1,
		"A leak-tracking debug allocator: runs programs with libheapledger.so\n"
		"preloaded, reports the blocks they never freed and keeps every run.",
		args, command_list,
	};
	const char *name = argv[0] ? strrchr(argv[0], '/') : NULL;
	int rc, first;
	size_t used;

	/* The name CTest's memcheck and valgrind-minded scripts run. */
	name = name ? name + 1 : argv[0];
	if (name && !strcmp(name, "heapledger-valgrind"))
		return hl_cmd_valgrind(argc, argv);
	used = (size_t)snprintf(command_list, sizeof(command_list),
				"Commands (heapledger COMMAND --help for each):\n");
	for (size_t i = 0; i < HL_ARRAY_SIZE(commands) && used < sizeof(command_list); i++)
		if (commands[i].summary)
			used += (size_t)snprintf(command_list + used, sizeof(command_list) - used,
						 "  %-8s  %s\n", commands[i].name,
						 commands[i].summary);
	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (version) {
		printf("heapledger %s\n", HL_VERSION);
		return fflush(stdout) == 0 ? 0 : HL_EXIT_FAILURE;
	}
	if (first >= argc)
		return hl_args_usage_error(&cmd, "missing COMMAND");
	for (size_t i = 0; i < HL_ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[first], commands[i].name))
			return commands[i].fn(argc - first, argv + first);
	return hl_args_usage_error(&cmd, "unknown command '%s'", argv[first]);
}
