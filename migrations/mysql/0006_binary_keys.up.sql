-- Keys and selector names and values compare as Kubernetes compares them:
-- byte for byte, trailing spaces significant. ascii_bin and utf8mb4_bin
-- pad with spaces ('a' = 'a '), so two names a kind allows collided on one
-- row; an ascii column made a query for a non-ASCII name fail (Illegal mix
-- of collations); and names of kinds without a length limit (RBAC's) may
-- be longer than 253. VARBINARY compares bytes with no padding. name is
-- as long as InnoDB's 3072-byte key limit allows beside resource and
-- namespace.
ALTER TABLE tabula_log MODIFY resource VARBINARY(320) NOT NULL, MODIFY namespace VARBINARY(253) NOT NULL, MODIFY name VARBINARY(2048) NOT NULL;
ALTER TABLE tabula_current MODIFY resource VARBINARY(320) NOT NULL, MODIFY namespace VARBINARY(253) NOT NULL, MODIFY name VARBINARY(2048) NOT NULL;
ALTER TABLE tabula_index MODIFY name VARBINARY(330) NOT NULL, MODIFY value VARBINARY(1020) NOT NULL, MODIFY resource VARBINARY(320) NOT NULL, MODIFY namespace VARBINARY(253) NOT NULL;
