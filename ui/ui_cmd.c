/*
 * ui/ui_cmd.c: `heapledger ui [--db FILE] [--port N] [--listen ADDR] [--open]`:
 * serves the web UI over a database until SIGINT or SIGTERM.
 *
 * It listens on 127.0.0.1 unless --listen names another address (then it
 * warns: whoever reaches that address can read every stored run). The
 * address it prints holds the start's secret token: without it every
 * request is refused (server.c, auth.c).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "args.h"
#include "cli.h"
#include "ui.h"

extern char **environ;

struct ui_options {
	const char *db;
	const char *listen;
	unsigned long port;
	bool open;
};

/* Fills addr from --listen (IPv4 or IPv6 literal) or 127.0.0.1. */
static int make_address(const struct ui_options *o, struct sockaddr_storage *addr,
			bool *loopback)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)addr;
	const char *host = o->listen ? o->listen : "127.0.0.1";

	memset(addr, 0, sizeof(*addr));
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)o->port);
		*loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)o->port);
		*loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
		return 0;
	}
	return -1;
}

/* Opens url in the desktop's browser; a failure only says so. */
static void open_browser(const char *url)
{
	char *args[] = { "xdg-open", (char *)url, NULL };
	pid_t pid;

	if (posix_spawnp(&pid, "xdg-open", NULL, NULL, args, environ)) {
		hl_log("ui: cannot run xdg-open; open %s yourself", url);
		return;
	}
	waitpid(pid, NULL, 0);
}

int hl_cmd_ui(int argc, char **argv)
{
	struct ui_options o = { .port = 8716 };
	const struct hl_arg args[] = {
		HL_ARG_STRING("db", 0, "FILE", &o.db,
			      "the database to show (default: " HL_DEFAULT_DB_TEXT "), opened read-only"),
		HL_ARG_UNSIGNED("port", 0, "N", &o.port, 0, 65535,
				"the port to listen on (default: 8716; 0: any free port)"),
		HL_ARG_STRING("listen", 0, "ADDR", &o.listen,
			      "the address to listen on (default: 127.0.0.1; others warn)"),
		HL_ARG_FLAG("open", 0, &o.open, "open the page in the desktop's browser"),
		HL_ARG_END
	};
	const struct hl_command_line cmd = {
		"ui", "", 0, 0,
		"Serve the web UI over the database until interrupted: runs, one run's\n"
		"leaks and stacks, heap over time, flame graphs, diffs and search.",
		args, "It prints the address it serves on its first line of output, with the\n"
		"secret token every request needs (?token=...): keep it to yourself.\n",
	};
	int rc, first;
	struct sockaddr_storage addr;
	struct hl_ui_server *sv;
	char url[192], host[INET6_ADDRSTRLEN + 2];
	bool loopback;
	uint16_t port;
	sigset_t stop;
	int sig;

	rc = hl_args_parse(&cmd, argc, argv, &first);
	if (rc >= 0)
		return rc;
	if (!o.db && !(o.db = hl_default_db(false)))
		return HL_EXIT_FAILURE;
	if (make_address(&o, &addr, &loopback))
		return hl_args_usage_error(&cmd, "--listen takes an IPv4 or IPv6 address, not '%s'",
					   o.listen);
	/* Block the stop signals before the server's threads start, so they
	 * inherit the mask and sigwait() below gets them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	sv = hl_ui_server_start(o.db, (struct sockaddr *)&addr, loopback, &port);
	if (!sv)
		return HL_EXIT_FAILURE;
	if (addr.ss_family == AF_INET6)
		snprintf(host, sizeof(host), "[%s]", loopback ? "::1" : o.listen);
	else
		snprintf(host, sizeof(host), "%s", o.listen ? o.listen : "127.0.0.1");
	snprintf(url, sizeof(url), "http://%s:%u/?token=%s", host, port, hl_ui_server_token(sv));
	if (!loopback)
		hl_log("ui: warning: listening on %s, not loopback: the token travels"
		       " unencrypted, and whoever sees it can read every run in %s", o.listen, o.db);
	printf("heapledger ui: serving %s at %s\n", o.db, url);
	fflush(stdout);
	if (o.open)
		open_browser(url);
	sigwait(&stop, &sig);
	hl_ui_server_stop(sv);
	return 0;
}
