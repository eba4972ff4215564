/*
 * reporter/ingest/table_group.h: the two questions the block table asks of a group
 * of 16 control bytes, answered as a 16-bit mask (bit i: byte i).
 *
 * With SSE2 (every x86-64) each is one compare and one movemask. Elsewhere
 * (arm64, or -Dtable_simd=portable, which one CI build forces so the
 * fallback stays tested) a plain loop over the bytes, which compilers turn
 * into vector code where they can. Both give the same masks; the table's
 * unit tests run on each (test_table and test_table_portable).
 */
#ifndef HL_REPORTER_TABLE_GROUP_H
#define HL_REPORTER_TABLE_GROUP_H

#include <stdint.h>

#if defined(__SSE2__) && !defined(HL_TABLE_PORTABLE)
#include <emmintrin.h>

/* Bit i set: control byte i of the group equals byte. */
static inline unsigned hl_group_match(const uint8_t *group, uint8_t byte)
{
	__m128i g = _mm_loadu_si128((const __m128i *)group);

	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(g, _mm_set1_epi8((char)byte)));
}

/* Bit i set: the top bit of control byte i is set. */
static inline unsigned hl_group_top_bits(const uint8_t *group)
{
	return (unsigned)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)group));
}
#else
static inline unsigned hl_group_match(const uint8_t *group, uint8_t byte)
{
	unsigned mask = 0;

	for (unsigned i = 0; i < 16; i++)
		mask |= (unsigned)(group[i] == byte) << i;
	return mask;
}

static inline unsigned hl_group_top_bits(const uint8_t *group)
{
	unsigned mask = 0;

	for (unsigned i = 0; i < 16; i++)
		mask |= (unsigned)(group[i] >> 7) << i;
	return mask;
}
#endif

#endif /* HL_REPORTER_TABLE_GROUP_H */
