CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, blob BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000)
INSERT INTO t SELECT x, 'name-' || x || '-' || hex(x * 7919), x * 1.5, zeroblob(x % 300) FROM c;
CREATE INDEX t_name ON t(name);
UPDATE t SET v = v * 2 WHERE id % 3 = 0;
DELETE FROM t WHERE id % 7 = 0;
SELECT count(*), sum(v), max(length(name)), sum(length(blob)) FROM t;
SELECT name FROM t ORDER BY name DESC LIMIT 3;
SELECT id % 10 AS k, count(*), avg(v) FROM t GROUP BY k ORDER BY k;
