/*
 * libhook/insn.c: how many bytes the x86-64 instruction at a fault's pc
 * reads or writes, for "Invalid read of size N" (guardpage.c).
 *
 * A page fault tells the address and whether it was a write, not the size.
 * This decodes the prefixes and opcode of the instructions compilers emit
 * for loads and stores: mov and its zero/sign-extending forms, the integer
 * ALU, test, shift and unary groups, string moves, cmpxchg/xadd, SSE moves
 * and arithmetic (scalar or 16 bytes) and VEX/EVEX vector instructions
 * (their vector length). Anything else answers 0, "unknown": the report then
 * names the direction only. Never reads past the instruction: its bytes
 * were fetched by the CPU, so they are mapped.
 */
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

#if defined(__x86_64__)

struct prefixes {
	bool opsize16; /* 0x66 */
	bool rep;      /* 0xf3 */
	bool repne;    /* 0xf2 */
	bool rex_w;
};

static unsigned operand_size(const struct prefixes *p)
{
	return p->rex_w ? 8 : p->opsize16 ? 2 : 4;
}

/* 0x0f xx: SSE and the two-byte integer forms. */
static unsigned two_byte(uint8_t op, const uint8_t *next, const struct prefixes *p)
{
	unsigned scalar = p->rep ? 4 : p->repne ? 8 : 16;
	switch (op) {
	case 0x10: case 0x11: case 0x51: case 0x58: case 0x59: case 0x5c:
	case 0x5d: case 0x5e: case 0x5f:
		return scalar;
	case 0x28: case 0x29: case 0x54: case 0x55: case 0x56: case 0x57:
		return 16;
	case 0x12: case 0x13: case 0x16: case 0x17: case 0xd6:
		return 8;
	case 0x2e: case 0x2f:
		return p->opsize16 ? 8 : 4;
	case 0x6e:
		return p->rex_w ? 8 : 4;
	case 0x7e:
		return p->rep || p->rex_w ? 8 : 4;
	case 0x6f: case 0x7f:
		return p->rep || p->opsize16 ? 16 : 8;
	case 0xb6: case 0xbe: case 0xb0: case 0xc0:
		return 1;
	case 0xb7: case 0xbf:
		return 2;
	case 0xb1: case 0xc1: case 0xaf: case 0xa3: case 0xab: case 0xb3: case 0xbb:
		return operand_size(p);
	case 0xc7:
		return ((next[0] >> 3) & 7) == 1 ? (p->rex_w ? 16 : 8) : 0;
	default:
		if (op >= 0x40 && op <= 0x4f) /* cmov */
			return operand_size(p);
		if (op >= 0x90 && op <= 0x9f) /* setcc */
			return 1;
		return 0;
	}
}

/* VEX (c4, c5) and EVEX (62): the vector length, or a scalar move's size. */
static unsigned vector(const uint8_t *pc)
{
	unsigned map = 1, pp, length;
	uint8_t op;
	if (pc[0] == 0x62) {
		map = pc[1] & 3;
		pp = pc[2] & 3;
		length = 16u << ((pc[3] >> 5) & 3);
		op = pc[4];
	} else if (pc[0] == 0xc5) {
		pp = pc[1] & 3;
		length = pc[1] & 4 ? 32 : 16;
		op = pc[2];
	} else {
		map = pc[1] & 0x1f;
		pp = pc[2] & 3;
		length = pc[2] & 4 ? 32 : 16;
		op = pc[3];
	}
	if (map == 1 && (op == 0x10 || op == 0x11) && pp >= 2)
		return pp == 2 ? 4 : 8; /* vmovss, vmovsd */
	return length;
}

unsigned hl_insn_access_size(const void *at)
{
	const uint8_t *pc = at;
	struct prefixes p = { 0 };
	for (unsigned i = 0; i < 14; i++, pc++) {
		uint8_t b = *pc;
		if (b == 0x66)
			p.opsize16 = true;
		else if (b == 0xf3)
			p.rep = true;
		else if (b == 0xf2)
			p.repne = true;
		else if (b != 0x67 && b != 0xf0 && b != 0x2e && b != 0x36 && b != 0x3e &&
			 b != 0x26 && b != 0x64 && b != 0x65)
			break;
	}
	if (*pc >= 0x40 && *pc <= 0x4f) {
		p.rex_w = (*pc & 8) != 0;
		pc++;
	}
	uint8_t op = *pc;
	if (op == 0x62 || op == 0xc4 || op == 0xc5)
		return vector(pc);
	if (op == 0x0f)
		return two_byte(pc[1], pc + 2, &p);
	if (op < 0x40 && (op & 7) < 4) /* add, or, adc, sbb, and, sub, xor, cmp */
		return op & 1 ? operand_size(&p) : 1;
	switch (op) {
	case 0x88: case 0x8a: case 0xc6: case 0x80: case 0x84: case 0x86: case 0xf6:
	case 0xfe: case 0xd0: case 0xd2: case 0xc0: case 0xa4: case 0xaa: case 0xac:
	case 0xa6: case 0xae:
		return 1;
	case 0x89: case 0x8b: case 0xc7: case 0x81: case 0x83: case 0x85: case 0x87:
	case 0xf7: case 0xd1: case 0xd3: case 0xc1: case 0xa5: case 0xab: case 0xad:
	case 0xa7: case 0xaf:
		return operand_size(&p);
	case 0x63:
		return 4;
	case 0xff: /* inc, dec; call, jmp, push through memory take 8 */
		return ((pc[1] >> 3) & 7) < 2 ? operand_size(&p) : 8;
	default:
		return 0;
	}
}

#else

unsigned hl_insn_access_size(const void *at)
{
	(void)at;
	return 0;
}

#endif
