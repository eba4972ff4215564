/*
 * ui/server.c: the web UI's HTTP server (libmicrohttpd): GET of the
 * embedded assets and of the JSON API (api.c), nothing else.
 *
 * Safety: only the holder of the start's secret token is answered (auth.c;
 * others get 403); only names in the embedded asset table are served, so
 * no path can reach a file (there is no file access at all); every answer
 * carries a Content-Security-Policy that allows scripts and data from this
 * origin only; on loopback, a request whose Host is not this server's
 * loopback address is refused (a DNS-rebinding page cannot read the
 * database); the database is opened read-only, one connection per server
 * thread (a pthread key closes it when the thread ends), so no two threads
 * share one.
 *
 * Slow clients: connections are watched by epoll, not held by a thread, so
 * a connection that sends its request a byte at a time costs one descriptor
 * and no worker; the limit on connections is raised with the descriptor
 * limit (CONNECTIONS_MAX), and one idle for IDLE_TIMEOUT_S is closed.
 *
 * A database that does not exist yet (or is an empty file) is not an
 * error: the runs page says how to make the first run, and the database is
 * read once a run has written it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "events.h"
#include "store_query.h"
#include "ui.h"
#include "util.h"

#define SERVER_THREADS 2
/* Connections at most, if the descriptor limit allows (it is raised to its
 * hard limit at start); each costs a descriptor and its buffer
 * (libmicrohttpd's 32 KiB memory pool). */
#define CONNECTIONS_MAX 4096u
#define CONNECTIONS_RESERVED_FDS 64u
#define IDLE_TIMEOUT_S 15u

/* Scripts, styles and data from this origin only; d3 and uPlot set inline
 * style properties, which 'unsafe-inline' for styles allows (scripts stay
 * strict). */
#define CSP "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline';" \
	" img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none';" \
	" frame-ancestors 'none'"

struct hl_ui_server {
	struct MHD_Daemon *daemon;
	char *db;
	bool loopback;
	uint16_t port;
	pthread_key_t store_key;
	struct hl_ui_events *events;
	struct hl_ui_auth auth;
};

static void store_destroy(void *store)
{
	hl_store_close(store);
}

/* This thread's connection, opened on its first request. */
/* Whether db holds anything yet: a missing or empty file is a database
 * no run has written to. */
static bool db_exists(const char *db)
{
	struct stat st;

	return stat(db, &st) == 0 && st.st_size > 0;
}

static struct hl_store *thread_store(struct hl_ui_server *sv)
{
	struct hl_store *s = pthread_getspecific(sv->store_key);

	if (s)
		return s;
	if (!db_exists(sv->db))
		return NULL;
	if (hl_store_open_strict_ro(sv->db, &s)) {
		hl_log("ui: %s", hl_store_error(s));
		hl_store_close(s);
		return NULL;
	}
	pthread_setspecific(sv->store_key, s);
	return s;
}

static enum MHD_Result respond(struct MHD_Connection *c, int status, struct MHD_Response *r,
			    const char *type, bool cache)
{
	enum MHD_Result ok;

	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Content-Security-Policy", CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Cache-Control", cache ? "max-age=300" : "no-store");
	ok = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, json_t *body)
{
	char *text = json_dumps(body, JSON_COMPACT);
	struct MHD_Response *r;

	json_decref(body);
	if (!text)
		text = hl_xstrdup("{\"error\":\"cannot encode the answer\"}"), status = 500;
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	return respond(c, status, r, "application/json", false);
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *message)
{
	return send_json(c, status, json_pack("{ss}", "error", message));
}

static const char *get_param(const char *name, void *cls)
{
	return MHD_lookup_connection_value(cls, MHD_GET_ARGUMENT_KIND, name);
}

/* On loopback, Host must name this server by a loopback name. */
static bool host_allowed(struct hl_ui_server *sv, struct MHD_Connection *c)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	static const char *const names[] = { "127.0.0.1", "localhost", "[::1]" };
	char want[64];

	if (!sv->loopback)
		return true;
	if (!host)
		return false;
	for (size_t i = 0; i < HL_ARRAY_SIZE(names); i++) {
		snprintf(want, sizeof(want), "%s:%u", names[i], sv->port);
		if (!strcmp(host, want))
			return true;
	}
	return false;
}

