-- The revision counter: one row, locked by every writing transaction, so
-- revisions are dense and in commit order (see sqlstore/doc.go).
CREATE TABLE tabula_rev (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  rev BIGINT NOT NULL,
  compact_rev BIGINT NOT NULL
);
INSERT INTO tabula_rev (id, rev, compact_rev) VALUES (1, 1, 0);

-- The event log: one row per write. rev is the resourceVersion.
-- COLLATE "C" keeps key order bytewise, like Kubernetes, and lets range
-- scans use the indexes whatever the database's locale.
CREATE TABLE tabula_log (
  rev BIGINT PRIMARY KEY,
  resource TEXT COLLATE "C" NOT NULL,
  namespace TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  op SMALLINT NOT NULL,
  created_rev BIGINT NOT NULL,
  prev_rev BIGINT NOT NULL,
  next_rev BIGINT,
  labels TEXT NOT NULL,
  fields TEXT NOT NULL,
  expires_at BIGINT,
  value BYTEA NOT NULL
);
CREATE INDEX tabula_log_key ON tabula_log (resource, namespace, name, rev);
CREATE INDEX tabula_log_next ON tabula_log (next_rev);

CREATE TABLE tabula_current (
  resource TEXT COLLATE "C" NOT NULL,
  namespace TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  rev BIGINT NOT NULL,
  PRIMARY KEY (resource, namespace, name)
);
