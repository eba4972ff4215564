/*
 * reporter/model/frame_tree.h: a run's stacks as one call tree, for the store.
 *
 * Stacks of one program share most of their outer frames (main, the event
 * loop, the parser's recursion...). Stored frame by frame, cc1's 7.8k stacks
 * were 157k rows, most of the database and of the time to write it; as a
 * tree whose nodes are (caller node, frame) they are 31k nodes. A stack is
 * then its innermost node; its frames are that node's ancestors. The same
 * tree is what an allocation flame graph draws.
 *
 * A node is a symbolized frame: a return address expands into one frame per
 * inlined function (hl_symbolize), so the key is (caller node, address,
 * which frame of that address's expansion, module): the processes of a run
 * share the tree, and two of them (exec images) may have different files
 * at one address, so the module's identity is part of the key. Nodes are
 * numbered from 1 in the order they were added, so a caller's number is
 * always smaller than its callees' (the store gives each a database id
 * when it is added, and writes callers first).
 */
#ifndef HL_REPORTER_FRAME_TREE_H
#define HL_REPORTER_FRAME_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hl_frame_node {
	uint64_t address;   /* the frame's address, as captured */
	uint32_t parent;    /* the caller's node number, 0 = outermost frame */
	uint32_t expansion; /* index into the address's symbolized frames */
	uint64_t module;    /* identity of the module at the address (the caller's choice) */
};

struct hl_frame_tree {
	struct hl_frame_node *nodes; /* nodes[n - 1] is node n */
	uint32_t count;
	uint32_t capacity;
	uint32_t *slots;             /* open addressing: node numbers, 0 = empty */
	size_t nslots;               /* power of two, at least twice count */
};

void hl_frame_tree_init(struct hl_frame_tree *t);
void hl_frame_tree_destroy(struct hl_frame_tree *t);

/* The number of the node (parent, address, expansion, module), adding it if
 * there is none yet (then *added is set). */
uint32_t hl_frame_tree_child(struct hl_frame_tree *t, uint32_t parent, uint64_t address,
			     uint32_t expansion, uint64_t module, bool *added);

#endif /* HL_REPORTER_FRAME_TREE_H */
