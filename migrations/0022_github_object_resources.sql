-- GitHub events run by the object they are about (issue #33): an issue, a
-- pull request, a check suite, a workflow run… (providers/github Resource),
-- where every event of a repository used to run in the repository's one
-- workflow. A pending row recorded under the old rule is moved onto its
-- object here, so an object's older events and its newer ones (recorded on
-- the object by the new intake) are in one workflow, handled in the intake's
-- order (ORDER BY id). A row being handled while this runs keeps its lock:
-- the UPDATE waits for it and, once it is done, leaves it alone. The
-- repository's workflow finds nothing more to load and completes; the
-- sweeper rings the objects' workflows.
--
-- Only JSON payloads are read (a form-encoded delivery stays on its
-- repository, as does a row a route serialized elsewhere: object_id set).
-- The rule is the Go one, checked against it on every octokit example by
-- migrations' TestGitHubResourcesMigrationMatchesNormalize.
UPDATE webhook_inbox w
   SET resource_kind = m.kind, resource_id = m.id
  FROM (
    SELECT r.id AS row_id, o.kind, o.repo || o.sep || o.n AS id
      FROM (
        SELECT i.id, split_part(i.event_type, '.', 1) AS event, convert_from(i.payload, 'UTF8')::jsonb AS doc
          FROM webhook_inbox i
         WHERE i.provider = 'github' AND i.status = 'pending' AND i.resource_kind = 'repository'
           AND i.object_id IS NULL AND i.payload IS NOT NULL
           AND get_byte(i.payload, 0) = 123 -- '{': JSON, not a form
      ) r
      CROSS JOIN LATERAL (
        SELECT r.doc #>> '{repository,full_name}' AS repo, v.kind, v.sep, x.n
          FROM (VALUES
            ('issues', CASE WHEN r.doc->'issue' ? 'pull_request' THEN 'pull_request' ELSE 'issue' END, '#', r.doc #> '{issue,number}'),
            ('issue_comment', CASE WHEN r.doc->'issue' ? 'pull_request' THEN 'pull_request' ELSE 'issue' END, '#', r.doc #> '{issue,number}'),
            ('pull_request', 'pull_request', '#', r.doc #> '{pull_request,number}'),
            ('pull_request_review', 'pull_request', '#', r.doc #> '{pull_request,number}'),
            ('pull_request_review_comment', 'pull_request', '#', r.doc #> '{pull_request,number}'),
            ('pull_request_review_thread', 'pull_request', '#', r.doc #> '{pull_request,number}'),
            ('check_suite', 'check_suite', '/', r.doc #> '{check_suite,id}'),
            ('check_run', 'check_suite', '/', r.doc #> '{check_run,check_suite,id}'),
            ('workflow_run', 'workflow_run', '/', r.doc #> '{workflow_run,id}'),
            ('workflow_job', 'workflow_run', '/', r.doc #> '{workflow_job,run_id}'),
            ('release', 'release', '/', r.doc #> '{release,id}'),
            ('discussion', 'discussion', '#', r.doc #> '{discussion,number}'),
            ('discussion_comment', 'discussion', '#', r.doc #> '{discussion,number}'),
            ('deployment', 'deployment', '/', r.doc #> '{deployment,id}'),
            ('deployment_status', 'deployment', '/', r.doc #> '{deployment,id}'),
            ('deployment_review', 'workflow_run', '/', r.doc #> '{workflow_run,id}'),
            ('deployment_protection_rule', 'deployment', '/', r.doc #> '{deployment,id}')
          ) AS v(event, kind, sep, num)
          CROSS JOIN LATERAL (SELECT v.num #>> '{}' AS n) x
         WHERE v.event = r.event AND jsonb_typeof(v.num) = 'number' AND (v.num #>> '{}')::numeric > 0
           AND r.doc #>> '{repository,full_name}' IS NOT NULL
      ) o
  ) m
 WHERE w.id = m.row_id AND w.status = 'pending';

---- create above / drop below ----

-- Nothing to undo: a row moved onto its object is handled there whichever
-- intake recorded it.
