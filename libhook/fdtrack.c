/*
 * libhook/fdtrack.c: the table of the program's open descriptors and its
 * exit listing (track_fds=yes|all; fdtrack.h says what and why).
 *
 * The table is an array indexed by descriptor number, grown to the highest
 * number seen (hook metadata, one lock). An entry holds the stack id of the
 * call that made it, its name (a metadata copy) and a serial number: the
 * listing goes newest first, as valgrind's list does (it prepends; a dup2
 * onto an open number keeps the entry's place). Stacks are captured before
 * the lock is taken; under it there are only the table's stores and, when
 * it grows or a name is replaced, hl_meta_alloc/free (lock order: this
 * lock, then meta_lock; hl_fork_prepare takes them so).
 *
 * At exit the table is checked against /proc/self/fd: an entry whose
 * descriptor was closed where the hook could not see it (glibc closing its
 * own, syscall(SYS_close)) is dropped, and a descriptor open but unknown is
 * listed as unseen, so the count is the kernel's, never a guess.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "fdtrack.h"
#include "lock.h"
#include "emit_int.h"
#include "track.h"
#include "procfs.h"

struct fd_entry {
	uint64_t serial;   /* creation order; 0: the descriptor is not open */
	uint32_t stack_id; /* 0: inherited or no stack */
	uint32_t flags;    /* HL_FD_INHERITED */
	char *path;        /* metadata, NUL-terminated; NULL: nameless */
	size_t path_bytes; /* its allocation */
};

#define HOOK_FDS_MAX 8

static struct hl_lock table_lock = HL_LOCK_INIT;
static struct fd_entry *table;     /* table_lock */
static unsigned table_slots;       /* table_lock */
static uint64_t next_serial = 1;   /* table_lock */
static _Atomic int hook_fds[HOOK_FDS_MAX] = { -1, -1, -1, -1, -1, -1, -1, -1 };

/* ---- the table ------------------------------------------------------------- */

/* Room for index fd; false if the metadata is exhausted (the descriptor is
 * then not tracked, and the exit check lists it as unseen). */
static bool grow_locked(unsigned fd)
{
	hl_assert_held(&table_lock);
	if (fd < table_slots)
		return true;
	unsigned slots = table_slots ? table_slots : 64;
	while (slots <= fd)
		slots *= 2;
	struct fd_entry *bigger = hl_meta_alloc(slots * sizeof(*bigger));
	if (bigger == NULL)
		return false;
	if (table) {
		memcpy(bigger, table, table_slots * sizeof(*table));
		hl_meta_free(table, table_slots * sizeof(*table));
	}
	table = bigger;
	table_slots = slots;
	return true;
}

/* A metadata copy of the name, or NULL. */
static char *name_copy(const char *path, size_t *bytes)
{
	size_t len = path ? strnlen(path, HL_WIRE_MAX_PATH - 1) : 0;
	char *copy = len ? hl_meta_alloc(len + 1) : NULL;
	*bytes = copy ? len + 1 : 0;
	if (copy)
		memcpy(copy, path, len); /* zeroed: the NUL is there */
	return copy;
}

/* The path fd names, as valgrind's resolve_filename: only an absolute one
 * (a pipe's "pipe:[123]" is no name). */
static bool resolve(int fd, char *buf, size_t size)
{
	char link[16] = "fd/";
	size_t at = strlen(link);
	char digits[12];
	int n = 0;
	unsigned v = (unsigned)fd;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 11);
	while (n)
		link[at++] = digits[--n];
	link[at] = 0;
	ssize_t len = hl_proc_readlink(link, buf, size - 1);
	if (len <= 0 || buf[0] != '/')
		return false;
	buf[len] = 0;
	return true;
}

static void set_locked(int fd, uint32_t stack_id, uint32_t flags, char *path, size_t bytes)
{
	hl_assert_held(&table_lock);
	struct fd_entry *e = &table[fd];
	char *old = e->path;
	size_t old_bytes = e->path_bytes;
	if (e->serial == 0)
		e->serial = next_serial++;
	e->stack_id = stack_id;
	e->flags = flags;
	e->path = path;
	e->path_bytes = bytes;
	if (old)
		hl_meta_free(old, old_bytes);
}

