// Package e2e holds the end-to-end tests: the real intake over HTTP, a real
// PostgreSQL, the real Temporal dev server and a real worker, wired by
// package app exactly as the binary wires them. It has no non-test code.
package e2e
