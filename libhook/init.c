/*
 * libhook/init.c: start-up, options, fork handling and the end of the run.
 *
 * The allocator itself needs no set-up: all its state is zero-initialised
 * static memory, so it serves the dynamic loader's and libc's first calls,
 * made before any constructor runs. hl_start, our constructor, then reads
 * the environment (which is not reliable before libc's own initialisation),
 * registers the fork and thread-exit handlers and starts tracking.
 *
 * At the end, hl_exit_report runs once: from our destructor on a normal
 * exit (on_exit gave us the status), or from the exit-path interposers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heap.h"
#include "leakcheck.h"

#define HL_OPTION_DEFAULT(key, field, min, max, def, values, help) .field = (def),
struct hl_options hl_options = { HL_OPTION_TABLE(HL_OPTION_DEFAULT) };
#undef HL_OPTION_DEFAULT
const struct hl_option_info hl_option_infos[] = { HL_OPTION_TABLE(HL_OPTION_INFO) };
HL_TLS int hl_guard_depth;

static _Atomic bool exit_reported;
static int exit_status;
static struct hl_fd log_file = HL_FD_NONE;
/* What fd 2 was when the program started (stderr_remember), and a copy. */
static enum { STDERR_UNKNOWN, STDERR_KNOWN, STDERR_CLOSED } stderr_state;
static dev_t stderr_dev;
static ino_t stderr_ino;
static struct hl_fd stderr_copy = HL_FD_NONE;

void hl_init(void)
{
	/* Everything is lazily built from zeroed statics; nothing to do yet.
	 * Kept as the one place to add eager set-up should it ever be needed. */
}

void hl_assert_fail(const char *expr, const char *file, int line)
{
	struct hl_out out;
	hl_out_init(&out, 2);
	hl_out_str(&out, "heapledger: assertion failed: ");
	hl_out_str(&out, expr);
	hl_out_str(&out, " at ");
	hl_out_str(&out, file);
	hl_out_str(&out, ":");
	hl_out_u64(&out, (uint64_t)line);
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
	abort();
}

void hl_warn(const char *message, const void *address)
{
	struct hl_out out;
	hl_out_init(&out, hl_stderr_fd());
	hl_out_str(&out, "heapledger: ");
	hl_out_str(&out, message);
	if (address) {
		hl_out_str(&out, " (");
		hl_out_hex(&out, (uintptr_t)address);
		hl_out_str(&out, ")");
	}
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
}

void hl_notice(const char *message)
{
	if (hl_options.quiet)
		return;
	struct hl_out out;
	hl_out_init(&out, hl_log_fd());
	hl_out_str(&out, "heapledger: ");
	hl_out_str(&out, message);
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
}

/* ---- options: HEAPLEDGER_OPTIONS, keys defined in options.h ------------ */

