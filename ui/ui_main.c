/*
 * ui/ui_main.c: heapledger-ui, the web UI's server, which `heapledger ui`
 * runs in its place (reporter/cli/cmd_ui.c): the one executable that links
 * the HTTP library.
 */
#include "ui.h"

int main(int argc, char **argv)
{
	return hl_cmd_ui(argc, argv);
}
