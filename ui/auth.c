/*
 * ui/auth.c: who may read the web UI: whoever holds the secret token made
 * at each start and printed in the address (`?token=HEX`), as Jupyter does.
 * Any local user can connect to a loopback port, so without it anyone on
 * the machine could read another user's runs (argv, cwd, every symbol).
 *
 * A request carries the token in its query (a link, curl) or in the cookie
 * set on the answer to such a request, so the page's own requests (scripts,
 * the API, the event stream) need no token in their address. The cookie's
 * name holds the port: two servers on one host keep their own. Tokens are
 * compared in constant time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "auth.h"

int hl_ui_auth_init(struct hl_ui_auth *a, uint16_t port)
{
	unsigned char raw[HL_UI_TOKEN_BYTES];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -errno;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(a->token + 2 * i, 3, "%02x", raw[i]);
	snprintf(a->cookie, sizeof(a->cookie), "heapledger-ui-%u", port);
	return 0;
}

/* Equal length and bytes, in a time that does not depend on where they
 * differ. */
static bool token_equal(const char *want, const char *got)
{
	size_t n = strlen(want);
	unsigned char diff = 0;

	if (!got || strlen(got) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(want[i] ^ got[i]);
	return diff == 0;
}

bool hl_ui_auth_check(const struct hl_ui_auth *a, struct MHD_Connection *c, bool *from_query)
{
	const char *query = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	const char *cookie = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, a->cookie);

	*from_query = token_equal(a->token, query);
	return *from_query || token_equal(a->token, cookie);
}

void hl_ui_auth_set_cookie(const struct hl_ui_auth *a, struct MHD_Response *r)
{
	char value[sizeof(a->cookie) + sizeof(a->token) + 64];

	/* HttpOnly: no script reads it; SameSite=Strict: no other site's page
	 * sends it. */
	snprintf(value, sizeof(value), "%s=%s; Path=/; HttpOnly; SameSite=Strict", a->cookie,
		 a->token);
	MHD_add_response_header(r, "Set-Cookie", value);
}
