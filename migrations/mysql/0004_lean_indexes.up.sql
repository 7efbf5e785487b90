-- The expiry query always names the resource: with it first, the index
-- reads the expired range in order. (MySQL has no partial indexes; the
-- other dialects also leave NULLs out of this index and tabula_log_next.)
ALTER TABLE tabula_current DROP INDEX tabula_current_expiry, ADD INDEX tabula_current_expiry (resource, expires_at);
-- Name and namespace selectors query the key columns; these rows were
-- never read.
DELETE FROM tabula_index WHERE name IN ('f:metadata.name', 'f:metadata.namespace');
