// Package webhook is the HTTP intake (SPEC R1–R9): a gin router that takes
// POST /webhooks/:endpoint, enforces the body limit, hands each delivery's
// exact raw bytes to package admission (signature, source account and
// environment, tenant mapping, one committed inbox row or a quarantine
// entry, the doorbell) and maps what admission did to the status code and
// body the sender sees; it also serves /healthz, /readyz and /metrics and
// records each request's outcome and latency.
//
// It knows nothing of providers or Temporal (admission and Handoff do),
// never logs payloads, and never answers 2xx for work that exists only in
// memory.
package webhook
