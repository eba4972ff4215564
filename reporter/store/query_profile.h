/*
 * reporter/store/query_profile.h: a process's stacks weighted by the bytes
 * allocated and leaked there, for profile viewers (speedscope). Part of the
 * one query layer (store_query.h).
 */
#ifndef HL_REPORTER_QUERY_PROFILE_H
#define HL_REPORTER_QUERY_PROFILE_H

#include <stdint.h>

#include "run_rows.h"
#include "store.h"

/* process_id's stacks that allocated something, by stack id, into
 * out->profile: the bytes allocated and leaked there and the frames
 * (function, file, line, module, offset), innermost first. 0 or -errno. */
int hl_query_profile(struct hl_store *s, int64_t process_id, struct hl_run_rows *out);

/* run_id with its processes, and each process's profile, into out
 * (hl_run_profiles_init'ed). -ENOENT with a message when there is no such
 * run. */
int hl_query_run_profiles(struct hl_store *s, int64_t run_id, struct hl_run_profiles *out);

#endif /* HL_REPORTER_QUERY_PROFILE_H */
