// Package docscheck keeps the documentation true to the code and to the
// committed benchmark data. Its tests run in make test and fail when:
//
//   - a HOOKINBOX_* variable that internal/config or lab/devenv reads is
//     missing from the README's configuration table, or the table lists one
//     that nothing reads (EnvVarsRead, ConfigTableVars, CheckEnvVars);
//   - a measured figure in docs/benchmarks.md's Figures section or the
//     README's Benchmarks section does not name the bench-results/ JSON file
//     it comes from, or names one that is not there (CheckFigures);
//   - docs/security.md's per-role privileges or the README's roles table
//     differ from what the grants give each role on a migrated database
//     (RoleTables, RolesDetail, RolesSummary: the one source is
//     PostgreSQL's catalog after store.ApplyRoles).
//
// Apart from the roles check, which reads a test database's catalog, it
// reads Go source and Markdown only: it runs no code.
package docscheck
