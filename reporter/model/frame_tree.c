/*
 * reporter/model/frame_tree.c: a run's stacks as one call tree (see
 * frame_tree.h).
 */
#include "frame_tree.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void hl_frame_tree_init(struct hl_frame_tree *t)
{
	memset(t, 0, sizeof(*t));
}

void hl_frame_tree_destroy(struct hl_frame_tree *t)
{
	free(t->nodes);
	free(t->slots);
	hl_frame_tree_init(t);
}

static size_t slot_of(const struct hl_frame_tree *t, uint32_t parent, uint64_t address,
		      uint32_t expansion, uint64_t module)
{
	uint64_t h = (address ^ ((uint64_t)parent << 32 | expansion)) * 0x9e3779b97f4a7c15ull;

	h = (h ^ module) * 0xff51afd7ed558ccdull;

	return (size_t)(h ^ (h >> 29)) & (t->nslots - 1);
}

static bool is_node(const struct hl_frame_node *n, uint32_t parent, uint64_t address,
		    uint32_t expansion, uint64_t module)
{
	return n->address == address && n->parent == parent && n->expansion == expansion &&
	       n->module == module;
}

static void rehash(struct hl_frame_tree *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 1024;

	free(t->slots);
	t->slots = hl_xcalloc(nslots, sizeof(*t->slots));
	t->nslots = nslots;
	for (uint32_t number = 1; number <= t->count; number++) {
		const struct hl_frame_node *n = &t->nodes[number - 1];
		size_t i = slot_of(t, n->parent, n->address, n->expansion, n->module);

		while (t->slots[i])
			i = (i + 1) & (t->nslots - 1);
		t->slots[i] = number;
	}
}

uint32_t hl_frame_tree_child(struct hl_frame_tree *t, uint32_t parent, uint64_t address,
			     uint32_t expansion, uint64_t module, bool *added)
{
	size_t i;

	*added = false;
	if ((size_t)(t->count + 1) * 2 > t->nslots)
		rehash(t);
	for (i = slot_of(t, parent, address, expansion, module); t->slots[i];
	     i = (i + 1) & (t->nslots - 1))
		if (is_node(&t->nodes[t->slots[i] - 1], parent, address, expansion, module))
			return t->slots[i];
	if (t->count == t->capacity) {
		t->capacity = t->capacity ? t->capacity * 2 : 1024;
		t->nodes = hl_xrealloc(t->nodes, t->capacity * sizeof(*t->nodes));
	}
	t->nodes[t->count] = (struct hl_frame_node){
		.address = address, .parent = parent, .expansion = expansion,
		.module = module,
	};
	t->slots[i] = ++t->count;
	*added = true;
	return t->count;
}
