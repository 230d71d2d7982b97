-- 0020 was reserved for the built-in domains' move out of the core set; that
-- move needed no core migration (the domains' own sets adopt their tables, see
-- domains/*/schema), so this number stays a no-op: tern refuses gaps, and a
-- database that applied it must find it again.
SELECT 1;

---- create above / drop below ----
SELECT 1;
