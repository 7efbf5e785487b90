-- Each selector index entry carries its object's resource and namespace,
-- and the lookup index orders them after the label or field, so a
-- selector in one namespace reads only that namespace's matches: before,
-- it read or counted the term's matches in every namespace and resource
-- (a 1% label in one namespace of a million objects: 10,000 entries for
-- 10 objects), or walked the namespace probing each object's entry.
ALTER TABLE tabula_index ADD COLUMN resource TEXT NOT NULL DEFAULT '';
ALTER TABLE tabula_index ADD COLUMN namespace TEXT NOT NULL DEFAULT '';
UPDATE tabula_index SET resource = l.resource, namespace = l.namespace FROM tabula_log l WHERE l.rev = tabula_index.rev;
DROP INDEX tabula_index_lookup;
CREATE INDEX tabula_index_scope ON tabula_index (name, value, resource, namespace, rev);
