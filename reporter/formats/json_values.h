/*
 * reporter/formats/json_values.h: model values as JSON values, the same way
 * in every JSON writer: a string the model does not know (NULL) and an
 * integer the database holds as NULL are both null.
 */
#ifndef HL_REPORTER_JSON_VALUES_H
#define HL_REPORTER_JSON_VALUES_H

#include <jansson.h>

#include "run_list.h"

static inline json_t *hl_json_text(const char *s)
{
	return s ? json_string(s) : json_null();
}

static inline json_t *hl_json_maybe(struct hl_maybe v)
{
	return v.known ? json_integer((json_int_t)v.value) : json_null();
}

static inline json_t *hl_json_u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

#endif /* HL_REPORTER_JSON_VALUES_H */
