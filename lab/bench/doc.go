// Package bench measures hookinbox against the physical limits of the
// machine it runs on and against a naive design, each figure beside its
// baseline from the same run (ratios travel between machines, absolute
// numbers do not). It owns the harness behind `hookinbox-lab bench` and the Go
// benchmarks (`go test ./bench -bench .`):
//
//   - intake: acknowledged webhooks per second and latency of the real
//     intake handler over real HTTP, beside one INSERT…COMMIT of the same
//     inbox row per request with pgx at the same concurrency;
//   - end to end: events per second from the first delivery to the last
//     business effect committed, hookinbox (intake, hand-off, worker,
//     ResourceWorkflow; HandleEvent as a local activity by default, or as
//     a regular one with HOOKINBOX_HANDLE_MODE=activity) beside the naive
//     design of NaiveWorkflow (one SignalWithStart and one activity per
//     event), on the same dev server
//     and database server, with history events per event read back from
//     Temporal;
//   - scaling: the end to end at growing numbers of distinct resources,
//     with the process's peak memory.
//
// Every design runs the same business transaction per event (the activity
// HandleEvent with a cheap registered handler that commits one effect row
// and the inbox row's completion), so what differs is the orchestration
// only. The package starts throw-away PostgreSQL and Temporal servers when
// it is not pointed at existing ones; it never asserts a speed.
package bench
