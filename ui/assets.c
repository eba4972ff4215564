/*
 * ui/assets.c: the pages' files, compiled in (assets_data.h is generated
 * from ui/assets/ by embed_assets.py). This table is the whole of what the
 * server can send besides API answers: a name not in it is a 404.
 */
#include <string.h>

#include "ui.h"
#include "util.h"

#include "assets_data.h"

const struct hl_ui_asset *hl_ui_asset_find(const char *name)
{
	for (size_t i = 0; i < HL_ARRAY_SIZE(hl_ui_asset_table); i++)
		if (!strcmp(hl_ui_asset_table[i].name, name))
			return &hl_ui_asset_table[i];
	return NULL;
}
