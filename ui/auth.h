/*
 * ui/auth.h: the web UI's per-start secret token (auth.c).
 */
#ifndef HL_UI_AUTH_H
#define HL_UI_AUTH_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

#define HL_UI_TOKEN_BYTES 24

struct hl_ui_auth {
	char token[2 * HL_UI_TOKEN_BYTES + 1];  /* lowercase hex, secret */
	char cookie[32];                         /* "heapledger-ui-PORT" */
};

/* A fresh token from getrandom() for the server on port. 0 or -errno. */
int hl_ui_auth_init(struct hl_ui_auth *a, uint16_t port);
/* Whether c carries the token, in its query (then *from_query) or its
 * cookie. */
bool hl_ui_auth_check(const struct hl_ui_auth *a, struct MHD_Connection *c, bool *from_query);
/* Adds the cookie that carries the token to later requests. */
void hl_ui_auth_set_cookie(const struct hl_ui_auth *a, struct MHD_Response *r);

#endif /* HL_UI_AUTH_H */
