/*
 * tests/reporter/test_suppress.c: leak suppressions: valgrind's wildcards
 * (* and ? in names, ... for frames), the hidden allocator frame,
 * match-leak-kinds, mangled names, LeakSanitizer's leak: patterns with their
 * anchors, malformed files named by line, the built-in set, counting, a
 * generated entry that suppresses exactly its leak, and verdicts remembered
 * per stack that are those computed afresh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "suppress.h"

#define FRAME(fn, mod) { .address = 0x1000, .function = (fn), .file = "/src/app.c", \
			 .line = 3, .module = (mod) }

static const struct hl_frame_info stack[] = {
	FRAME("leak_a", "/opt/app/bin/prog"),
	FRAME("helper", "/opt/app/lib/libfoo.so.1"),
	FRAME("main", "/opt/app/bin/prog"),
	FRAME("__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6"),
};
#define NSTACK (sizeof(stack) / sizeof(stack[0]))

/* Name of the suppression of text matching stack as class cls, or NULL. */
static const char *match_text(const char *text, unsigned cls)
{
	static char name[128];
	struct hl_suppressions set;
	const struct hl_suppression *s;
	char err[256];

	hl_supp_init(&set);
	if (hl_supp_parse(&set, text, strlen(text), "t.supp", err, sizeof(err)))
		fail_msg("parse: %s", err);
	s = hl_supp_match(&set, stack, NSTACK, cls, 10, 1);
	snprintf(name, sizeof(name), "%s", s ? s->name : "");
	hl_supp_destroy(&set);
	return s ? name : NULL;
}

#define VG(lines) "{\n  n\n  Memcheck:Leak\n" lines "}\n"

static void test_valgrind_wildcards(void **state)
{
	(void)state;
	assert_non_null(match_text(VG("  fun:leak_a\n"), HL_CLASS_UNKNOWN));
	assert_non_null(match_text(VG("  fun:leak_a\n  fun:helper\n  fun:main\n"), HL_CLASS_UNKNOWN));
	assert_null(match_text(VG("  fun:helper\n"), HL_CLASS_UNKNOWN));    /* anchored at the top */
	assert_non_null(match_text(VG("  fun:leak_*\n"), HL_CLASS_UNKNOWN));
	assert_non_null(match_text(VG("  fun:leak_?\n"), HL_CLASS_UNKNOWN));
	assert_null(match_text(VG("  fun:leak_??\n"), HL_CLASS_UNKNOWN));
	assert_non_null(match_text(VG("  fun:*\n  obj:*/libfoo.so*\n"), HL_CLASS_UNKNOWN));
	assert_null(match_text(VG("  fun:*\n  obj:*/libbar.so*\n"), HL_CLASS_UNKNOWN));
	assert_non_null(match_text(VG("  ...\n  fun:main\n"), HL_CLASS_UNKNOWN));
	assert_non_null(match_text(VG("  ...\n  fun:leak_a\n"), HL_CLASS_UNKNOWN)); /* ... = none */
	assert_non_null(match_text(VG("  fun:leak_a\n  ...\n  fun:__libc_start_main\n"), HL_CLASS_UNKNOWN));
	assert_null(match_text(VG("  ...\n  fun:not_there\n"), HL_CLASS_UNKNOWN));
	assert_null(match_text(VG("  fun:leak_a\n  fun:main\n"), HL_CLASS_UNKNOWN)); /* a frame skipped */
	/* more lines than frames */
	assert_null(match_text(VG("  ...\n  fun:__libc_start_main\n  fun:x\n"), HL_CLASS_UNKNOWN));
	/* entries written for valgrind start at the allocator */
	assert_non_null(match_text(VG("  fun:malloc\n  fun:leak_a\n"), HL_CLASS_UNKNOWN));
	assert_non_null(match_text(VG("  fun:_Znwm\n  fun:leak_a\n"), HL_CLASS_UNKNOWN));
	assert_non_null(match_text(VG("  obj:*vgpreload_memcheck*\n  fun:leak_a\n"), HL_CLASS_UNKNOWN));
	assert_null(match_text(VG("  fun:malloc\n  fun:helper\n"), HL_CLASS_UNKNOWN));
}