static void record(int fd, uint32_t stack_id, uint32_t flags, const char *name)
{
	size_t bytes;
	char *path = name_copy(name, &bytes);
	hl_lock(&table_lock);
	if (grow_locked((unsigned)fd))
		set_locked(fd, stack_id, flags, path, bytes);
	else if (path)
		hl_meta_free(path, bytes);
	hl_unlock(&table_lock);
}

void hl_fds_opened(int fd, enum hl_fds_naming naming, const char *path)
{
	char resolved[HL_WIRE_MAX_PATH];
	if (fd < 0 || !hl_fds_on())
		return;
	int saved = errno;
	if (naming == HL_FDS_RESOLVED)
		path = resolve(fd, resolved, sizeof(resolved)) ? resolved : NULL;
	else if (naming == HL_FDS_NAMELESS)
		path = NULL;
	record(fd, hl_track_free_stack(), 0, path);
	errno = saved;
}

static void forget_locked(unsigned fd)
{
	hl_assert_held(&table_lock);
	if (fd >= table_slots || table[fd].serial == 0)
		return;
	struct fd_entry *e = &table[fd];
	if (e->path)
		hl_meta_free(e->path, e->path_bytes);
	*e = (struct fd_entry){ 0 };
}

void hl_fds_closed(int fd)
{
	if (fd < 0 || !hl_fds_on())
		return;
	hl_lock(&table_lock);
	forget_locked((unsigned)fd);
	hl_unlock(&table_lock);
}

void hl_fds_closed_range(unsigned low, unsigned high)
{
	if (!hl_fds_on())
		return;
	hl_lock(&table_lock);
	for (unsigned fd = low; fd < table_slots && fd <= high; fd++)
		forget_locked(fd);
	hl_unlock(&table_lock);
}

void hl_fds_hook_keeps(int fd)
{
	hl_fds_closed(fd);
	for (int i = 0; i < HOOK_FDS_MAX; i++) {
		int none = -1;
		if (atomic_compare_exchange_strong(&hook_fds[i], &none, fd))
			return;
	}
}

void hl_fds_hook_releases(int fd)
{
	for (int i = 0; i < HOOK_FDS_MAX; i++) {
		int mine = fd;
		if (fd >= 0 && atomic_compare_exchange_strong(&hook_fds[i], &mine, -1))
			return;
	}
}

static bool is_hook_fd(int fd)
{
	for (int i = 0; i < HOOK_FDS_MAX; i++)
		if (atomic_load(&hook_fds[i]) == fd)
			return true;
	return false;
}

/* ---- the kernel's list ------------------------------------------------------ */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Calls fn(fd) for every descriptor open now but `self` (the directory's
 * own); raw getdents64, no stdio, no malloc. false if /proc is not there. */
static bool each_open_fd(void (*fn)(int fd, void *arg), void *arg)
{
	int dir = hl_proc_open("fd", O_RDONLY | O_DIRECTORY);
	char buf[4096] __attribute__((aligned(8)));
	long n;
	if (dir < 0)
		return false;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long at = 0; at < n;) {
			struct linux_dirent64 *d = (void *)(buf + at);
			int fd = 0;
			const char *c = d->d_name;
			at += d->d_reclen;
			if (*c < '0' || *c > '9')
				continue;
			while (*c >= '0' && *c <= '9')
				fd = fd * 10 + (*c++ - '0');
			if (fd != dir && !is_hook_fd(fd))
				fn(fd, arg);
		}
	}
	close(dir);
	return true;
}

static void note_inherited(int fd, void *arg)
{
	char path[HL_WIRE_MAX_PATH];
	(void)arg;
	record(fd, 0, HL_FD_INHERITED, resolve(fd, path, sizeof(path)) ? path : NULL);
}