static bool parse_unsigned(const char *value, size_t len, unsigned max, unsigned *out)
{
	unsigned long v = 0;
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (value[i] < '0' || value[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(value[i] - '0');
		if (v > max)
			return false;
	}
	*out = (unsigned)v;
	return true;
}

/* The index of value in "a|b|c", or false. */
static bool parse_choice(const char *value, size_t len, const char *values, unsigned *out)
{
	for (unsigned index = 0; *values; index++) {
		size_t n = strcspn(values, "|");
		if (n == len && memcmp(values, value, len) == 0) {
			*out = index;
			return true;
		}
		values += n + (values[n] == '|');
	}
	return false;
}

static bool parse_value(const struct hl_option_info *info, const char *value, size_t len,
			unsigned *out)
{
	if (info->values && parse_choice(value, len, info->values, out))
		return true;
	return parse_unsigned(value, len, info->max, out) && *out >= info->min;
}

/* The table's entry for key, or NULL. */
static const struct hl_option_info *find_option(const char *key, size_t key_len)
{
	for (unsigned i = 0; i < HL_OPTION_COUNT; i++) {
		const char *name = hl_option_infos[i].key;
		if (strlen(name) == key_len && memcmp(name, key, key_len) == 0)
			return &hl_option_infos[i];
	}
	return NULL;
}

static void set_option(const struct hl_option_info *info, unsigned v)
{
	switch (info - hl_option_infos) {
#define HL_OPTION_SET(key, field, min, max, def, values, help) \
	case HL_OPTION_INDEX_##key:                              \
		hl_options.field = v;                            \
		break;
		HL_OPTION_TABLE(HL_OPTION_SET)
#undef HL_OPTION_SET
	}
}

/* "depth=0..256", "summary=0|1", "on_error=abort|report". */
static void out_option_values(struct hl_out *out, const struct hl_option_info *info)
{
	hl_out_str(out, info->key);
	hl_out_str(out, "=");
	if (info->values) {
		hl_out_str(out, info->values);
	} else if (info->min == 0 && info->max == 1) {
		hl_out_str(out, "0|1");
	} else {
		hl_out_u64(out, info->min);
		hl_out_str(out, "..");
		hl_out_u64(out, info->max);
	}
}

static void report_bad_entry(const char *entry, size_t len, const struct hl_option_info *info)
{
	struct hl_out out;
	hl_out_init(&out, 2);
	hl_out_str(&out, "heapledger: ignoring bad " HL_ENV_OPTIONS " entry '");
	for (size_t i = 0; i < len && i < 200; i++) {
		char c[2] = { entry[i], 0 };
		hl_out_str(&out, c);
	}
	if (info) {
		hl_out_str(&out, "' (valid: ");
		out_option_values(&out, info);
		hl_out_str(&out, ")\n");
	} else {
		hl_out_str(&out, "' (keys:");
		for (unsigned i = 0; i < HL_OPTION_COUNT; i++) {
			hl_out_str(&out, " ");
			out_option_values(&out, &hl_option_infos[i]);
		}
		hl_out_str(&out, ")\n");
	}
	hl_out_flush(&out);
}

/* The index-th value of "a|b|c". */
static void out_choice(struct hl_out *out, const char *values, unsigned index)
{
	for (; index > 0 && *values; index--)
		values += strcspn(values, "|") + (values[strcspn(values, "|")] == '|');
	for (; *values && *values != '|'; values++) {
		char c[2] = { *values, 0 };
		hl_out_str(out, c);
	}
}

/* HEAPLEDGER_OPTIONS=help=1: every key, its values, default and help. */
static void print_option_help(void)
{
	struct hl_out out;
	hl_out_init(&out, 2);
	hl_out_str(&out, "heapledger: " HL_ENV_OPTIONS "=key=value:key=value keys:\n");
	for (unsigned i = 0; i < HL_OPTION_COUNT; i++) {
		const struct hl_option_info *info = &hl_option_infos[i];
		hl_out_str(&out, "  ");
		out_option_values(&out, info);
		hl_out_str(&out, " (default ");
		if (info->values)
			out_choice(&out, info->values, info->default_value);
		else
			hl_out_u64(&out, info->default_value);
		hl_out_str(&out, "): ");
		hl_out_str(&out, info->help);
		hl_out_str(&out, "\n");
	}
	hl_out_flush(&out);
}

/* "key=value:key=value". A bad entry is reported and skipped: the program
 * under test still runs, with the defaults for that key. */
void hl_options_parse(const char *text)
{
	while (text && *text) {
		const char *end = strchr(text, ':');
		size_t len = end ? (size_t)(end - text) : strlen(text);
		const char *eq = memchr(text, '=', len);
		const struct hl_option_info *info = eq ? find_option(text, (size_t)(eq - text)) : NULL;
		unsigned v;
		if (len > 0 && info &&
		    parse_value(info, eq + 1, len - (size_t)(eq - text) - 1, &v))
			set_option(info, v);
		else if (len > 0)
			report_bad_entry(text, len, info);
		text = end ? end + 1 : NULL;
	}
	if (!hl_options.stacks)
		hl_options.stack_depth = 0;
	if (hl_options.help) {
		hl_options.help = 0;
		print_option_help();
	}
}

/* ---- stderr, checked before use ------------------------------------------ */

/* A program may close its stderr and open a file that takes fd 2 (daemons
 * do); writing the summary there would corrupt the program's data. And
 * grep, sort, xz and tar close fd 2 before they exit, and would get no
 * summary. So, like valgrind, the hook keeps a copy of the stderr the program
 * started with (high and close-on-exec, fd.c) and writes there; without the
 * copy, it writes to fd 2 only while fd 2 is still that file.
 * The copy keeps a pipe open after the program closed its end: a reader
 * waiting for the end would wait for this process to exit. That is right for
 * the process itself (the summary comes at its exit), not for a daemon's
 * forked child that closes its stderr and lives on after its parent: a
 * forked child drops the copy (stderr_fork_child), and an exec'd image makes
 * its own. */
static void stderr_remember(void)
{
	struct stat st;
	if (fstat(2, &st) != 0) {
		stderr_state = STDERR_CLOSED; /* whatever gets fd 2 later is not ours */
		return;
	}
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
	stderr_state = STDERR_KNOWN;
	int saved = errno;
	int copy = fcntl(2, F_DUPFD_CLOEXEC, 3);
	errno = saved;
	hl_fd_keep(&stderr_copy, copy);
}

static void stderr_fork_child(void)
{
	hl_fd_release(&stderr_copy);
}

int hl_stderr_fd(void)
{
	struct stat st;
	if (stderr_state == STDERR_UNKNOWN)
		return 2; /* before the constructor: nothing has replaced it yet */
	if (hl_fd_is_ours(&stderr_copy))
		return stderr_copy.fd;
	if (stderr_state == STDERR_KNOWN && fstat(2, &st) == 0 && st.st_dev == stderr_dev &&
	    st.st_ino == stderr_ino)
		return 2;
	return -1; /* hl_out writes to -1 fail quietly */
}

/* Opens the log for appending without following a planted link: a new file
 * is created 0600 with O_EXCL; an existing one must be a regular file of our
 * own user. -1 if neither. */
static int log_open(const char *path)
{
	int flags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY;
	struct stat st;
	int fd = open(path, flags | O_CREAT | O_EXCL, 0600);
	if (fd >= 0 || errno != EEXIST)
		return fd;
	fd = open(path, flags | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())) {
		close(fd);
		return -1;
	}
	return fd;
}

