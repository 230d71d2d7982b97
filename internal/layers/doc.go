// Package layers holds no code: its tests check the import rules that
// docs/architecture.md states (the domain leaf depends on nothing, workflow
// code never reaches the database, the service binary carries no harness,
// one package inserts inbox rows), so a change that breaks one fails
// `make test` instead of drifting.
package layers
