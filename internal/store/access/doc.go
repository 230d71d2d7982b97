// Package access holds the statements of what operators hold and queue:
// API tokens (stored hashed, with their role) and bulk replay jobs.
package access
