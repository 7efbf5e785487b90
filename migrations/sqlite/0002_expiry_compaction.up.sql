-- Expiry (Event TTL) lives on the live row, indexed, so expiring objects are
-- found by a range query instead of a scan or an in-memory list.
ALTER TABLE tabula_current ADD COLUMN expires_at INTEGER;
CREATE INDEX tabula_current_expiry ON tabula_current (expires_at);

-- Compaction marks: the newest revision seen at a time, so the compactor
-- can find "the revision of five minutes ago" after a restart or on
-- another replica.
CREATE TABLE tabula_compact_marks (
  rev INTEGER PRIMARY KEY,
  ts INTEGER NOT NULL
);
