/*
 * reporter/cli/output.c: the database side of reporting, shared by `run` and
 * `daemon`. A database that cannot be opened is reported once, clearly, and
 * then left alone: the text report matters more. A process that cannot be
 * stored is named; a lock held by another connection is waited out (with
 * growing pauses) rather than taken as a failure.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static void db_failed(struct hl_output *out, int err, const char *what)
{
	hl_log("database %s: %s failed: %s (%s)", out->db_path, what,
	       hl_store_error(out->store), strerror(-err));
	hl_store_close(out->store);
	out->store = NULL;
	out->run_id = 0;
}

/* After an -EBUSY (another connection kept the lock past the busy timeout):
 * waits a little longer each time and returns true, until the deadline
 * (out->retry_until_ns, read atomically since a daemon's main thread moves
 * it; 0 means HL_OUTPUT_RETRY_NS after the first try). */
static bool retry_busy(struct hl_output *out, int err, uint64_t *deadline, unsigned *delay_ms)
{
	uint64_t until = __atomic_load_n(&out->retry_until_ns, __ATOMIC_RELAXED);
	uint64_t now = hl_now_monotonic_ns();

	if (err != -EBUSY)
		return false;
	if (!*deadline)
		*deadline = until ? until : now + HL_OUTPUT_RETRY_NS;
	if (until && until < *deadline)
		*deadline = until;
	if (now >= *deadline)
		return false;
	usleep(*delay_ms * 1000u);
	*delay_ms = *delay_ms * 2 > 1000 ? 1000 : *delay_ms * 2;
	return true;
}

static void output_batch(struct hl_output *out)
{
	uint64_t deadline = 0;
	unsigned delay_ms = 20;
	int err;

	if (!out->store)
		return;
	do
		err = hl_store_batch_begin(out->store);
	while (retry_busy(out, err, &deadline, &delay_ms));
	/* without it, each process is a transaction of its own */
	if (err)
		hl_log("database %s: %s (%s); storing process by process", out->db_path,
		       hl_store_error(out->store), strerror(-err));
}

void hl_output_open_db(struct hl_output *out, const struct hl_report *r)
{
	uint64_t deadline = 0;
	unsigned delay_ms = 20;
	int err;

	if (!out->db_path)
		return;
	err = 0;
	while (!out->store || err) {
		hl_store_close(out->store);
		err = hl_store_open(out->db_path, false, &out->store);
		if (!retry_busy(out, err, &deadline, &delay_ms))
			break;
	}
	if (err) {
		db_failed(out, err, "open");
		return;
	}
	if (out->batch)
		output_batch(out);
	do
		err = hl_store_run_begin(out->store, r, &out->run_id);
	while (retry_busy(out, err, &deadline, &delay_ms));
	if (err)
		db_failed(out, err, "starting the run");
}


int hl_output_store(struct hl_output *out, struct hl_process *p)
{
	uint64_t deadline = 0;
	unsigned delay_ms = 20;
	int err;

	if (!out->store)
		return -ENODEV;
	do
		err = hl_store_process(out->store, out->run_id, p, out->sym);
	while (retry_busy(out, err, &deadline, &delay_ms));
	if (err) {
		/* This process only: the next one may well be stored. */
		hl_log("database %s: process %u (%s) not stored: %s (%s)", out->db_path,
		       p->pid, p->exe, hl_store_error(out->store), strerror(-err));
		return err;
	}
	out->stored++;
	return 0;
}

void hl_output_close(struct hl_output *out, uint64_t ended_ns, int exit_code)
{
	uint64_t deadline = 0;
	unsigned delay_ms = 20;
	int err;

	if (out->store && !out->stored) {
		/* An empty run row (a program that never reported, or every
		 * process failed to store) would only say "no process". */
		do
			err = hl_store_run_delete(out->store, out->run_id);
		while (retry_busy(out, err, &deadline, &delay_ms));
		out->run_id = 0;
		if (err)
			db_failed(out, err, "removing the empty run");
	} else if (out->store) {
		do
			err = hl_store_run_end(out->store, out->run_id, ended_ns, exit_code);
		while (retry_busy(out, err, &deadline, &delay_ms));
		if (err)
			db_failed(out, err, "ending the run");
	}
	if (out->store && (err = hl_store_batch_end(out->store))) {
		db_failed(out, err, "committing the run");
		out->run_id = 0;
	}
	if (out->store)
		out->pages_written = hl_store_pages_written(out->store);
	hl_store_close(out->store);
	out->store = NULL;
}

/* stderr is unbuffered: one write per fprintf made 10k leak records take
 * most of a second. Print through a fully buffered stream on the same fd. */
