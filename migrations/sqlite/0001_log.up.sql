-- The revision counter: one row, locked by every writing transaction, so
-- revisions are dense and in commit order (see sqlstore/doc.go).
CREATE TABLE tabula_rev (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  rev INTEGER NOT NULL,
  compact_rev INTEGER NOT NULL
);
INSERT INTO tabula_rev (id, rev, compact_rev) VALUES (1, 1, 0);

-- The event log: one row per write. rev is the resourceVersion.
CREATE TABLE tabula_log (
  rev INTEGER PRIMARY KEY,
  resource TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  op INTEGER NOT NULL,
  created_rev INTEGER NOT NULL,
  prev_rev INTEGER NOT NULL,
  next_rev INTEGER,
  labels TEXT NOT NULL,
  fields TEXT NOT NULL,
  expires_at INTEGER,
  value BLOB NOT NULL
);
CREATE INDEX tabula_log_key ON tabula_log (resource, namespace, name, rev);
CREATE INDEX tabula_log_next ON tabula_log (next_rev);

-- The live objects: key to the revision of its current row.
CREATE TABLE tabula_current (
  resource TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  rev INTEGER NOT NULL,
  PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID;
