// Package webhook is the HTTP intake (SPEC R1–R9): a gin router that takes
// POST /webhooks/:endpoint, enforces the body limit, hands each delivery's
// exact raw bytes to package admission (signature, source account and
// environment, tenant mapping, one committed inbox row or a quarantine
// entry, the doorbell) and maps what admission did to the status code and
// body the sender sees. It records each request's outcome and latency.
//
// The public handler serves only that route and a bare /healthz; the
// detailed readiness (Ready) and the metrics belong on the internal
// listener (app). Every request is bounded before it costs anything: the
// header block (MaxHeaderBytes, 431), the slug (the schema's pattern, else
// 404 without a database call), the body (413), and a deadline over the
// body read and every database call (RequestTimeout, then 503). Only a
// registered endpoint's slug becomes a metric label.
//
// It knows nothing of providers or Temporal (admission and Handoff do),
// never logs payloads, and never answers 2xx for work that exists only in
// memory.
package webhook
