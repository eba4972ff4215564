/*
 * reporter/store/query_where.h: where a stack "is", as every view of the
 * database names it: the innermost frame in the program's own code (a
 * module outside the system's library directories), with a source file if
 * one has it, else by module and offset; only when every frame is the
 * system's, the innermost with a source file. So code built without debug
 * information is named by its module, never by libc's start code, which
 * has a file and is outermost.
 *
 * SQL fragments: HL_WHERE_OF_FRAME(leaf) walks the call tree up from the
 * frames.id `leaf` (an SQL expression) and selects the chosen frame's
 * symbol (y.function, y.file, y.line, y.module, y.module_offset).
 */
#ifndef HL_REPORTER_STORE_QUERY_WHERE_H
#define HL_REPORTER_STORE_QUERY_WHERE_H

#define HL_WHERE_SYSTEM_MODULE(y)                                                            \
	"(" y ".module LIKE '/lib/%' OR " y ".module LIKE '/lib64/%' OR " y                   \
	".module LIKE '/usr/lib/%' OR " y ".module LIKE '/usr/lib64/%')"

#define HL_WHERE_OF_FRAME(leaf)                                                              \
	"WITH RECURSIVE walk(pos, frame_id) AS (SELECT 0, " leaf " UNION ALL"                 \
	" SELECT w.pos + 1, f.parent_id FROM walk w JOIN frames f ON f.id = w.frame_id"       \
	" WHERE f.parent_id IS NOT NULL)"                                                     \
	" SELECT y.function, y.file, y.line, y.module, y.module_offset FROM walk w"          \
	" JOIN frames f ON f.id = w.frame_id JOIN symbols y ON y.id = f.symbol_id"            \
	" ORDER BY coalesce(" HL_WHERE_SYSTEM_MODULE("y") ", 1), y.file IS NULL, w.pos LIMIT 1"

#endif /* HL_REPORTER_STORE_QUERY_WHERE_H */
