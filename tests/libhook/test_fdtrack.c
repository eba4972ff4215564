/* tests/libhook/test_fdtrack.c: the table of the program's descriptors
 * (libhook/fdtrack.c): what is recorded and forgotten, the order of the exit
 * listing, the kernel's list winning over the table, the hook's own
 * descriptors and 0, 1, 2 left out, and nothing kept with the option off. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "fdtrack.h"
#include "track.h"

#define MAX_SEEN 64

struct seen {
	unsigned n;
	struct hl_fds_entry e[MAX_SEEN];
};

static void collect(const struct hl_fds_entry *e, void *arg)
{
	struct seen *s = arg;
	if (s->n < MAX_SEEN)
		s->e[s->n++] = *e;
}

/* The listing now; *open and *std as hl_fds_visit gives them. */
static struct seen *list(unsigned *open_fds, unsigned *std)
{
	static struct seen s;
	unsigned dummy;
	memset(&s, 0, sizeof(s));
	*open_fds = hl_fds_visit(collect, &s, std ? std : &dummy);
	return &s;
}

static const struct hl_fds_entry *find(const struct seen *s, int fd, unsigned *at)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->e[i].fd == fd) {
			if (at)
				*at = i;
			return &s->e[i];
		}
	return NULL;
}

static int setup(void **state)
{
	hl_options.track_fds = HL_TRACK_FDS_YES;
	/* libunwind makes its pipe at the first unwind; in the hook fdwrap.c
	 * moves it up as the hook's, here it is taken for inherited */
	hl_track_free_stack();
	hl_fds_init(); /* whatever the test runner left open: inherited */
	return 0;
}

static void test_recorded_named_and_ordered(void **state)
{
	unsigned open_before, open_now, at_file = 0, at_pipe = 0, at_copy = 0;
	int ends[2];
	list(&open_before, NULL);
	int file = open("/dev/null", O_RDONLY);
	hl_fds_opened(file, HL_FDS_GIVEN, "given/name");
	assert_int_equal(pipe(ends), 0);
	hl_fds_opened(ends[0], HL_FDS_NAMELESS, NULL);
	hl_fds_opened(ends[1], HL_FDS_NAMELESS, NULL);
	int copy = dup(file);
	hl_fds_opened(copy, HL_FDS_RESOLVED, NULL);

	struct seen *s = list(&open_now, NULL);
	assert_int_equal(open_now, open_before + 4);
	const struct hl_fds_entry *f = find(s, file, &at_file);
	const struct hl_fds_entry *p = find(s, ends[1], &at_pipe);
	const struct hl_fds_entry *c = find(s, copy, &at_copy);
	assert_non_null(f);
	assert_non_null(p);
	assert_non_null(c);
	assert_string_equal(f->text, "given/name"); /* as the program passed it */
	assert_string_equal(c->text, "/dev/null");  /* a copy: the file it names */
	assert_string_equal(p->text, "");           /* a pipe has no name */
	assert_int_equal(p->kind, HL_FD_FILE);
	assert_int_equal(f->flags, 0);
	assert_true(at_copy < at_pipe && at_pipe < at_file); /* newest first */

	/* dup2 onto an open number: a new name, the same place */
	assert_int_equal(dup2(ends[1], file), file);
	hl_fds_opened(file, HL_FDS_RESOLVED, NULL);
	s = list(&open_now, NULL);
	f = find(s, file, &at_file);
	assert_string_equal(f->text, "");
	assert_true(at_file > at_pipe);

	close(file);
	hl_fds_closed(file);
	close(ends[0]);
	hl_fds_closed(ends[0]);
	s = list(&open_now, NULL);
	assert_null(find(s, file, NULL));
	assert_null(find(s, ends[0], NULL));
	assert_int_equal(open_now, open_before + 2);
	close(ends[1]);
	hl_fds_closed(ends[1]);
	close(copy);
	hl_fds_closed(copy);
}

static void test_sockets_described(void **state)
{
	unsigned open_fds;
	int pair[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
	hl_fds_opened(pair[0], HL_FDS_NAMELESS, NULL);
	const struct hl_fds_entry *e = find(list(&open_fds, NULL), pair[0], NULL);
	assert_non_null(e);
	assert_int_equal(e->kind, HL_FD_SOCKET);
	assert_int_equal(e->family, AF_UNIX);
	assert_string_equal(e->text, "<unknown>");
	/* the other end was never told: found in /proc/self/fd, without a stack */
	e = find(list(&open_fds, NULL), pair[1], NULL);
	assert_non_null(e);
	assert_int_equal(e->flags, HL_FD_UNSEEN);
	assert_int_equal(e->stack_id, 0);
	close(pair[0]);
	close(pair[1]);
	hl_fds_closed(pair[0]);
}

static void test_kernel_list_wins(void **state)
{
	unsigned open_before, open_now;
	list(&open_before, NULL);
	int fd = open("/dev/null", O_RDONLY);
	hl_fds_opened(fd, HL_FDS_GIVEN, "/dev/null");
	syscall(SYS_close, fd); /* closed where the hook does not see it */
	struct seen *s = list(&open_now, NULL);
	assert_null(find(s, fd, NULL));
	assert_int_equal(open_now, open_before);
}

static void test_hook_and_std_left_out(void **state)
{
	unsigned open_before, open_now, std;
	list(&open_before, &std);
	assert_true(std <= 3);
	struct hl_fd h;
	assert_true(hl_fd_keep(&h, open("/dev/null", O_WRONLY)));
	struct seen *s = list(&open_now, NULL);
	assert_null(find(s, h.fd, NULL)); /* the hook's own */
	assert_int_equal(open_now, open_before);
	for (int fd = 0; fd < 3; fd++)
		assert_null(find(s, fd, NULL)); /* yes: not 0, 1, 2 */
	hl_options.track_fds = HL_TRACK_FDS_ALL;
	s = list(&open_now, NULL);
	assert_int_equal(s->n >= std, true);
	if (fcntl(2, F_GETFD) != -1)
		assert_non_null(find(s, 2, NULL)); /* all: 0, 1, 2 too */
	hl_options.track_fds = HL_TRACK_FDS_YES;
	hl_fd_release(&h);
}

static void test_nothing_kept_when_off(void **state)
{
	unsigned open_fds;
	hl_options.track_fds = HL_TRACK_FDS_NO;
	int fd = open("/dev/null", O_RDONLY);
	hl_fds_opened(fd, HL_FDS_GIVEN, "/dev/null");
	hl_options.track_fds = HL_TRACK_FDS_YES;
	const struct hl_fds_entry *e = find(list(&open_fds, NULL), fd, NULL);
	assert_non_null(e);
	assert_int_equal(e->flags, HL_FD_UNSEEN); /* never recorded: only the kernel knew */
	close(fd);
	hl_fds_closed(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_named_and_ordered),
		cmocka_unit_test(test_sockets_described),
		cmocka_unit_test(test_kernel_list_wins),
		cmocka_unit_test(test_hook_and_std_left_out),
		cmocka_unit_test(test_nothing_kept_when_off),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
