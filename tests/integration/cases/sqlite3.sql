-- Integration case: an insert-heavy sqlite3 session on a temporary database:
-- 60,000 rows in one transaction, an index built afterwards, updates, deletes
-- and aggregate queries. Every value is derived from the row number, so the
-- output is the same on every run.
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
CREATE TABLE item (
	id INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	grp INTEGER NOT NULL,
	weight REAL NOT NULL
);
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
INSERT INTO item (id, name, grp, weight)
	SELECT i, printf('item-%08x', (i * 2654435761) % 4294967296), i % 97, (i % 1000) / 7.0
	FROM n;
CREATE TABLE tag (item_id INTEGER NOT NULL, tag TEXT NOT NULL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
INSERT INTO tag SELECT i * 2, 'tag' || (i % 13) FROM n;
COMMIT;
CREATE INDEX item_name ON item (name);
CREATE INDEX tag_item ON tag (item_id);
UPDATE item SET weight = weight * 2 WHERE grp IN (3, 5, 7);
DELETE FROM item WHERE id % 11 = 0;
SELECT count(*), sum(grp), printf('%.3f', sum(weight)) FROM item;
SELECT grp, count(*), printf('%.2f', avg(weight)) FROM item GROUP BY grp ORDER BY count(*) DESC, grp LIMIT 5;
SELECT name FROM item WHERE name >= 'item-8' ORDER BY name LIMIT 3;
SELECT tag, count(*), min(item.id), max(item.id) FROM tag JOIN item ON item.id = tag.item_id
	GROUP BY tag ORDER BY tag;
SELECT group_concat(id, '+') FROM (SELECT id FROM item WHERE grp = 42 ORDER BY weight DESC, id LIMIT 8);
PRAGMA integrity_check;
