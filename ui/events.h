/*
 * ui/events.h: server-sent events of a run still being written (events.c).
 */
#ifndef HL_UI_EVENTS_H
#define HL_UI_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct MHD_Connection;
struct MHD_Response;
struct hl_ui_events;

/* The watcher thread over db; NULL after saying why it could not start. */
struct hl_ui_events *hl_ui_events_start(const char *db);
/* Ends every stream (resumes the suspended ones: libmicrohttpd must not
 * stop with a connection suspended) and the watcher; before
 * MHD_stop_daemon. hl_ui_events_free after it. */
void hl_ui_events_close_all(struct hl_ui_events *ev);
void hl_ui_events_free(struct hl_ui_events *ev);

/* The event stream of run_id for connection c, read through store (the
 * calling server thread's); NULL with *status and error set when the run
 * cannot be read (404: no such run). */
struct MHD_Response *hl_ui_events_stream(struct hl_ui_events *ev, struct hl_store *store,
					 struct MHD_Connection *c, int64_t run_id, int *status,
					 char *error, size_t error_len);

#endif /* HL_UI_EVENTS_H */