/* $HEAPLEDGER_LOG names a file; "%p" in it becomes the pid, as in
 * valgrind's --log-file, so forked children do not interleave. */
int hl_log_fd(void)
{
	if (hl_fd_is_ours(&log_file))
		return log_file.fd;
	const char *path = hl_env_get(HL_ENV_LOG);
	if (path == NULL || *path == '\0' || log_file.fd == -2)
		return hl_stderr_fd();
	char buf[HL_WIRE_MAX_PATH];
	size_t used = 0;
	for (const char *s = path; *s && used + 24 < sizeof(buf); s++) {
		if (s[0] == '%' && s[1] == 'p') {
			char digits[24];
			int n = 0;
			for (unsigned long pid = (unsigned long)getpid(); pid; pid /= 10)
				digits[n++] = (char)('0' + pid % 10);
			while (n)
				buf[used++] = digits[--n];
			s++;
		} else {
			buf[used++] = *s;
		}
	}
	buf[used] = '\0';
	int saved = errno;
	int fd = log_open(buf);
	errno = saved;
	if (!hl_fd_keep(&log_file, fd)) {
		log_file.fd = -2; /* tried once: no retry, no second warning */
		hl_warn("cannot open " HL_ENV_LOG " file (a new file, or a regular file of "
			"ours); writing to stderr", NULL);
		return hl_stderr_fd();
	}
	return log_file.fd;
}

/* ---- fork --------------------------------------------------------------- */

