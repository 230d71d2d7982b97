-- Reserved for the database roles migration (issue: DB roles), developed on
-- another branch. tern needs contiguous numbers, and the console's tables
-- take 0007, so this placeholder holds the slot; the roles branch's 0006
-- replaces this file when both are merged (delete this one then).
SELECT 1;

---- create above / drop below ----

SELECT 1;
