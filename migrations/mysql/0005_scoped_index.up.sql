-- Each selector index entry carries its object's resource and namespace,
-- and the lookup index orders them after the label or field, so a
-- selector in one namespace reads only that namespace's matches: before,
-- it read or counted the term's matches in every namespace and resource
-- (a 1% label in one namespace of a million objects: 10,000 entries for
-- 10 objects), or walked the namespace probing each object's entry.
-- The defaults only fill the existing rows: without one, a replica of an
-- older release still running against this database fails its writes
-- instead of writing entries no selector would find. Each statement is
-- idempotent (DDL commits implicitly).
ALTER TABLE tabula_index ADD COLUMN IF NOT EXISTS resource VARCHAR(320) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '', ADD COLUMN IF NOT EXISTS namespace VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '';
UPDATE tabula_index x JOIN tabula_log l ON l.rev = x.rev SET x.resource = l.resource, x.namespace = l.namespace;
ALTER TABLE tabula_index ALTER COLUMN resource DROP DEFAULT, ALTER COLUMN namespace DROP DEFAULT;
ALTER TABLE tabula_index DROP INDEX IF EXISTS tabula_index_lookup, ADD INDEX IF NOT EXISTS tabula_index_scope (name, value, resource, namespace, rev);
