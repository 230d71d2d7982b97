// Package docscheck keeps the documentation true to the code and to the
// committed benchmark data. Its tests run in make test and fail when:
//
//   - a HOOKINBOX_*, TEMPORAL_*, OTEL_* or DATABASE_URL variable the
//     module's Go code reads is in neither of the README's tables, or in
//     the wrong one: the configuration table lists what non-test code
//     outside lab/ reads, the test variables table (under ## Tests) what
//     only tests and lab/ read, and every HOOKINBOX_TEST_*; or a table lists
//     one that nothing reads, or one twice (TreeEnvReads, SplitEnvReads,
//     ConfigTableVars, CheckEnvTables; what counts as a read is in
//     EnvVarsRead's comment);
//   - a benchmark table of README.md or docs/benchmarks.md between
//     "<!-- bench report KIND FILE… -->" and "<!-- end bench report -->" is
//     not what `hookinbox-lab bench report KIND FILE…` prints from those
//     committed reports (BenchTables regenerates each, FirstDifference
//     names the first line that differs; the kinds are lab/bench.Tables,
//     make docs rewrites them);
//   - a measured figure in docs/benchmarks.md's Figures section or the
//     README's Benchmarks section does not name the bench-results/ JSON file
//     it comes from, or names one that is not there (CheckFigures);
//   - docs/security.md's per-role privileges or the README's roles table
//     differ from what the grants give each role on a migrated database
//     (RoleTables, RolesDetail, RolesSummary: the one source is
//     PostgreSQL's catalog after store.ApplyRoles).
//   - a hookinbox or hookinbox-lab command line of the README, docs/, the
//     CHANGELOG's current release or a command's Example does not parse
//     with the real cobra tree (CheckCommand: unknown command or flag,
//     wrong number of arguments, missing required flag; the hookinbox-lab
//     lines are checked in cmd/hookinbox-lab, where its tree is);
//   - docs/console.md's route table and the console's router differ in a
//     route or its least role (CheckRoutes);
//   - a quoted migration number or file name is not in migrations/
//     (CheckMigrations);
//   - the configuration table states another default than internal/config
//     has, or none (ConfigTableDefaults);
//   - a Go identifier written as code (a code span such as `hookinbox.New`,
//     `providers.Normalized.Reply` or `Event.Fetch`, or a selector in a
//     ```go block) is not declared by any package of that name, or a path
//     of the tree written as code (`internal/store`,
//     `providers/all/all.go`) is not there (GoIndex.CheckGoNames; the rule
//     is in goidents.go).
//
// Apart from the roles check, which reads a test database's catalog, it
// reads Go source and Markdown and builds command trees and the console's
// router: it runs no command and needs no server.
package docscheck
