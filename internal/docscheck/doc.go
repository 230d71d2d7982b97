// Package docscheck keeps the documentation true to the code. Its tests run
// in make test and fail when a HOOKINBOX_* variable that internal/config or
// lab/devenv reads is missing from the README's configuration table, or the
// table lists one that nothing reads (EnvVarsRead, ConfigTableVars,
// CheckEnvVars).
//
// It reads Go source and Markdown only: it runs no code and needs no
// database or server.
package docscheck