static void test_leak_kinds(void **state)
{
	const char *def = VG("  match-leak-kinds: definite,possible\n  fun:leak_a\n");

	(void)state;
	assert_non_null(match_text(def, HL_CLASS_DEFINITE));
	assert_non_null(match_text(def, HL_CLASS_POSSIBLE));
	assert_null(match_text(def, HL_CLASS_INDIRECT));
	assert_null(match_text(def, HL_CLASS_REACHABLE));
	assert_non_null(match_text(def, HL_CLASS_UNKNOWN)); /* no scan: any listed kind */
	assert_non_null(match_text(VG("  match-leak-kinds: all\n  fun:leak_a\n"), HL_CLASS_REACHABLE));
	assert_null(match_text(VG("  match-leak-kinds: none\n  fun:leak_a\n"), HL_CLASS_UNKNOWN));
	/* other kinds and tools never match a leak */
	assert_null(match_text("{\n n\n Memcheck:Cond\n fun:leak_a\n}\n", HL_CLASS_UNKNOWN));
	assert_null(match_text("{\n n\n Memcheck:Param\n write(buf)\n fun:leak_a\n}\n", HL_CLASS_UNKNOWN));
	assert_null(match_text("{\n n\n Helgrind:Race\n fun:leak_a\n}\n", HL_CLASS_UNKNOWN));
}

static void test_mangled_names(void **state)
{
	static const struct hl_frame_info cxx[] = { FRAME("ns::make_widget(int)", "/p/prog") };
	struct hl_suppressions set;
	const char *text = VG("  fun:_ZN2ns11make_widgetEi\n");
	char err[256];

	(void)state;
	hl_supp_init(&set);
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "t", err, sizeof(err)), 0);
	assert_non_null(hl_supp_match(&set, cxx, 1, HL_CLASS_UNKNOWN, 1, 1));
	hl_supp_destroy(&set);
}

static void test_lsan(void **state)
{
	(void)state;
	assert_string_equal(match_text("# LSan\nleak:helper\n", HL_CLASS_UNKNOWN), "helper");
	assert_non_null(match_text("leak:libfoo.so\n", HL_CLASS_UNKNOWN));       /* module */
	assert_non_null(match_text("leak:app.c\n", HL_CLASS_UNKNOWN));           /* file */
	assert_non_null(match_text("leak:^leak_a$\n", HL_CLASS_UNKNOWN));
	assert_null(match_text("leak:^eak_a\n", HL_CLASS_UNKNOWN));
	assert_null(match_text("leak:leak_$\n", HL_CLASS_UNKNOWN));
	assert_non_null(match_text("leak:lea*_a\n", HL_CLASS_UNKNOWN));
	assert_non_null(match_text("leak:^*elper$\n", HL_CLASS_UNKNOWN));
	assert_null(match_text("leak:nothing\n", HL_CLASS_UNKNOWN));
	assert_true(hl_supp_lsan_match("a*c", "xxabbbcxx"));
	assert_false(hl_supp_lsan_match("a*c$", "xxabbbcxx"));
	assert_true(hl_supp_glob("a*b?d", "aXXbcd"));
	assert_false(hl_supp_glob("a*b?d", "aXXbd"));
}

/* err for text, which must fail. */
static const char *parse_error(const char *text)
{
	static char err[256];
	struct hl_suppressions set;

	hl_supp_init(&set);
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "bad.supp", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(set.n, 0); /* nothing added */
	hl_supp_destroy(&set);
	return err;
}

static void test_malformed(void **state)
{
	(void)state;
	assert_string_equal(parse_error("leak:ok\n\n{\n  n\n  Memcheck:Leak\n  fun:a\n  bogus\n}\n"),
			    "bad.supp:7: expected fun:NAME, obj:PATH, '...' or '}', not 'bogus'");
	assert_non_null(strstr(parse_error("# c\n{\n  n\n  Memcheck:Leak\n  fun:a\n"),
				"bad.supp:2: entry 'n' is not closed"));
	assert_non_null(strstr(parse_error("{\n}\n"), "bad.supp:2: entry without a name"));
	assert_non_null(strstr(parse_error("{\n n\n fun:x\n}\n"), "bad.supp:3: expected Tool:Kind"));
	assert_non_null(strstr(parse_error("{\n n\n Memcheck:Leak\n}\n"), "bad.supp:1: entry 'n' has no"));
	assert_non_null(strstr(parse_error("{\n n\n Memcheck:Leak\n match-leak-kinds: most\n fun:a\n}\n"),
				"bad.supp:4: unknown leak kind 'most'"));
	assert_non_null(strstr(parse_error("leak:a\nrace:b\n"), "bad.supp:2: expected '{'"));
	assert_non_null(strstr(parse_error("leak:\n"), "bad.supp:1: leak: without a pattern"));
	assert_non_null(strstr(parse_error("{\n n\n Memcheck:Leak\n fun:\n}\n"), "bad.supp:4:"));
}

