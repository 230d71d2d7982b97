// Package docscheck keeps the documentation true to the code and to the
// committed benchmark data. Its tests run in make test and fail when:
//
//   - a HOOKINBOX_* variable that internal/config or lab/devenv reads is
//     missing from the README's configuration table, or the table lists one
//     that nothing reads (EnvVarsRead, ConfigTableVars, CheckEnvVars);
//   - a measured figure in docs/benchmarks.md's Figures section or the
//     README's Benchmarks section does not name the bench-results/ JSON file
//     it comes from, or names one that is not there (CheckFigures).
//
// It reads Go source and Markdown only: it runs no code and needs no
// database or server.
package docscheck
