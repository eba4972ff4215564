/*
 * reporter/formats/frame_json.c: a stack's frames as JSON (frame_json.h).
 */
#include "frame_json.h"

#include <stdio.h>

#include "json_values.h"

json_t *hl_frame_json(const struct hl_frame_info *f)
{
	char address[24];
	json_t *o = json_object();

	snprintf(address, sizeof(address), "0x%llx", (unsigned long long)f->address);
	json_object_set_new(o, "function", hl_json_text(f->function));
	json_object_set_new(o, "file", hl_json_text(f->file));
	json_object_set_new(o, "line", f->line ? json_integer(f->line) : json_null());
	json_object_set_new(o, "module", hl_json_text(f->module));
	json_object_set_new(o, "address", json_string(address));
	json_object_set_new(o, "offset", f->module ? hl_json_u64(f->offset) : json_null());
	json_object_set_new(o, "inlined", json_boolean(f->inlined));
	return o;
}

json_t *hl_frames_json(const struct hl_report_stack *s)
{
	json_t *a = json_array();

	for (size_t i = 0; i < s->nframes; i++)
		json_array_append_new(a, hl_frame_json(&s->frames[i]));
	return a;
}