/* An asset; the page opened by the address with the token sets the cookie
 * that lets its own requests in. */
static enum MHD_Result serve_asset(struct hl_ui_server *sv, struct MHD_Connection *c,
				   const char *name, bool set_cookie)
{
	const struct hl_ui_asset *a = hl_ui_asset_find(*name ? name : "index.html");
	struct MHD_Response *r;

	if (!a)
		return send_error(c, 404, "no such page");
	r = MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (set_cookie)
		hl_ui_auth_set_cookie(&sv->auth, r);
	return respond(c, 200, r, a->content_type, !set_cookie);
}

/* "runs/ID/events": the run's id; anything else: false. */
static bool events_path(const char *path, int64_t *run_id)
{
	char *end;
	long long v;

	if (strncmp(path, "runs/", 5) || path[5] < '0' || path[5] > '9')
		return false;
	errno = 0;
	v = strtoll(path + 5, &end, 10);
	if (errno || strcmp(end, "/events"))
		return false;
	*run_id = v;
	return true;
}

static enum MHD_Result serve_events(struct hl_ui_server *sv, struct hl_store *s,
				    struct MHD_Connection *c, int64_t run_id)
{
	char error[256];
	int status;
	struct MHD_Response *r = hl_ui_events_stream(sv->events, s, c, run_id, &status,
						    error, sizeof(error));

	if (!r)
		return send_error(c, status, error);
	return respond(c, status, r, "text/event-stream", false);
}

static enum MHD_Result serve_api(struct hl_ui_server *sv, struct MHD_Connection *c,
				 const char *path)
{
	struct hl_store *s = thread_store(sv);
	json_t *body;
	int64_t run_id;
	int status;

	if (!s && !db_exists(sv->db)) {
		/* No run yet: an empty list of runs says so; nothing else exists. */
		if (!strcmp(path, "runs"))
			return send_json(c, 200, json_pack("{sis[]sb}", "total", 0, "rows",
							   "no_database", 1));
		return send_error(c, 404, "no run has been stored yet");
	}
	if (!s)
		return send_error(c, 503, "the database cannot be opened (see the server's log)");
	if (events_path(path, &run_id))
		return serve_events(sv, s, c, run_id);
	status = hl_ui_api(s, path, get_param, c, &body);
	return send_json(c, status, body);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **state)
{
	struct hl_ui_server *sv = cls;
	bool from_query;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return send_error(c, 405, "only GET");
	if (*upload_size)
		return send_error(c, 400, "a GET has no body");
	if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host") &&
	    strcmp(version, MHD_HTTP_VERSION_1_0))
		return send_error(c, 400, "HTTP/1.1 needs a Host header");
	if (!host_allowed(sv, c))
		return send_error(c, 403, "this server answers only to its loopback address");
	if (!hl_ui_auth_check(&sv->auth, c, &from_query))
		return send_error(c, 403, "open the address with the token that `heapledger ui`"
				  " printed when it started (http://HOST:PORT/?token=...)");
	if (url[0] != '/')
		return send_error(c, 400, "the path must start with /");
	if (!strncmp(url, "/api/", 5))
		return serve_api(sv, c, url + 5);
	return serve_asset(sv, c, url + 1, from_query);
}

/* "127.0.0.1:8716" or "[::1]:8716" of addr, for messages. */
static void address_text(const struct sockaddr *addr, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port;

	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)addr;

		inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
		port = ntohs(v6->sin6_port);
		snprintf(out, len, "[%s]:%u", host, port);
		return;
	}
	inet_ntop(AF_INET, &((const struct sockaddr_in *)addr)->sin_addr, host, sizeof(host));
	port = ntohs(((const struct sockaddr_in *)addr)->sin_port);
	snprintf(out, len, "%s:%u", host, port);
}

/* A listening socket on addr, its port in *port; or -1 after saying why
 * and what to do about it. */
