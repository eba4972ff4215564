/*
 * reporter/cli/cmd_ui.c: `heapledger ui` runs the web UI's server,
 * heapledger-ui (ui/ui_main.c), in its place, with the same arguments.
 *
 * The server is an executable of its own so that only it links the HTTP
 * library: libmicrohttpd brings a TLS stack of ten libraries whose loading
 * and relocation was a third of what every `heapledger run` paid before its
 * program started (bench/README.md, "what heapledger run pays before the
 * program starts").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

#define HL_UI_SERVER "heapledger-ui"

int hl_cmd_ui_exec(int argc, char **argv)
{
	char path[PATH_MAX];

	(void)argc;
	if (hl_find_helper(HL_UI_SERVER, path, sizeof(path))) {
		hl_log("ui: the web UI's server %s is not installed (looked beside this "
		       "command and in " HL_INSTALL_LIBEXECDIR "/heapledger); reinstall heapledger",
		       HL_UI_SERVER);
		return HL_EXIT_FAILURE;
	}
	/* Same pid, so whoever started `heapledger ui` can stop it; its usage
	 * and errors still say "heapledger ui" (ui_cmd.c's command line). */
	argv[0] = (char *)HL_UI_SERVER;
	execv(path, argv);
	hl_log("ui: cannot run %s: %s", path, strerror(errno));
	return HL_EXIT_FAILURE;
}
