// Package devenv runs the embedded local stack: a project-owned PostgreSQL
// cluster, the Temporal dev server and Mailpit, the last two built from the
// pinned tools modules under tools/ into .tools/. `hookinbox dev` (make run)
// and the test helpers both use it, so a fresh machine with only Go, gcc and
// the PostgreSQL binaries can run and test the project. For tests and
// benchmarks it also runs the production-shaped engine: a Temporal server on
// PostgreSQL with several history shards (StartTemporalPostgres, built from
// tools/temporal-server), behind the same Temporal type.
//
// It owns processes and folders under .data/ and .tools/; it never touches
// application tables (migrations do that).
package devenv
