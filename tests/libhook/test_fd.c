/* tests/libhook/test_fd.c: the hook's own descriptors (libhook/fd.c) sit high,
 * close-on-exec, and are never closed once the program took their number. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static void test_kept_high_and_cloexec(void **state)
{
	struct hl_fd h;
	int fd = open("/dev/null", O_WRONLY);
	assert_true(fd >= 0);
	assert_true(hl_fd_keep(&h, fd));
	assert_true(h.fd > 100); /* near the top of a limit of 1024 or more */
	assert_true(fcntl(h.fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(fcntl(fd, F_GETFD), -1); /* the low number was given back */
	assert_true(hl_fd_is_ours(&h));
	hl_fd_release(&h);
	assert_int_equal(h.fd, -1);
}

static void test_taken_number_is_left_alone(void **state)
{
	struct hl_fd h;
	int pipe_fds[2];
	assert_true(hl_fd_keep(&h, open("/dev/null", O_WRONLY)));
	assert_int_equal(pipe(pipe_fds), 0);
	int number = h.fd;
	assert_int_equal(dup2(pipe_fds[1], number), number); /* the program takes it */
	assert_false(hl_fd_is_ours(&h));
	hl_fd_release(&h);
	assert_int_not_equal(fcntl(number, F_GETFD), -1); /* still the program's */
	assert_int_equal(write(number, "x", 1), 1);
	close(number);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

static void test_small_limit(void **state)
{
	struct rlimit saved, small = { 20, 20 };
	struct hl_fd h;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	small.rlim_max = saved.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &small), 0);
	assert_true(hl_fd_keep(&h, open("/dev/null", O_WRONLY)));
	assert_true(h.fd < 20);
	hl_fd_release(&h);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

/* Under secure execution none of the hook's variables is read. */
static void test_env_secure(void **state)
{
	setenv("HEAPLEDGER_LOG", "/tmp/x", 1);
	assert_null(hl_env_get_as("HEAPLEDGER_LOG", true));
	assert_string_equal(hl_env_get_as("HEAPLEDGER_LOG", false), "/tmp/x");
	assert_string_equal(hl_env_get("HEAPLEDGER_LOG"), "/tmp/x"); /* not setuid here */
	unsetenv("HEAPLEDGER_LOG");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_high_and_cloexec),
		cmocka_unit_test(test_taken_number_is_left_alone),
		cmocka_unit_test(test_small_limit),
		cmocka_unit_test(test_env_secure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
