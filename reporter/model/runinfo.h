/*
 * reporter/model/runinfo.h: what a stored run says about where it came from: the
 * git commit and branch, and a random UUID that names the run in every
 * database it is imported into.
 *
 * The commit and branch come from the CI's variables when one set them
 * (GitHub Actions, GitLab CI, Buildkite, CircleCI, Travis, Jenkins,
 * Bitbucket), else from `git rev-parse` run by the reporter in its working
 * directory. Nothing is added to the traced program's environment.
 */
#ifndef HL_REPORTER_RUNINFO_H
#define HL_REPORTER_RUNINFO_H

#include <stddef.h>

#include "report.h"

/* Sets r->git_commit and r->git_branch (arena copies) when known.
 * HEAPLEDGER_GIT=0 skips the `git` call (the CI variables still count). */
void hl_runinfo_git(struct hl_report *r);
/* Sets r->cwd and r->hostname (arena copies) when known. */
void hl_runinfo_host(struct hl_report *r);
/* Sets r->uuid to a new random RFC 4122 version 4 UUID. */
void hl_runinfo_uuid(struct hl_report *r);
/* Adds "key=value" to r's labels; returns 0 or -EINVAL if it has no '=' or
 * an empty key. */
int hl_runinfo_add_label(struct hl_report *r, const char *key_value);
/* The label test=NAME from $HEAPLEDGER_TEST_NAME, the variable a test runner
 * sets for each test (meson's test(env:), CTest's ENVIRONMENT property, a
 * Makefile loop; none of them exports a test's name by itself), unless a
 * --label test=... was given. */
void hl_runinfo_test_name(struct hl_report *r);
/* The same as an args.h callback (report: the struct hl_report): NULL, or
 * why the value is wrong. */
const char *hl_runinfo_label_arg(const char *key_value, void *report);

#endif /* HL_REPORTER_RUNINFO_H */