void hl_fds_init(void)
{
	if (!hl_fds_on())
		return;
	int saved = errno;
	hl_guard_enter(); /* its own open of /proc/self/fd is not the program's */
	each_open_fd(note_inherited, NULL);
	hl_guard_leave();
	errno = saved;
}

/* Marks the entries of the descriptors the kernel has open (seen), and adds
 * the ones the table lacks as unseen. */
static void note_open_now(int fd, void *arg)
{
	uint8_t *seen = arg;
	if (fd < 0)
		return;
	if ((unsigned)fd >= table_slots || table[fd].serial == 0) {
		if (!grow_locked((unsigned)fd))
			return;
		set_locked(fd, 0, HL_FD_UNSEEN, NULL, 0);
	}
	if ((unsigned)fd < table_slots && seen)
		seen[fd] = 1;
}

/* The table made equal to the kernel's list (held: table_lock). */
static void reconcile_locked(void)
{
	hl_assert_held(&table_lock);
	size_t bytes = table_slots + 4096; /* room for unseen ones beyond */
	uint8_t *seen = hl_meta_alloc(bytes);
	if (!each_open_fd(note_open_now, NULL))
		goto out;
	if (seen == NULL)
		goto out;
	each_open_fd(note_open_now, seen);
	for (unsigned fd = 0; fd < table_slots && fd < bytes; fd++)
		if (table[fd].serial && !seen[fd])
			forget_locked(fd);
out:
	if (seen)
		hl_meta_free(seen, bytes);
}

/* ---- description ------------------------------------------------------------ */

/* Appends to a NUL-terminated text of `size` bytes, cutting what does not
 * fit (no stdio in the hook). */
static void text_put(char *text, size_t size, const char *s, size_t n)
{
	size_t at = strnlen(text, size - 1);
	if (n > size - 1 - at)
		n = size - 1 - at;
	memcpy(text + at, s, n);
	text[at + n] = 0;
}

static void text_str(char *text, size_t size, const char *s)
{
	text_put(text, size, s, strlen(s));
}

static void text_u32(char *text, size_t size, unsigned v)
{
	char digits[12];
	int n = sizeof(digits);
	do
		digits[--n] = (char)('0' + v % 10);
	while ((v /= 10) && n > 0);
	text_put(text, size, digits + n, sizeof(digits) - (size_t)n);
}

/* valgrind's inet2name: "127.0.0.1:8080", "[::1]:8080", "<unbound>". */
static void inet_words(const struct sockaddr_storage *sa, char *out, size_t size)
{
	char addr[INET6_ADDRSTRLEN];
	static const struct in6_addr any = IN6ADDR_ANY_INIT;
	const struct sockaddr_in *in = (const void *)sa;
	const struct sockaddr_in6 *in6 = (const void *)sa;
	bool v4 = sa->ss_family == AF_INET;
	out[0] = 0;
	if (v4 ? in->sin_addr.s_addr == 0 : memcmp(&in6->sin6_addr, &any, sizeof(any)) == 0) {
		text_str(out, size, "<unbound>");
		return;
	}
	if (!inet_ntop(sa->ss_family, v4 ? (const void *)&in->sin_addr : (const void *)&in6->sin6_addr,
		       addr, sizeof(addr)))
		addr[0] = 0;
	text_str(out, size, v4 ? "" : "[");
	text_str(out, size, addr);
	text_str(out, size, v4 ? ":" : "]:");
	text_u32(out, size, ntohs(v4 ? in->sin_port : in6->sin6_port));
}

