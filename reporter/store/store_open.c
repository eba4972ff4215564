/*
 * reporter/store/store_open.c: opening a heapledger database: making sure the file
 * is ours before anything is written to it, then migrating it.
 *
 * Order matters, because a database is shared by concurrent runs and may be
 * somebody else's file:
 *  1. A new file is created here, 0600, never through a symbolic link (a
 *     link planted in a shared directory must not send our writes elsewhere).
 *  2. The file must be empty or carry our application_id (a database written
 *     before the id existed is recognised by its `runs` table and version):
 *     a foreign SQLite file is refused untouched, before WAL is switched on.
 *  3. Each migration runs inside BEGIN IMMEDIATE, and user_version is read
 *     inside it: of several runs opening a new file at once, one migrates and
 *     the others find the work done (reading it outside the transaction let
 *     two apply version 1 and all but one fail).
 * A file we may not write (read-only file, directory or file system) is
 * read as it is: read-only, and immutable when even the WAL index cannot be
 * made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema_sql.h"
#include "store.h"
#include "query_int.h"
#include "store_int.h"
#include "util.h"

/* "HLDG": PRAGMA application_id of every heapledger database. */
#define HL_STORE_APPLICATION_ID 0x484c4447
/* How long one statement waits for another connection's lock. */
#define HL_STORE_BUSY_MS 5000

/* ---- errors ------------------------------------------------------------- */

static int sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH: return -EACCES;
	case SQLITE_CANTOPEN: return -ENOENT;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_BUSY:
	case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT: return -EPROTO;
	default: return -EIO;
	}
}

/* The errno of a failed read or write as the file itself kept it: SQLite's
 * own system errno is taken after its cleanup calls and is often 0 then (a
 * write past RLIMIT_FSIZE said EIO, not EFBIG). The WAL (or journal) first,
 * where the writes go. */
static int file_errno(sqlite3 *db)
{
	sqlite3_file *f = NULL;
	int e = 0;

	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &f) == SQLITE_OK &&
	    f && f->pMethods && f->pMethods->xFileControl)
		f->pMethods->xFileControl(f, SQLITE_FCNTL_LAST_ERRNO, &e);
	if (e <= 0 && sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &e) != SQLITE_OK)
		e = 0;
	return e > 0 ? e : 0;
}

int hl_store_fail(struct hl_store *s, int rc, const char *what)
{
	/* The system's own reason when there is one: a read-only file system
	 * is EROFS, not the ENOENT that SQLITE_CANTOPEN suggests. */
	int sys = s->db ? sqlite3_system_errno(s->db) : 0;
	int code = rc & 0xff;

	if (sys <= 0 && code == SQLITE_IOERR && s->db)
		sys = file_errno(s->db);

	snprintf(s->error, sizeof(s->error), "%s: %s", what,
		 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
	if (code == SQLITE_BUSY || code == SQLITE_LOCKED || code == SQLITE_FULL)
		return sqlite_errno(rc);
	return sys > 0 ? -sys : sqlite_errno(rc);
}

const char *hl_store_error(const struct hl_store *s)
{
	return s ? s->error : "cannot allocate the store";
}

static int exec_what(struct hl_store *s, const char *sql, const char *what)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : hl_store_fail(s, rc, what);
}

static int query_int(struct hl_store *s, const char *sql, int *out)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return hl_store_fail(s, rc, "reading the database");
	rc = sqlite3_step(st);
	*out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	       hl_store_fail(s, rc, "reading the database");
}

/* ---- whose file is it ------------------------------------------------------ */

#define MIGRATE_MARK "-- migrate "

int hl_store_schema_version(void)
{
	int version = 0;

	for (const char *p = strstr(hl_schema_sql, MIGRATE_MARK); p;
	     p = strstr(p + 1, MIGRATE_MARK))
		version = atoi(p + strlen(MIGRATE_MARK));
	return version;
}

/* 0 if the file is empty or a heapledger database, -EPROTO (with a message)
 * for anything else. Reads only, in one statement: one snapshot, so a
 * heapledger run creating the same new database at this moment is seen
 * either before its first migration or after it, never half way (read
 * apart, the id could come from before and the tables from after). */
static int check_ours(struct hl_store *s, const char *path)
{
	static const char sql[] =
		"SELECT (SELECT application_id FROM pragma_application_id),"
		" (SELECT user_version FROM pragma_user_version),"
		" (SELECT count(*) FROM sqlite_schema),"
		" (SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'runs')";
	int app = 0, version = 0, tables = 0, runs = 0, rc;
	sqlite3_stmt *st;

	rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return hl_store_fail(s, rc, "reading the database");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		app = sqlite3_column_int(st, 0);
		version = sqlite3_column_int(st, 1);
		tables = sqlite3_column_int(st, 2);
		runs = sqlite3_column_int(st, 3);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return hl_store_fail(s, rc, "reading the database");
	if (app == HL_STORE_APPLICATION_ID || (app == 0 && tables == 0 && version == 0) ||
	    (app == 0 && version > 0 && runs == 1)) /* written before the id */
		return 0;
	snprintf(s->error, sizeof(s->error),
		 "%s is not a heapledger database (application_id %#x, %d tables);"
		 " it was left untouched", path, (unsigned)app, tables);
	return -EPROTO;
}

