-- A divergence found at the same provider version: the provider sent
-- different content under one version of a resource (seed 004: investigate,
-- do not overwrite). Recorded by the subscription handler, shown apart by
-- `hookinbox status`.
ALTER TABLE reconcile_divergences ADD COLUMN same_version boolean NOT NULL DEFAULT false;

---- create above / drop below ----

ALTER TABLE reconcile_divergences DROP COLUMN same_version;
