-- Reserved: 0020 belongs to another branch of this batch. tern needs the
-- sequence unbroken, so this no-op holds its place for the traces branch's
-- 0024 until the coordinator renumbers; delete this file at merge (tern
-- refuses two migrations with one number, so it cannot be forgotten).
SELECT 1;

---- create above / drop below ----

SELECT 1;
