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
//   - a figure in a paragraph, list item or hand-typed table row of those
//     sections (and docs/soak.md) that cites bench-results/ reports is not
//     one of the cited reports' numbers after rounding to its written
//     precision (CheckCitedFigures). The rule, in short: any number of the
//     JSON at any depth (a _ms field also in seconds, a load average's
//     string its numbers), the mean of a design's repeated runs on a
//     load, and the numbers of a generated table whose reports the block
//     cites; a ratio (×, or a ÷/ratio column) may also be a quotient of
//     two rates or CPU costs of the same design or load; a share (%) 100
//     times any of those or one less. Exempt: whole numbers without a
//     unit (counts, settings, issue and migration numbers), code spans and
//     blocks (file names, dates in them), names (p99, v1.29.1), clock
//     times, a whole time or size in a sentence that calls it a setting
//     (a window, a warm-up, a timeout), and a sentence that says its figure
//     comes from elsewhere (a pprof profile, "not a committed report").
//     The full rule is the comment at the top of prose.go. A section ends
//     at its next heading outside a fenced block (a shell comment in a
//     ```sh block once ended the Figures section early, unchecked);
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
//     is in goidents.go);
//   - a relative markdown link or #anchor of the README, docs/, the
//     CHANGELOG or an example's README names a file or heading that is not
//     there (links.go).
//
// Apart from the roles check, which reads a test database's catalog, it
// reads Go source and Markdown and builds command trees and the console's
// router: it runs no command and needs no server.
package docscheck
