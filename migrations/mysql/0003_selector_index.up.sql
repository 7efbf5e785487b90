-- Labels and selectable fields of every stored version, one row each, so
-- label and field selectors run as index lookups in SQL. Names are
-- "l:<label key>" or "f:<field path>"; values longer than 255 characters
-- are stored truncated to 255 (queries compare truncated values and the
-- server confirms every match). Written as one statement per step and
-- idempotent, because MySQL commits DDL implicitly.
CREATE TABLE IF NOT EXISTS tabula_index (
  rev BIGINT NOT NULL,
  name VARCHAR(330) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  value VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  PRIMARY KEY (rev, name),
  KEY tabula_index_lookup (name, value, rev)
) ENGINE=InnoDB;
-- Lets a selective latest list go from matching revisions to live rows.
CREATE INDEX IF NOT EXISTS tabula_current_rev ON tabula_current (rev);
REPLACE INTO tabula_index (rev, name, value)
  SELECT l.rev, CONCAT('l:', j.k), LEFT(JSON_UNQUOTE(JSON_EXTRACT(l.labels, CONCAT('$."', j.k, '"'))), 255)
  FROM tabula_log l, JSON_TABLE(JSON_KEYS(l.labels), '$[*]' COLUMNS (k VARCHAR(320) PATH '$')) j WHERE l.op <> 3;
REPLACE INTO tabula_index (rev, name, value)
  SELECT l.rev, CONCAT('f:', j.k), LEFT(JSON_UNQUOTE(JSON_EXTRACT(l.fields, CONCAT('$."', j.k, '"'))), 255)
  FROM tabula_log l, JSON_TABLE(JSON_KEYS(l.fields), '$[*]' COLUMNS (k VARCHAR(320) PATH '$')) j WHERE l.op <> 3;
