-- Reserved: 0018 belongs to another branch of issue 26. tern needs the
-- sequence unbroken, so this no-op holds its place until that branch
-- merges; delete this file then (its 0018 replaces it).
SELECT 1;

---- create above / drop below ----

SELECT 1;