/* valgrind's getsockdetails: family and the words after the number. */
static void describe_socket(struct hl_fds_entry *e)
{
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	socklen_t len = sizeof(local);
	char words[INET6_ADDRSTRLEN + 16];
	e->kind = HL_FD_SOCKET;
	if (getsockname(e->fd, (void *)&local, &len) != 0)
		return;
	e->family = local.ss_family;
	if (local.ss_family == AF_INET || local.ss_family == AF_INET6) {
		inet_words(&local, words, sizeof(words));
		text_str(e->text, sizeof(e->text), words);
		text_str(e->text, sizeof(e->text), " <-> ");
		len = sizeof(peer);
		if (getpeername(e->fd, (void *)&peer, &len) == 0 && peer.ss_family == local.ss_family)
			inet_words(&peer, words, sizeof(words));
		else
			words[0] = 0, text_str(words, sizeof(words), "unbound");
		text_str(e->text, sizeof(e->text), words);
	} else if (local.ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const void *)&local;
		if (len <= offsetof(struct sockaddr_un, sun_path) || un->sun_path[0] == 0)
			text_str(e->text, sizeof(e->text), "<unknown>");
		else
			text_put(e->text, sizeof(e->text), un->sun_path,
				 strnlen(un->sun_path, sizeof(un->sun_path)));
	}
}

