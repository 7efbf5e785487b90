-- Each selector index entry carries its object's resource and namespace,
-- and the lookup index orders them after the label or field, so a
-- selector in one namespace reads only that namespace's matches: before,
-- it read or counted the term's matches in every namespace and resource
-- (a 1% label in one namespace of a million objects: 10,000 entries for
-- 10 objects), or walked the namespace probing each object's entry.
-- The defaults only fill the existing rows: without one, a replica of an
-- older release still running against this database fails its writes
-- instead of writing entries no selector would find.
ALTER TABLE tabula_index ADD COLUMN resource TEXT COLLATE "C" NOT NULL DEFAULT '', ADD COLUMN namespace TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE tabula_index x SET resource = l.resource, namespace = l.namespace FROM tabula_log l WHERE l.rev = x.rev;
ALTER TABLE tabula_index ALTER COLUMN resource DROP DEFAULT, ALTER COLUMN namespace DROP DEFAULT;
DROP INDEX tabula_index_lookup;
CREATE INDEX tabula_index_scope ON tabula_index (name, value, resource, namespace, rev);