/* ---- migrations ----------------------------------------------------------- */

/* The section of schema.sql that makes version `version`, as SQL that also
 * records the version and our id; malloc'd. */
static char *section_sql(int version)
{
	for (const char *p = strstr(hl_schema_sql, MIGRATE_MARK); p;
	     p = strstr(p + 1, MIGRATE_MARK)) {
		const char *end;
		size_t len;
		char *sql;

		if (atoi(p + strlen(MIGRATE_MARK)) != version)
			continue;
		end = strstr(p + 1, MIGRATE_MARK);
		len = end ? (size_t)(end - p) : strlen(p);
		sql = hl_xmalloc(len + 96);
		memcpy(sql, p, len);
		snprintf(sql + len, 96, ";PRAGMA user_version=%d;PRAGMA application_id=%d;",
			 version, HL_STORE_APPLICATION_ID);
		return sql;
	}
	return NULL;
}

/* One step under the write lock: reads where the file stands and applies
 * the next section (or just our id). *done when nothing was left to do. */
static int migrate_step(struct hl_store *s, bool *done)
{
	int have, app, err = exec_what(s, "BEGIN IMMEDIATE", "locking the database to migrate it");
	char msg[96], *sql;

	if (err)
		return err;
	if ((err = query_int(s, "PRAGMA user_version", &have)) ||
	    (err = query_int(s, "PRAGMA application_id", &app)))
		goto out_rollback;
	*done = have == hl_store_schema_version() && app == HL_STORE_APPLICATION_ID;
	if (have > hl_store_schema_version()) {
		snprintf(s->error, sizeof(s->error),
			 "database schema version %d is newer than this heapledger (%d)",
			 have, hl_store_schema_version());
		err = -EPROTO;
		goto out_rollback;
	}
	if (!*done) {
		if (have < hl_store_schema_version()) {
			sql = section_sql(have + 1);
		} else {
			sql = hl_xmalloc(64);
			snprintf(sql, 64, "PRAGMA application_id=%d", HL_STORE_APPLICATION_ID);
		}
		snprintf(msg, sizeof(msg), "migrating to schema version %d", have + 1);
		err = sql ? exec_what(s, sql, msg) : -EPROTO;
		free(sql);
		if (err)
			goto out_rollback;
	}
	return exec_what(s, "COMMIT", "committing a migration");
out_rollback:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

/* Foreign keys are off while the sections run: a section that rebuilds a
 * table (migrate 12) drops the old one while other tables still name it,
 * which SQLite's procedure for changing a table's shape does with them off. */
static int migrate(struct hl_store *s)
{
	bool done = false;
	int err = exec_what(s, "PRAGMA foreign_keys=OFF", "setting up the connection");

	while (!done && !err)
		err = migrate_step(s, &done);
	if (!err)
		err = exec_what(s, "PRAGMA foreign_keys=ON", "setting up the connection");
	return err;
}

/* ---- symbol keys ------------------------------------------------------------ */

static uint64_t key_mix(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull; /* FNV-1a */
	return h;
}

/* A field: a tag saying whether it is there, then its bytes and a 0. */
static uint64_t key_text(uint64_t h, const char *v)
{
	unsigned char tag = v != NULL;

	h = key_mix(h, &tag, 1);
	return v ? key_mix(h, v, strlen(v) + 1) : h;
}

int64_t hl_symbol_key(const char *module, bool has_offset, uint64_t offset,
		      const char *function, const char *file, uint32_t line)
{
	uint64_t h = 0xcbf29ce484222325ull;
	unsigned char tag = has_offset;

	h = key_text(h, module);
	h = key_mix(h, &tag, 1);
	if (has_offset)
		h = key_mix(h, &offset, sizeof(offset));
	h = key_text(h, function);
	h = key_text(h, file);
	h = key_mix(h, &line, sizeof(line));
	h ^= h >> 31; /* FNV's last bytes reach only the low bits */
	h *= 0x9e3779b97f4a7c15ull;
	return (int64_t)(h ^ (h >> 29));
}

/* hl_symbol_key(module, module_offset, function, file, line) in SQL, for
 * the migration that merges version 11's per-run symbols. */
static void sql_symbol_key(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	const char *module = (const char *)sqlite3_value_text(v[0]);
	bool has_offset = sqlite3_value_type(v[1]) != SQLITE_NULL;

	(void)argc;
	sqlite3_result_int64(ctx, hl_symbol_key(module, has_offset,
			     (uint64_t)sqlite3_value_int64(v[1]),
			     (const char *)sqlite3_value_text(v[2]),
			     (const char *)sqlite3_value_text(v[3]),
			     (uint32_t)sqlite3_value_int64(v[4])));
}

/* hl_bytes(v), an aggregate: the text made of the byte values v of its rows
 * in order, NULL when one is not an integer 1-255 (HL_SQL_ARGV_WORD). */
struct sql_bytes {
	char *buf;
	size_t n, cap;
	bool bad;  /* a value that is not a byte 1-255 */
};

static void sql_bytes_step(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct sql_bytes *b = sqlite3_aggregate_context(ctx, sizeof(*b));
	sqlite3_int64 byte = sqlite3_value_int64(v[0]);

	(void)argc;
	if (!b || b->bad)
		return;
	if (sqlite3_value_type(v[0]) != SQLITE_INTEGER || byte < 1 || byte > 255) {
		b->bad = true;
		return;
	}
	hl_grow((void **)&b->buf, &b->cap, b->n + 1, 1);
	b->buf[b->n++] = (char)byte;
}

static void sql_bytes_final(sqlite3_context *ctx)
{
	struct sql_bytes *b = sqlite3_aggregate_context(ctx, 0);

	if (b && b->bad)
		sqlite3_result_null(ctx);
	else if (b && b->n)
		sqlite3_result_text(ctx, b->buf, (int)b->n, SQLITE_TRANSIENT);
	else
		sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
	if (b)
		free(b->buf);
}

/* ---- opening ----------------------------------------------------------------- */

static int open_db(struct hl_store *s, const char *name, int flags)
{
	int rc;

	if (s->db)
		sqlite3_close(s->db);
	s->db = NULL;
	rc = sqlite3_open_v2(name, &s->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK && (flags & SQLITE_OPEN_URI) && !strncmp(name, "file:", 5))
		name += 5; /* the message names the file */
	if (rc != SQLITE_OK)
		return hl_store_fail(s, rc, name);
	sqlite3_busy_timeout(s->db, HL_STORE_BUSY_MS);
	rc = sqlite3_create_function(s->db, "hl_symbol_key", 5,
				     SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_symbol_key,
				     NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(s->db, "hl_bytes", 1,
					     SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
					     NULL, NULL, sql_bytes_step, sql_bytes_final);
	if (rc == SQLITE_OK)
		rc = hl_query_register_classes(s->db); /* the query layer's class words */
	return rc == SQLITE_OK ? 0 : hl_store_fail(s, rc, name);
}

/* Creates path 0600 if it does not exist; a symbolic link is refused. */
static int create_private(struct hl_store *s, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	struct stat st;

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno == EEXIST && lstat(path, &st) == 0 && !S_ISLNK(st.st_mode))
		return 0;
	if (errno == EEXIST || errno == ELOOP) {
		snprintf(s->error, sizeof(s->error),
			 "%s is a symbolic link; heapledger writes only to a plain file", path);
		return -ELOOP;
	}
	snprintf(s->error, sizeof(s->error), "%s: %s", path, strerror(errno));
	return -errno;
}

/* SQLite quietly opens a file it cannot write read-only, and its first write
 * then says "attempt to write a readonly database" with EACCES; the reason
 * the user needs (EROFS, EACCES) is the file's or its directory's. */
static int writable(struct hl_store *s, const char *path)
{
	char *dir, *slash;
	int err = 0;

	if (sqlite3_db_readonly(s->db, "main") != 1)
		return 0;
	if (access(path, W_OK) != 0)
		err = -errno;
	else {
		dir = hl_xstrdup(path);
		slash = strrchr(dir, '/');
		if (slash)
			slash[slash == dir] = 0;
		if (access(slash ? dir : ".", W_OK) != 0)
			err = -errno;
		free(dir);
	}
	if (!err)
		err = -EACCES;
	snprintf(s->error, sizeof(s->error), "%s cannot be written", path);
	return err;
}

static int open_for_writing(struct hl_store *s, const char *path)
{
	int err = create_private(s, path);
	/* As a URI, so that `import` can ATTACH another file read-only
	 * (store_import.c); the path is escaped, so any name is the file's. */
	char *uri = hl_store_file_uri(path, "");

	if (!err)
		err = open_db(s, uri, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_URI);
	free(uri);
	if (!err)
		err = writable(s, path);
	if (!err)
		err = check_ours(s, path);
	if (!err)
		err = exec_what(s, "PRAGMA journal_mode=WAL", "switching to WAL");
	/* synchronous=NORMAL: in WAL mode a commit is not synced, only the
	 * checkpoint is, so a power loss may take the last runs with it but
	 * never corrupts the file; for a debugging history that is enough, and
	 * it leaves the checkpoint's syncs as the store's only ones. The
	 * connection still checkpoints when it closes: the .db file alone must
	 * hold every run, since users copy it (CI artifacts, import) and a
	 * reader that cannot write its directory reads it as immutable, without
	 * the -wal file. temp_store=MEMORY: the journal of each process's
	 * savepoint (store.h, batches) stays in memory; in a temporary file it
	 * was 13k writes for cc1's run (store CPU 55-70 -> 48-50 ms). */
	if (!err)
		err = exec_what(s, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"
				" PRAGMA temp_store=MEMORY", "setting up the connection");
	if (!err)
		err = migrate(s);
	return err;
}

/* "file:<path>?<query>", the path %-escaped as a URI needs. */
char *hl_store_file_uri(const char *path, const char *query)
{
	char *uri = hl_xmalloc(strlen(path) * 3 + strlen(query) + 8), *o = uri;

	o += sprintf(o, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p == '%' || *p == '?' || *p == '#' || *p < 0x21 || *p > 0x7e)
			o += sprintf(o, "%%%02X", *p);
		else
			*o++ = (char)*p;
	}
	sprintf(o, "%s%s", *query ? "?" : "", query);
	return uri;
}