void hl_output_print(const struct hl_report *r)
{
	int fd = dup(STDERR_FILENO);
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (!out) {
		if (fd >= 0)
			close(fd);
		hl_report_print_text(r, stderr);
		return;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 16);
	hl_report_print_text(r, out);
	fclose(out);
}

const char *hl_glob_list_arg(const char *glob, void *out)
{
	char **list = out, *joined;
	size_t len;

	if (!*glob)
		return "needs a glob";
	if (strchr(glob, ':'))
		return "a glob cannot hold ':' (the separator of the list)";
	len = (*list ? strlen(*list) + 1 : 0) + strlen(glob) + 1;
	joined = malloc(len);
	if (!joined)
		return "out of memory";
	snprintf(joined, len, "%s%s%s", *list ? *list : "", *list ? ":" : "", glob);
	free(*list);
	*list = joined;
	return NULL;
}

/* Creates each missing directory of path's parent, private (0700). */
static int make_parents(char *path)
{
	for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = 0;
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			int err = -errno;

			*p = '/';
			return err;
		}
		*p = '/';
	}
	return 0;
}

const char *hl_default_db(bool create_dir)
{
	static char path[PATH_MAX];
	const char *env = getenv("HEAPLEDGER_DB");
	const char *data = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	int n, err;

	if (env && *env)
		return env;
	/* The XDG base directory spec ignores a relative XDG_DATA_HOME. */
	if (data && data[0] == '/')
		n = snprintf(path, sizeof(path), "%s/heapledger/history.db", data);
	else if (home && home[0] == '/')
		n = snprintf(path, sizeof(path), "%s/.local/share/heapledger/history.db", home);
	else {
		hl_log("no database: neither HEAPLEDGER_DB, XDG_DATA_HOME nor HOME is set "
		       "(pass --db FILE, or --no-db)");
		return NULL;
	}
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	if (create_dir && (err = make_parents(path)) != 0) {
		hl_log("cannot create the directory of %s: %s", path, strerror(-err));
		return NULL;
	}
	return path;
}

/* dir/name with dir made absolute and canonical, into out, if it is there
 * with access mode (R_OK, X_OK); the name itself is kept, so a soname link
 * printed by `env` survives an upgrade of the library. */
static int file_in(const char *dir, const char *name, int mode, char *out, size_t len)
{
	char real[PATH_MAX];
	int n;

	if (!realpath(dir, real))
		return -ENOENT;
	n = snprintf(out, len, "%s/%s", real, name);
	if (n < 0 || (size_t)n >= len || access(out, mode) != 0)
		return -ENOENT;
	return 0;
}

/* name in the first of this binary's directory + each of relative[], then
 * in absolute: the build tree, an installed or unpacked tree, the
 * configured prefix. */
static int find_beside_self(const char *name, int mode, const char *const *relative,
			    size_t nrelative, const char *absolute, char *out, size_t len)
{
	char self[PATH_MAX], candidate[PATH_MAX + 64];
	ssize_t n;
	char *slash;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		for (size_t i = 0; i < nrelative; i++) {
			snprintf(candidate, sizeof(candidate), "%s%s", self, relative[i]);
			if (!file_in(candidate, name, mode, out, len))
				return 0;
		}
	}
	return file_in(absolute, name, mode, out, len);
}

int hl_find_hook_library(char *out, size_t len)
{
	const char *env = getenv("HEAPLEDGER_LIB");
	static const char *const relative[] = {
		"/../libhook",                        /* the build tree */
		"/" HL_INSTALL_LIBDIR_FROM_BINDIR,    /* installed, or unpacked elsewhere */
	};

	if (env && *env)
		return realpath(env, out) && len >= PATH_MAX ? 0 : -ENOENT;
	return find_beside_self(HL_HOOK_SONAME, R_OK, relative, HL_ARRAY_SIZE(relative),
				HL_INSTALL_LIBDIR, out, len);
}

int hl_find_helper(const char *name, char *out, size_t len)
{
	static const char *const relative[] = {
		"",                                        /* the build tree: beside it */
		"/" HL_INSTALL_LIBEXECDIR_FROM_BINDIR "/heapledger", /* installed, or unpacked */
	};

	return find_beside_self(name, X_OK, relative, HL_ARRAY_SIZE(relative),
				HL_INSTALL_LIBEXECDIR "/heapledger", out, len);
}

char *hl_preload_value(const char *lib, const char *existing)
{
	size_t len = strlen(lib) + (existing ? strlen(existing) : 0) + 2;
	char *v = hl_xmalloc(len);

	if (existing && *existing)
		snprintf(v, len, "%s:%s", lib, existing);
	else
		snprintf(v, len, "%s", lib);
	return v;
}
