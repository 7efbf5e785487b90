-- Expiry (Event TTL) lives on the live row, indexed, so expiring objects are
-- found by a range query instead of a scan or an in-memory list.
ALTER TABLE tabula_current ADD COLUMN expires_at BIGINT NULL, ADD INDEX tabula_current_expiry (expires_at);

-- Compaction marks: the newest revision seen at a time, so the compactor
-- can find "the revision of five minutes ago" after a restart or on
-- another replica.
CREATE TABLE IF NOT EXISTS tabula_compact_marks (
  rev BIGINT PRIMARY KEY,
  ts BIGINT NOT NULL
) ENGINE=InnoDB;
