-- The revision counter: one row, locked by every writing transaction, so
-- revisions are dense and in commit order (see sqlstore/doc.go).
CREATE TABLE tabula_rev (
  id INTEGER PRIMARY KEY,
  rev BIGINT NOT NULL,
  compact_rev BIGINT NOT NULL
) ENGINE=InnoDB;
INSERT INTO tabula_rev (id, rev, compact_rev) VALUES (1, 1, 0);

-- Keys are ASCII (Kubernetes names) and compared bytewise (ascii_bin), so
-- the composite primary key stays small and sorts like Kubernetes.
CREATE TABLE tabula_log (
  rev BIGINT PRIMARY KEY,
  resource VARCHAR(320) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  namespace VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  op SMALLINT NOT NULL,
  created_rev BIGINT NOT NULL,
  prev_rev BIGINT NOT NULL,
  next_rev BIGINT NULL,
  labels MEDIUMTEXT NOT NULL,
  fields MEDIUMTEXT NOT NULL,
  expires_at BIGINT NULL,
  value LONGBLOB NOT NULL,
  KEY tabula_log_key (resource, namespace, name, rev),
  KEY tabula_log_next (next_rev)
) ENGINE=InnoDB;

CREATE TABLE tabula_current (
  resource VARCHAR(320) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  namespace VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  rev BIGINT NOT NULL,
  PRIMARY KEY (resource, namespace, name)
) ENGINE=InnoDB;
