/*
 * reporter/formats/json_values.h: model values as JSON values, the same way
 * in every JSON writer: a string the model does not know (NULL) and an
 * integer the database holds as NULL are both null; text that is not UTF-8
 * is shown with U+FFFD (its exact bytes: hl_json_bytes, text_bytes.h).
 */
#ifndef HL_REPORTER_JSON_VALUES_H
#define HL_REPORTER_JSON_VALUES_H

#include <jansson.h>

#include "run_list.h"
#include "text_bytes.h" /* hl_json_text: a string (bytes not UTF-8 as U+FFFD) or null */

static inline json_t *hl_json_maybe(struct hl_maybe v)
{
	return v.known ? json_integer((json_int_t)v.value) : json_null();
}

/* JSON integers are signed 64-bit in jansson; sizes fit in practice, and an
 * address above 2^63 (never seen on x86-64 user space) is kept as its bits. */
static inline json_t *hl_json_u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}

#endif /* HL_REPORTER_JSON_VALUES_H */
