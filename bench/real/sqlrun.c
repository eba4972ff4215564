/*
 * sqlrun: the sqlite-src workload's program (bench/run.sh). Runs an SQL
 * script on an in-memory database and prints each result row with its
 * columns joined by '|', as `sqlite3 :memory: '.read FILE'` does, so the
 * script's "checksum ..." row reads the same. run.sh compiles it with the
 * SQLite amalgamation and Debian's sqlite3 build options, once plain and
 * once per sanitizer: the one real program with an ASan column.
 *
 * usage: sqlrun FILE.sql
 */
#include <stdio.h>
#include <stdlib.h>

#include "sqlite3.h"

static int print_row(void *unused, int ncol, char **values, char **names)
{
	(void)unused;
	(void)names;
	for (int i = 0; i < ncol; i++)
		printf("%s%s", i ? "|" : "", values[i] ? values[i] : "");
	putchar('\n');
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: sqlrun FILE.sql\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (f == NULL) {
		perror(argv[1]);
		return 2;
	}
	char *sql = NULL;
	long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (n < 0 || fseek(f, 0, SEEK_SET) != 0 || (sql = malloc((size_t)n + 1)) == NULL ||
	    fread(sql, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "sqlrun: cannot read %s\n", argv[1]);
		return 2;
	}
	sql[n] = '\0';
	fclose(f);
	sqlite3 *db;
	char *err = NULL;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
		fprintf(stderr, "sqlrun: cannot open a database\n");
		return 2;
	}
	int rc = sqlite3_exec(db, sql, print_row, NULL, &err);
	if (rc != SQLITE_OK)
		fprintf(stderr, "sqlrun: %s\n", err ? err : "error");
	sqlite3_free(err);
	sqlite3_close(db);
	free(sql);
	return rc == SQLITE_OK ? 0 : 1;
}