static void describe(struct hl_fds_entry *e, const struct fd_entry *t)
{
	int type;
	socklen_t len = sizeof(type);
	e->stack_id = t->stack_id;
	e->flags = t->flags & HL_FD_FLAGS;
	e->kind = HL_FD_FILE;
	e->family = 0;
	e->text[0] = 0;
	if (t->path)
		text_str(e->text, sizeof(e->text), t->path);
	else if (getsockopt(e->fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0)
		describe_socket(e);
}

/* ---- the listing -------------------------------------------------------------- */

unsigned hl_fds_visit(void (*fn)(const struct hl_fds_entry *e, void *arg), void *arg,
		      unsigned *std)
{
	static struct hl_fds_entry entry; /* under table_lock: 4 KiB off the stack */
	unsigned open_fds = 0;
	uint64_t below = UINT64_MAX;
	int saved = errno;
	hl_guard_enter(); /* its own open of /proc/self/fd is not the program's */
	hl_lock(&table_lock);
	reconcile_locked();
	*std = 0;
	for (unsigned fd = 0; fd < table_slots; fd++) {
		open_fds += table[fd].serial != 0;
		*std += fd < 3 && table[fd].serial != 0;
	}
	/* Newest first: the highest serial below the last one listed, each
	 * time (a quadratic walk, over at most a few thousand at exit). */
	for (;;) {
		unsigned best = table_slots;
		for (unsigned fd = 0; fd < table_slots; fd++)
			if (table[fd].serial && table[fd].serial < below &&
			    (best == table_slots || table[fd].serial > table[best].serial))
				best = fd;
		if (best == table_slots)
			break;
		below = table[best].serial;
		if (best < 3 && hl_options.track_fds != HL_TRACK_FDS_ALL)
			continue;
		if (fn == NULL)
			continue;
		entry.fd = (int)best;
		describe(&entry, &table[best]);
		fn(&entry, arg);
	}
	hl_unlock(&table_lock);
	hl_guard_leave();
	errno = saved;
	return open_fds;
}

static void line_start(struct hl_out *out)
{
	hl_out_str(out, "==");
	hl_out_u64(out, (uint64_t)getpid());
	hl_out_str(out, "== ");
}

/* "Open file descriptor 3: /path", "Open AF_INET socket 4: a <-> b". */
static void print_heading(struct hl_out *out, int fd, uint32_t kind, uint32_t family,
			  const char *text)
{
	const char *name = hl_wire_fd_family_name(family);
	line_start(out);
	if (kind == HL_FD_FILE) {
		hl_out_str(out, "Open file descriptor ");
	} else if (name) {
		hl_out_str(out, "Open ");
		hl_out_str(out, name);
		hl_out_str(out, " socket ");
	} else if (family) {
		hl_out_str(out, "Open pf-");
		hl_out_u64(out, family);
		hl_out_str(out, " socket ");
	} else {
		hl_out_str(out, "Open socket ");
	}
	hl_out_u64(out, (uint64_t)fd);
	hl_out_str(out, ":");
	if (text[0]) {
		hl_out_str(out, " ");
		hl_out_str(out, text);
	}
	hl_out_str(out, "\n");
}

static void print_one(const struct hl_fds_entry *e, void *arg)
{
	struct hl_out *out = arg;
	uint32_t flags = e->flags;
	print_heading(out, e->fd, e->kind, e->family, e->text);
	if (flags & HL_FD_INHERITED) {
		line_start(out);
		hl_out_str(out, "   <inherited from parent>\n");
	} else if (flags & HL_FD_UNSEEN) {
		line_start(out);
		hl_out_str(out, "   <made by a call heapledger does not see: no stack>\n");
	} else {
		hl_track_print_stack(out, e->stack_id);
	}
	line_start(out);
	hl_out_str(out, "\n");
}

void hl_fds_print(int fd)
{
	struct hl_out out;
	unsigned std;
	if (!hl_fds_on() || fd < 0)
		return;
	hl_out_init(&out, fd);
	line_start(&out);
	hl_out_str(&out, "\n");
	unsigned open_fds = hl_fds_visit(NULL, NULL, &std);
	line_start(&out);
	hl_out_str(&out, "FILE DESCRIPTORS: ");
	hl_out_u64(&out, open_fds);
	hl_out_str(&out, " open (");
	hl_out_u64(&out, std);
	hl_out_str(&out, " std) at exit.\n");
	hl_fds_visit(print_one, &out, &std);
	line_start(&out);
	hl_out_str(&out, "\n");
	hl_out_flush(&out);
}

/* ---- to the reporter ---------------------------------------------------------- */

struct send_state {
	bool ok;
};

static void send_one(const struct hl_fds_entry *e, void *arg)
{
	struct send_state *st = arg;
	uint32_t flags = e->flags;
	uint32_t text_len = e->text[0] ? (uint32_t)strlen(e->text) + 1 : 0;
	uint32_t len = hl_wire_padded((uint32_t)sizeof(struct hl_rec_fd) + text_len);
	struct hl_rec_fd *rec = st->ok ? hl_emit_scratch_reserve_locked(len) : NULL;
	if (rec == NULL) {
		st->ok = false;
		return;
	}
	memset(rec, 0, len);
	*rec = (struct hl_rec_fd){ .h = hl_wire_hdr(HL_REC_FD, flags, len),
				   .fd = e->fd,
				   .stack_id = flags ? 0 : e->stack_id,
				   .kind = e->kind,
				   .family = e->family,
				   .text_len = text_len };
	memcpy(rec + 1, e->text, text_len);
}

static void count_one(const struct hl_fds_entry *e, void *arg)
{
	(void)e;
	(*(uint32_t *)arg)++;
}

bool hl_fds_send_locked(void)
{
	unsigned std;
	uint32_t listed = 0;
	struct send_state st = { .ok = true };
	hl_assert_held(&hl_emit_write_lock);
	if (!hl_fds_on())
		return true;
	unsigned open_fds = hl_fds_visit(count_one, &listed, &std);
	struct hl_rec_fd_summary *sum = hl_emit_scratch_reserve_locked(sizeof(*sum));
	if (sum == NULL)
		return false;
	*sum = (struct hl_rec_fd_summary){
		.h = hl_wire_hdr(HL_REC_FD_SUMMARY,
				 hl_options.track_fds == HL_TRACK_FDS_ALL ? HL_FD_SUMMARY_ALL : 0,
				 sizeof(*sum)),
		.open = open_fds,
		.std = std,
		.listed = listed
	};
	hl_fds_visit(send_one, &st, &std);
	hl_emit_records_total += 1 + listed;
	return st.ok && hl_emit_scratch_flush_locked();
}

/* ---- fork ---------------------------------------------------------------------- */

void hl_fds_fork_prepare(void)
{
	hl_lock(&table_lock);
}

void hl_fds_fork_parent(void)
{
	hl_unlock(&table_lock);
}

void hl_fds_fork_child(void)
{
	hl_lock_reset(&table_lock);
}