void hl_fork_prepare(void)
{
	hl_track_fork_prepare();
	hl_alloc_fork_prepare();
	hl_caches_lock();
	hl_arenas_lock_all();
	hl_large_fork_prepare();
	hl_checks_fork_prepare(); /* quarantine_lock -> meta_lock */
	hl_meta_fork_prepare();
	hl_misuse_fork_prepare();
}

void hl_fork_parent(void)
{
	hl_misuse_fork_parent();
	hl_meta_fork_parent();
	hl_checks_fork_parent();
	hl_large_fork_parent();
	hl_arenas_unlock_all();
	hl_caches_unlock();
	hl_alloc_fork_parent();
	hl_track_fork_parent();
}

void hl_fork_child(void)
{
	hl_process_own();
	hl_misuse_fork_child();
	hl_meta_fork_child();
	hl_checks_fork_child();
	hl_large_fork_child();
	hl_arenas_reset_locks();
	hl_caches_fork_child();
	hl_alloc_fork_child();
	exit_reported = false;
	hl_leakcheck_fork_child();
	hl_fd_release(&log_file); /* "%p" names another file in the child */
	stderr_fork_child();
	hl_track_fork_child();
}

/* ---- start and end ------------------------------------------------------ */

/* True if this process may report: the owner, or a copy made without fork()
 * (a raw clone), which first becomes a fork child. A vfork child, in the
 * owner's memory, must leave the owner's state alone (process.c). */
static bool may_report(void)
{
	switch (hl_process_kind()) {
	case HL_PROCESS_OWNER:
		return true;
	case HL_PROCESS_COPY:
		hl_fork_child();
		return true;
	default:
		return false;
	}
}

void hl_exit_report(unsigned how, int status)
{
	if (!may_report() || atomic_exchange(&exit_reported, true))
		return;
	int fd = hl_log_fd(); /* before freeres: it clears the environment */
	if (how == HL_EXIT_NORMAL)
		hl_leakcheck_freeres(); /* after it, raw write(2) only: stdio is gone */
	hl_checks_sweep(HL_CALL_EXIT); /* checks=full: guard bytes and quarantine, last look */
	if (hl_track_exit(how, status))
		return; /* the reporter prints the summary */
	if (hl_options.summary)
		hl_summary_print(fd);
	if (hl_options.leaks)
		hl_track_print_leaks(fd, how);
	if (hl_options.summary)
		hl_misuse_print_summary(fd);
}

/*
 * A normal exit reports from whichever of these two runs second, so the
 * status is known and every destructor has run. Our constructor runs from
 * the dynamic loader before __libc_start_main registers _dl_fini, so our
 * on_exit handler normally runs after _dl_fini (and our destructor in it):
 * reporting from the destructor alone gave exit(3) as status 0.
 */
static _Atomic bool exit_status_known;
static _Atomic bool destructor_ran;

static void on_exit_status(int status, void *arg)
{
	if (hl_process_kind() == HL_PROCESS_SHARER)
		return; /* a vfork child's exit: the flags are the owner's */
	exit_status = status;
	atomic_store(&exit_status_known, true);
	if (atomic_load(&destructor_ran))
		hl_exit_report(HL_EXIT_NORMAL, status);
}

__attribute__((constructor)) static void hl_start(void)
{
	hl_process_own();
	stderr_remember();
	hl_os_check_address_space();
	hl_options_parse(hl_env_get(HL_ENV_OPTIONS));
	hl_checks_init();
	hl_cache_init_key();
	pthread_atfork(hl_fork_prepare, hl_fork_parent, hl_fork_child);
	on_exit(on_exit_status, NULL);
	hl_track_init();
	hl_leakcheck_init();
	hl_cache_tracking_changed(); /* the main thread's cache predates tracking */
}

/* Runs after the program's and later-loaded libraries' destructors (we were
 * initialised before them), so blocks they free are not reported. */
__attribute__((destructor)) static void hl_stop(void)
{
	if (hl_process_kind() == HL_PROCESS_SHARER)
		return;
	atomic_store(&destructor_ran, true);
	if (atomic_load(&exit_status_known))
		hl_exit_report(HL_EXIT_NORMAL, exit_status);
}