/* Read-only; a file in a directory we cannot write (no WAL index possible)
 * is read as immutable. Sets *version. */
static int open_for_reading(struct hl_store *s, const char *path, int *version)
{
	int err = open_db(s, path, SQLITE_OPEN_READONLY);

	if (!err)
		err = check_ours(s, path);
	if (err && err != -EPROTO && access(path, R_OK) == 0) {
		char *uri = hl_store_file_uri(path, "immutable=1");

		err = open_db(s, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
		free(uri);
		if (!err)
			err = check_ours(s, path);
	}
	if (!err)
		err = query_int(s, "PRAGMA user_version", version);
	return err;
}

int hl_store_open(const char *path, bool readonly, struct hl_store **out)
{
	struct hl_store *s = hl_xcalloc(1, sizeof(*s));
	int version, err;

	*out = s;
	hl_map_init(&s->symbols);
	hl_map_init(&s->sites);
	hl_map_init(&s->stacks);
	for (int k = 0; k < HL_STORE_SETS; k++)
		hl_map_init(&s->sets[k]);
	hl_frame_tree_init(&s->tree);
	if (!readonly)
		return open_for_writing(s, path);
	err = open_for_reading(s, path, &version);
	if (err || version == hl_store_schema_version())
		return err;
	if (version > hl_store_schema_version()) {
		snprintf(s->error, sizeof(s->error),
			 "%s: schema version %d, this heapledger reads %d", path,
			 version, hl_store_schema_version());
		return -EPROTO;
	}
	/* An older database: reading it means upgrading it first. */
	err = open_for_writing(s, path);
	if (err) {
		char why[sizeof(s->error)];

		snprintf(why, sizeof(why), "%s", s->error);
		snprintf(s->error, sizeof(s->error),
			 "%.200s: schema version %d must be upgraded to %d, which needs write"
			 " access: %.200s", path, version, hl_store_schema_version(), why);
	}
	return err;
}

int hl_store_open_strict_ro(const char *path, struct hl_store **out)
{
	struct hl_store *s = hl_xcalloc(1, sizeof(*s));
	int version, want = hl_store_schema_version();
	int err;

	*out = s;
	hl_map_init(&s->symbols);
	hl_map_init(&s->sites);
	hl_map_init(&s->stacks);
	for (int k = 0; k < HL_STORE_SETS; k++)
		hl_map_init(&s->sets[k]);
	hl_frame_tree_init(&s->tree);
	err = open_for_reading(s, path, &version);
	if (err || version == want)
		return err;
	snprintf(s->error, sizeof(s->error),
		 "%.200s: schema version %d is %s than this heapledger's (%d); it is opened"
		 " read-only, so it is not %s: %s", path, version,
		 version < want ? "older" : "newer", want,
		 version < want ? "upgraded" : "read",
		 version < want ? "upgrade a copy with `heapledger report --db COPY`"
				: "use a newer heapledger");
	return -EPROTO;
}

void hl_store_close(struct hl_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < HL_STORE_STATEMENTS; i++)
		sqlite3_finalize(s->statements[i]);
	sqlite3_close(s->db);
	hl_map_destroy(&s->symbols);
	hl_map_destroy(&s->sites);
	hl_map_destroy(&s->stacks);
	for (int k = 0; k < HL_STORE_SETS; k++)
		hl_map_destroy(&s->sets[k]);
	hl_frame_tree_destroy(&s->tree);
	free(s->frame_ids);
	free(s->orphans);
	free(s);
}