static int listen_on(const struct sockaddr *addr, uint16_t *port)
{
	socklen_t len = addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						     : sizeof(struct sockaddr_in);
	struct sockaddr_storage bound;
	char where[INET6_ADDRSTRLEN + 16];
	int fd, one = 1, err;

	address_text(addr, where, sizeof(where));
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		hl_log("ui: cannot make a socket for %s: %s", where, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, addr, len) || listen(fd, 128))
		goto out_close_fd;
	len = sizeof(bound);
	if (getsockname(fd, (struct sockaddr *)&bound, &len))
		goto out_close_fd;
	*port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						  : ((struct sockaddr_in *)&bound)->sin_port);
	return fd;
out_close_fd:
	err = errno;
	close(fd);
	if (err == EADDRINUSE)
		hl_log("ui: cannot listen on %s: the port is in use (another `heapledger ui`?);"
		       " pick another with --port N, or --port 0 for any free port", where);
	else if (err == EACCES)
		hl_log("ui: cannot listen on %s: %s (ports below 1024 need privileges);"
		       " pick another with --port N, or --port 0 for any free port", where,
		       strerror(err));
	else
		hl_log("ui: cannot listen on %s: %s%s", where, strerror(err),
		       err == EADDRNOTAVAIL ? " (--listen names an address of this machine)" : "");
	return -1;
}

/* How many connections to accept at once: the descriptor limit raised as
 * far as it goes, less a reserve for the database and the program. */
static unsigned connection_limit(void)
{
	struct rlimit rl;
	rlim_t fds;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 256;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	fds = rl.rlim_cur;
	if (fds <= 2 * CONNECTIONS_RESERVED_FDS)
		return (unsigned)(fds / 2);
	fds -= CONNECTIONS_RESERVED_FDS;
	return fds < CONNECTIONS_MAX ? (unsigned)fds : CONNECTIONS_MAX;
}

struct hl_ui_server *hl_ui_server_start(const char *db, const struct sockaddr *addr,
					 bool loopback, uint16_t *port)
{
	struct hl_ui_server *sv;
	struct hl_store *probe;
	int fd;

	/* Fail now, with the reason, rather than on the first request. */
	if (db_exists(db) && hl_store_open_strict_ro(db, &probe)) {
		hl_log("ui: %s", hl_store_error(probe));
		hl_store_close(probe);
		return NULL;
	}
	if (db_exists(db))
		hl_store_close(probe);
	fd = listen_on(addr, port);
	if (fd < 0)
		return NULL;
	sv = hl_xcalloc(1, sizeof(*sv));
	sv->port = *port;
	if (hl_ui_auth_init(&sv->auth, sv->port)) {
		hl_log("ui: cannot make a secret token: %s", strerror(errno));
		close(fd);
		free(sv);
		return NULL;
	}
	sv->db = hl_xstrdup(db);
	sv->loopback = loopback;
	pthread_key_create(&sv->store_key, store_destroy);
	sv->events = hl_ui_events_start(db);
	if (!sv->events) {
		close(fd);
		hl_ui_server_stop(sv);
		return NULL;
	}
	/* Event streams are suspended while they have nothing to say
	 * (events.c); ITC wakes the polling thread when one is resumed. */
	sv->daemon = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
				      MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC |
				      (addr->sa_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				      0, NULL, NULL, handle, sv,
				      MHD_OPTION_LISTEN_SOCKET, fd,
				      MHD_OPTION_THREAD_POOL_SIZE, (unsigned)SERVER_THREADS,
				      MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S,
				      MHD_OPTION_CONNECTION_LIMIT, connection_limit(),
				      MHD_OPTION_END);
	if (!sv->daemon) {
		hl_log("ui: cannot serve on port %u: %s", sv->port, strerror(errno));
		close(fd);
		hl_ui_server_stop(sv);
		return NULL;
	}
	return sv;
}

const char *hl_ui_server_token(const struct hl_ui_server *sv)
{
	return sv->auth.token;
}

void hl_ui_server_stop(struct hl_ui_server *sv)
{
	if (!sv)
		return;
	hl_ui_events_close_all(sv->events);
	if (sv->daemon)
		MHD_stop_daemon(sv->daemon);
	hl_ui_events_free(sv->events);
	pthread_key_delete(sv->store_key);
	free(sv->db);
	free(sv);
}
