// Package workflows holds hookinbox's deterministic workflow code:
// ResourceWorkflow (one per resource; serializes fetch-and-write) and the
// SweepWorkflow run by the sweeper schedule. No I/O, no time.Now, no pgx:
// everything that touches the world is an activity in package activities,
// called through method values of nil pointers to the activities struct of
// the task queue it runs on (onResource, onControl, onProvider). Nothing
// here may import the store or pgx.
package workflows
