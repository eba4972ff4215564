/*
 * tests/libhook/test_shared.c: the shared event-buffer area (libhook/shared.c)
 * as the reporter sees it: the memfd HELLO carries, mapped read-only.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "emit_int.h"
#include "track.h"

#define SLOT_BYTES (64u * 1024u)
#define DATA_OFFSET 64u

/* `slots` counts the slots threads have taken, not the room: a reader
 * bounded by it never reads (and so never makes the kernel allocate) the
 * pages of the 250-odd slots a small program leaves untouched. */
static void test_slots_count_taken(void **state)
{
	(void)state;
	int fd = hl_shared_fd_take(SLOT_BYTES, DATA_OFFSET, SLOT_BYTES - DATA_OFFSET, 0);
	struct stat st;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	const struct hl_shared_area *a = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(a != MAP_FAILED);
	close(fd);
	assert_int_equal(a->magic, HL_SHARED_MAGIC);
	assert_true((a->first_slot + (size_t)HL_SHARED_SLOTS * a->slot_bytes) <= (size_t)st.st_size);
	assert_int_equal(a->slots, 0);

	hl_lock(&hl_emit_write_lock);
	void *first = hl_shared_slot_take_locked();
	void *second = hl_shared_slot_take_locked();
	void *third = hl_shared_slot_take_locked();
	assert_non_null(first);
	assert_non_null(second);
	assert_non_null(third);
	assert_int_equal(a->slots, 3);
	/* A slot given back below the highest taken: the count stays, so the
	 * third is still read; the freed one is taken again first. */
	assert_true(hl_shared_slot_give_locked(second));
	assert_int_equal(a->slots, 3);
	assert_ptr_equal(hl_shared_slot_take_locked(), second);
	assert_int_equal(a->slots, 3);
	void *fourth = hl_shared_slot_take_locked();
	assert_ptr_equal((char *)fourth - (char *)third, (ptrdiff_t)a->slot_bytes);
	assert_int_equal(a->slots, 4);
	hl_unlock(&hl_emit_write_lock);
	munmap((void *)a, (size_t)st.st_size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_count_taken),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
