// Package starter is everything that talks to Temporal as a client:
// dialing (dev server, a cluster or Temporal Cloud), workflow IDs, the
// search attributes, SignalWithStart of resource workflows, the intake's
// bounded hand-off queue, and the schedules.
package starter
