-- Reserved for another branch's migration (the coordinator renumbers at merge):
-- a no-op so that 0021 follows without a gap. Delete it at merge.
SELECT 1;

---- create above / drop below ----
SELECT 1;
