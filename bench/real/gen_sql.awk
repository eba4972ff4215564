# gen_sql.awk: writes an insert-heavy SQL script for sqlite3 (bench/run.sh).
# One statement per row, so the parser and the B-tree both allocate; a
# secondary index, an update and a delete pass, then a checksum row.
# usage: awk -v rows=N -f gen_sql.awk > script.sql
# Park-Miller (x * 16807 mod 2^31-1) is exact in awk's doubles, so gawk and
# mawk write the same file.
function next_random() {
	state = (state * 16807) % 2147483647
	return state
}
BEGIN {
	state = 42
	print "CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, price REAL, note TEXT);"
	print "CREATE INDEX item_name ON item(name);"
	print "BEGIN;"
	for (i = 1; i <= rows; i++) {
		r = next_random()
		note = sprintf("%0" (1 + r % 120) "d", 0)
		printf("INSERT INTO item(name, price, note) VALUES('n%d', %d.%02d, '%s');\n",
		       r, r % 1000, r % 100, note)
	}
	print "COMMIT;"
	print "UPDATE item SET note = note || name WHERE id % 3 = 0;"
	print "DELETE FROM item WHERE id % 5 = 0;"
	print "SELECT 'checksum ' || count(*) || ' ' || sum(length(note)) || ' ' || total(price) FROM item;"
}