/* The built-in set is no wider than valgrind's own for thread DTVs: the DTV
 * pthread_create allocates is reported (valgrind calls a running detached
 * thread's "possibly lost"), a dynamic TLS block __tls_get_addr allocates is
 * suppressed when possibly lost or reachable, as valgrind's dtv-addr-tail
 * says, and not when definitely lost. */
static void test_defaults_and_counts(void **state)
{
	static const struct hl_frame_info dtv[] = {
		FRAME("allocate_dtv", "/lib64/ld-linux-x86-64.so.2"),
		FRAME("_dl_allocate_tls", "/lib64/ld-linux-x86-64.so.2"),
		FRAME("pthread_create", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("main", "/p/prog"),
	};
	static const struct hl_frame_info tls[] = {
		FRAME("tls_get_addr_tail", "/lib64/ld-linux-x86-64.so.2"),
		FRAME("__tls_get_addr", "/lib64/ld-linux-x86-64.so.2"),
		FRAME("use_tls", "/p/libtls.so"),
		FRAME("main", "/p/prog"),
	};
	struct hl_suppressions set;
	const struct hl_suppression *s;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	hl_supp_init(&set);
	hl_supp_add_defaults(&set);
	assert_true(set.n >= 4);
	for (unsigned c = HL_CLASS_DEFINITE; c <= HL_CLASS_REACHABLE; c++)
		assert_null(hl_supp_match(&set, dtv, 4, c, 272, 1));
	s = hl_supp_match(&set, tls, 4, HL_CLASS_POSSIBLE, 304, 1);
	assert_non_null(s);
	assert_string_equal(s->name, "dtv-addr-tail");
	assert_true(s->builtin);
	hl_supp_match(&set, tls, 4, HL_CLASS_REACHABLE, 304, 1);
	assert_null(hl_supp_match(&set, tls, 4, HL_CLASS_DEFINITE, 304, 1));
	assert_null(hl_supp_match(&set, stack, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_int_equal(s->matched, 2);
	assert_int_equal(s->bytes, 608);
	f = open_memstream(&text, &len);
	hl_supp_print_used(&set, f, "> ");
	fclose(f);
	assert_non_null(strstr(text, "> used_suppression:      2 dtv-addr-tail <built-in>:"));
	assert_non_null(strstr(text, "suppressed: 608 bytes in 2 blocks"));
	assert_null(strstr(text, "unused")); /* unused built-ins are not listed */
	free(text);
	hl_supp_destroy(&set);
}

/* glibc-dlerror takes dlerror's own state, and not a leak a library's
 * constructor makes under dlopen (which runs it below _dlerror_run). */
static void test_dlerror_narrow(void **state)
{
	static const struct hl_frame_info result[] = {
		FRAME("_dlerror_run", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("dlopen_implementation", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("main", "/p/prog"),
	};
	static const struct hl_frame_info message[] = {
		FRAME("__vasprintf_internal", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("___asprintf", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("__dlerror", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("main", "/p/prog"),
	};
	static const struct hl_frame_info ctor[] = {
		FRAME("dl_ctor", "/p/libplugin.so"),
		FRAME("call_init", "/lib64/ld-linux-x86-64.so.2"),
		FRAME("_dl_init", "/lib64/ld-linux-x86-64.so.2"),
		FRAME("_dl_catch_exception", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("_dlerror_run", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("dlopen_implementation", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("main", "/p/prog"),
	};
	static const struct hl_frame_info ctor_asprintf[] = {
		FRAME("__vasprintf_internal", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("___asprintf", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("dl_ctor", "/p/libplugin.so"),
		FRAME("call_init", "/lib64/ld-linux-x86-64.so.2"),
		FRAME("_dlerror_run", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("dlopen", "/lib/x86_64-linux-gnu/libc.so.6"),
		FRAME("main", "/p/prog"),
	};
	struct hl_suppressions set;
	const struct hl_suppression *s;

	(void)state;
	hl_supp_init(&set);
	hl_supp_add_defaults(&set);
	s = hl_supp_match(&set, result, 3, HL_CLASS_REACHABLE, 32, 1);
	assert_non_null(s);
	assert_string_equal(s->name, "glibc-dlerror");
	s = hl_supp_match(&set, message, 4, HL_CLASS_REACHABLE, 80, 1);
	assert_non_null(s);
	assert_string_equal(s->name, "glibc-dlerror");
	assert_null(hl_supp_match(&set, ctor, 7, HL_CLASS_DEFINITE, 72, 1));
	assert_null(hl_supp_match(&set, ctor_asprintf, 7, HL_CLASS_DEFINITE, 72, 1));
	hl_supp_destroy(&set);
}

/* The entry printed for a leak suppresses it and not a leak one frame
 * away, of the same stack with another caller, or of another class. */
static void test_generated_round_trip(void **state)
{
	struct hl_frame_info frames[NSTACK];
	struct hl_report_leak leak = { .leak_class = HL_CLASS_DEFINITE, .bytes = 16, .blocks = 1,
				       .fingerprint = "0123456789abcdef",
				       .stack = { .frames = frames, .nframes = NSTACK } };
	struct hl_frame_info other[NSTACK];
	struct hl_suppressions set;
	char *text = NULL, err[256];
	size_t len = 0;
	FILE *f;

	(void)state;
	memcpy(frames, stack, sizeof(frames));
	frames[1].function = NULL; /* printed as obj: */
	f = open_memstream(&text, &len);
	hl_supp_print_generated(f, NULL, &leak);
	fclose(f);
	assert_non_null(strstr(text, "{\n   leak_a-0123456789abcdef\n   Memcheck:Leak\n"
				     "   match-leak-kinds: definite\n   fun:leak_a\n"
				     "   obj:/opt/app/lib/libfoo.so.1\n   fun:main\n"));
	hl_supp_init(&set);
	assert_int_equal(hl_supp_parse(&set, text, len, "gen", err, sizeof(err)), 0);
	assert_non_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_POSSIBLE, 1, 1));
	memcpy(other, frames, sizeof(other));
	other[2].function = "other_main";
	assert_null(hl_supp_match(&set, other, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	memcpy(other, frames, sizeof(other));
	other[0].function = "leak_b";
	assert_null(hl_supp_match(&set, other, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_null(hl_supp_match(&set, frames + 1, NSTACK - 1, HL_CLASS_DEFINITE, 1, 1));
	hl_supp_destroy(&set);
	free(text);
}

/* Verdicts are remembered by stack and kind: the same frames in another
 * class get that class's verdict, and every call is counted. */
static void test_memo_kinds_and_counts(void **state)
{
	static const char text[] = VG("  match-leak-kinds: definite\n  fun:leak_a\n");
	struct hl_suppressions set;
	char err[256];

	(void)state;
	hl_supp_init(&set);
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "t", err, sizeof(err)), 0);
	assert_null(hl_supp_match(&set, stack, NSTACK, HL_CLASS_REACHABLE, 100, 1));
	assert_non_null(hl_supp_match(&set, stack, NSTACK, HL_CLASS_DEFINITE, 10, 1));
	assert_null(hl_supp_match(&set, stack, NSTACK, HL_CLASS_POSSIBLE, 100, 1));
	assert_null(hl_supp_match(&set, stack, NSTACK, HL_CLASS_REACHABLE, 100, 1));
	assert_non_null(hl_supp_match(&set, stack, NSTACK, HL_CLASS_DEFINITE, 20, 2));
	assert_non_null(hl_supp_match(&set, stack, NSTACK, HL_CLASS_UNKNOWN, 30, 3)); /* any kind */
	assert_int_equal(set.v[0].matched, 3);
	assert_int_equal(set.v[0].bytes, 60);
	assert_int_equal(set.v[0].blocks, 6);
	hl_supp_destroy(&set);
}

/* A remembered verdict is for the frames' text: a buffer rewritten in place
 * is another stack, an equal text elsewhere the same one; entries added
 * later are matched too. */
static void test_memo_text_not_address(void **state)
{
	static const char text[] = VG("  fun:leak_a\n");
	static const char more[] = VG("  fun:leak_b\n");
	struct hl_frame_info frames[NSTACK];
	char fn[16] = "leak_a", *copy;
	struct hl_suppressions set;
	char err[256];

	(void)state;
	memcpy(frames, stack, sizeof(frames));
	frames[0].function = fn;
	hl_supp_init(&set);
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "t", err, sizeof(err)), 0);
	assert_non_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	strcpy(fn, "leak_b");
	assert_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	strcpy(fn, "leak_a");
	assert_non_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	frames[0].function = copy = strdup("leak_a");
	assert_non_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	frames[0].module = NULL; /* the module is not part of fun: lines */
	assert_non_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	frames[0].function = NULL; /* "???" */
	assert_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	free(copy);
	assert_int_equal(set.v[0].matched, 4);

	/* leak_b now has a suppression: its remembered "none" must go */
	frames[0].function = fn;
	strcpy(fn, "leak_b");
	assert_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_int_equal(hl_supp_parse(&set, more, strlen(more), "u", err, sizeof(err)), 0);
	assert_ptr_equal(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1), &set.v[1]);
	hl_supp_destroy(&set);
}

/* Many calls over a few stacks and classes, against the built-in set and a
 * user file: each verdict and the final counts equal those of a set that
 * saw each call first (nothing remembered). */
static void test_memo_same_as_fresh(void **state)
{
	static const char user[] =
		"{\n  a-definite\n  Memcheck:Leak\n  match-leak-kinds: definite\n"
		"  fun:leak_?\n  ...\n  fun:main\n}\n"
		"{\n  helper-any\n  Memcheck:Leak\n  fun:malloc\n  fun:helper\n}\n"
		"{\n  reach\n  Memcheck:Leak\n  match-leak-kinds: reachable,possible\n"
		"  obj:*/prog\n}\n"
		"leak:libfoo.so\n";
	static const unsigned classes[] = { HL_CLASS_DEFINITE, HL_CLASS_INDIRECT, HL_CLASS_POSSIBLE,
					       HL_CLASS_REACHABLE, HL_CLASS_UNKNOWN };
	static const char *const tops[] = { "leak_a", "helper", "_dl_allocate_tls",
					    "leak_bb", "x_eh_alloc_y" };
	static const char *const mods[] = { "/opt/app/bin/prog", "/opt/app/lib/libfoo.so.1",
					    "/lib64/ld-linux-x86-64.so.2" };
	struct hl_suppressions memo, fresh;
	uint64_t matched[32] = { 0 }, bytes[32] = { 0 };
	unsigned seed = 12345;
	char err[256];

	(void)state;
	hl_supp_init(&memo);
	hl_supp_add_defaults(&memo);
	assert_int_equal(hl_supp_parse(&memo, user, strlen(user), "u", err, sizeof(err)), 0);
	assert_true(memo.n < HL_ARRAY_SIZE(matched));
	for (int call = 0; call < 2000; call++) {
		struct hl_frame_info frames[NSTACK];
		unsigned cls;
		const struct hl_suppression *a, *b;
		size_t n;

		seed = seed * 1103515245u + 12345u;
		memcpy(frames, stack, sizeof(frames));
		frames[0].function = tops[(seed >> 8) % HL_ARRAY_SIZE(tops)];
		frames[0].module = mods[(seed >> 12) % HL_ARRAY_SIZE(mods)];
		frames[1].function = tops[(seed >> 16) % HL_ARRAY_SIZE(tops)];
		n = 1 + (seed >> 20) % NSTACK;
		cls = classes[(seed >> 24) % HL_ARRAY_SIZE(classes)];
		hl_supp_init(&fresh);
		hl_supp_add_defaults(&fresh);
		assert_int_equal(hl_supp_parse(&fresh, user, strlen(user), "u", err, sizeof(err)), 0);
		a = hl_supp_match(&memo, frames, n, cls, (uint64_t)call, 1);
		b = hl_supp_match(&fresh, frames, n, cls, (uint64_t)call, 1);
		assert_int_equal(a ? a - memo.v : -1, b ? b - fresh.v : -1);
		if (b) {
			matched[b - fresh.v]++;
			bytes[b - fresh.v] += (uint64_t)call;
		}
		hl_supp_destroy(&fresh);
	}
	for (size_t i = 0; i < memo.n; i++) {
		assert_int_equal(memo.v[i].matched, matched[i]);
		assert_int_equal(memo.v[i].bytes, bytes[i]);
		assert_int_equal(memo.v[i].blocks, matched[i]);
	}
	hl_supp_destroy(&memo);
}

/* More stacks than are remembered: the oldest verdicts are dropped, and the
 * ones given after that are still right. Then one buffer rewritten for as
 * many stacks: each verdict is still that of its text. */
static void test_memo_full(void **state)
{
	static const char text[] = VG("  fun:f1?\n");
	enum { STACKS = 70000 };
	struct hl_frame_info frames[NSTACK];
	struct hl_suppressions set;
	char err[256], fn[32];
	char (*names)[8] = calloc(STACKS, sizeof(*names));
	uint64_t want = 0;

	(void)state;
	assert_non_null(names);
	memcpy(frames, stack, sizeof(frames));
	hl_supp_init(&set);
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "t", err, sizeof(err)), 0);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < STACKS; i++) {
			const struct hl_suppression *s;

			if (round < 2) {
				snprintf(names[i], sizeof(names[i]), "f%d", i);
				frames[0].function = names[i];
			} else {
				snprintf(fn, sizeof(fn), "f%d", i);
				frames[0].function = fn;
			}
			s = hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1);
			assert_int_equal(s != NULL, i >= 10 && i < 20);
			want += s != NULL;
		}
	}
	assert_int_equal(set.v[0].matched, want);
	assert_int_equal(want, 40);
	hl_supp_destroy(&set);
	free(names);
}

/* Source files are part of a stack's verdict once a leak: entry can match
 * them, and not before. */
static void test_memo_files(void **state)
{
	static const char text[] = VG("  fun:nothing_here\n");
	static const char lsan[] = "leak:other.c\n";
	struct hl_frame_info frames[NSTACK], other[NSTACK];
	struct hl_suppressions set;
	char err[256];

	(void)state;
	memcpy(frames, stack, sizeof(frames));
	memcpy(other, stack, sizeof(other));
	other[2].file = "/src/other.c";
	hl_supp_init(&set);
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "t", err, sizeof(err)), 0);
	assert_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_null(hl_supp_match(&set, other, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_int_equal(hl_supp_parse(&set, lsan, strlen(lsan), "l", err, sizeof(err)), 0);
	assert_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_ptr_equal(hl_supp_match(&set, other, NSTACK, HL_CLASS_DEFINITE, 1, 1), &set.v[1]);
	assert_null(hl_supp_match(&set, frames, NSTACK, HL_CLASS_DEFINITE, 1, 1));
	assert_ptr_equal(hl_supp_match(&set, other, NSTACK, HL_CLASS_DEFINITE, 1, 1), &set.v[1]);
	assert_int_equal(set.v[1].matched, 2);
	hl_supp_destroy(&set);
}

/* The verdict and its count in two steps (what the run's memo of stacks
 * remembers, reporter/stack_memo.h): the count is hl_supp_match's, and the
 * serial that keeps a remembered verdict valid changes with the entries and
 * differs between sets. */
static void test_verdict_and_serial(void **state)
{
	struct hl_suppressions set, other;
	const char *text = VG("  fun:leak_a\n");
	char err[256];
	uint64_t serial;
	size_t v;

	(void)state;
	hl_supp_init(&set);
	hl_supp_init(&other);
	assert_int_not_equal(set.serial, other.serial);
	serial = set.serial;
	assert_int_equal(hl_supp_verdict(&set, stack, NSTACK, HL_CLASS_DEFINITE), 0); /* no entries */
	assert_null(hl_supp_count(&set, 0, 10, 1));
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "t.supp", err, sizeof(err)), 0);
	assert_int_not_equal(set.serial, serial);
	v = hl_supp_verdict(&set, stack, NSTACK, HL_CLASS_DEFINITE);
	assert_int_equal(v, 1);
	assert_int_equal(set.v[0].matched, 0); /* a verdict is not a match */
	assert_ptr_equal(hl_supp_count(&set, v, 10, 1), &set.v[0]);
	assert_ptr_equal(hl_supp_count(&set, v, 5, 2), &set.v[0]);
	assert_int_equal(set.v[0].matched, 2);
	assert_int_equal(set.v[0].bytes, 15);
	assert_int_equal(set.v[0].blocks, 3);
	serial = set.serial;
	assert_int_equal(hl_supp_parse(&set, text, strlen(text), "u.supp", err, sizeof(err)), 0);
	assert_int_not_equal(set.serial, serial);
	hl_supp_destroy(&set);
	hl_supp_destroy(&other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valgrind_wildcards),
		cmocka_unit_test(test_leak_kinds),
		cmocka_unit_test(test_mangled_names),
		cmocka_unit_test(test_lsan),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_defaults_and_counts),
		cmocka_unit_test(test_dlerror_narrow),
		cmocka_unit_test(test_generated_round_trip),
		cmocka_unit_test(test_memo_kinds_and_counts),
		cmocka_unit_test(test_memo_text_not_address),
		cmocka_unit_test(test_memo_same_as_fresh),
		cmocka_unit_test(test_memo_full),
		cmocka_unit_test(test_memo_files),
		cmocka_unit_test(test_verdict_and_serial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
