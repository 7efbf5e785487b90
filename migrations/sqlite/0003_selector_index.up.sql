-- Labels and selectable fields of every stored version, one row each, so
-- label and field selectors run as index lookups in SQL. Names are
-- "l:<label key>" or "f:<field path>"; values longer than 255 characters
-- are stored truncated to 255 (queries compare truncated values and the
-- server confirms every match).
CREATE TABLE tabula_index (
  rev INTEGER NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (rev, name)
) WITHOUT ROWID;
CREATE INDEX tabula_index_lookup ON tabula_index (name, value, rev);
-- Lets a selective latest list go from matching revisions to live rows.
CREATE INDEX IF NOT EXISTS tabula_current_rev ON tabula_current (rev);
INSERT INTO tabula_index (rev, name, value)
  SELECT l.rev, 'l:' || j.key, substr(j.value, 1, 255) FROM tabula_log l, json_each(l.labels) j WHERE l.op <> 3;
INSERT INTO tabula_index (rev, name, value)
  SELECT l.rev, 'f:' || j.key, substr(j.value, 1, 255) FROM tabula_log l, json_each(l.fields) j WHERE l.op <> 3;
