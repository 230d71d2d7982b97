package keys

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// This file is the contract of the resource workflow, shared by its
// starters (the intake's hand-off, replay, backfill, the sweepers) and the
// workflow itself: its ID, its signals, its input. Recorded histories carry
// these shapes, so their names and JSON stay stable.

// ResourceWorkflowID makes resource workflow IDs (PrefixedResourceWorkflowID,
// below, is the same form after a deployment's prefix):
// resource/{provider}/{account}/{environment}/{kind}/{id}, each part
// escaped so a '/' inside an id cannot forge another resource.
func ResourceWorkflowID(r Resource) string {
	return PrefixedResourceWorkflowID("", r)
}

// PrefixedResourceWorkflowID is ResourceWorkflowID after a deployment's
// workflow-id prefix (HOOKINBOX_WORKFLOW_ID_PREFIX): what every starter of
// a deployment uses, so two deployments in one namespace never share the
// workflow of a resource.
func PrefixedResourceWorkflowID(prefix string, r Resource) string {
	return prefix + "resource/" + r.String()
}

// ResourceFromWorkflowID parses a resource workflow ID.
func ResourceFromWorkflowID(id string) (Resource, error) {
	return ResourceFromPrefixedWorkflowID("", id)
}

// ResourceFromPrefixedWorkflowID parses a resource workflow ID made with
// prefix.
func ResourceFromPrefixedWorkflowID(prefix, id string) (Resource, error) {
	rest, ok := strings.CutPrefix(id, prefix+"resource/")
	if !ok {
		return Resource{}, fmt.Errorf("workflow id %q is not a resource workflow", id)
	}
	return ParseResource(rest)
}

// Doorbell rings a resource's workflow (SignalWithStart: a completed
// resource starts a new run). Every path that wants a resource looked at
// rings through it: the intake's hand-off, replay, backfill, the sweepers
// and reconciliation. A lost ring costs latency only: the inbox is the
// truth and the sweeper rings again.
type Doorbell interface {
	Ring(ctx context.Context, r Resource, signal, value string) error
}

// ResourceWorkflowType is the registered name of the resource workflow
// (workflows.ResourceWorkflow): what its starters start by name, so that a
// client (the intake, the console) never links the workflow code.
const ResourceWorkflowType = "ResourceWorkflow"

// SearchAttributeExhaustedEvents is the Int search attribute a resource
// workflow upserts with the count of its exhausted or failed events.
const SearchAttributeExhaustedEvents = "ExhaustedEvents"

// Signal names of ResourceWorkflow.
const (
	// SignalEvent is a doorbell: "this resource may have pending rows". Its
	// value (an event key) is informational; the inbox is the truth.
	SignalEvent = "event"
	// SignalReconcile asks the workflow to reconcile its resource with the
	// provider; its value is the reason.
	SignalReconcile = "reconcile"
)

// Settings tune a resource workflow; the starter fills them from config.
type Settings struct {
	IdleTimeout     time.Duration `json:"idle_timeout,omitempty"`
	MaxEventsPerRun int           `json:"max_events_per_run,omitempty"`
	RetryBudget     int           `json:"retry_budget,omitempty"`
	RetryInitial    time.Duration `json:"retry_initial,omitempty"`
	RetryMax        time.Duration `json:"retry_max,omitempty"`
	ActivityTimeout time.Duration `json:"activity_timeout,omitempty"`
	OutboxBudget    int           `json:"outbox_budget,omitempty"`
	// Handling is how HandleEvent runs: HandlingLocal, a local activity (one
	// marker per event, the rows of a pass in one workflow task: several
	// times the throughput of one history shard), or HandlingActivity, a
	// regular activity (each attempt scheduled, started and completed in the
	// history, visible as a pending activity). Starters always set it; it is
	// empty only in inputs written before it existed, whose runs decide as
	// they did then (workflow.GetVersion and ActivityHandling).
	Handling string `json:"handling,omitempty"`
	// ActivityHandling is the older form of Handling = HandlingActivity,
	// read only when Handling is empty.
	ActivityHandling bool `json:"activity_handling,omitempty"`
	// Idle is what a run does once a pass leaves nothing to do: IdleLinger
	// waits IdleTimeout for another doorbell (kinds that often get a second
	// event, such as subscriptions: one run serves them all); IdleComplete
	// completes at once (kinds that rarely do, such as invoices: a later
	// doorbell starts a new run). Empty in inputs from before it existed:
	// they linger, as they did then. The starter sets it per resource kind.
	Idle string `json:"idle,omitempty"`
	// Send is how SendOutbox runs: SendLocalFirst makes the first attempt a
	// local activity (one marker, in the workflow task that handled the
	// event) and any later attempt a regular activity (visible as pending
	// in the UI while a destination fails). Empty in inputs from before it
	// existed: every attempt is a regular activity, as it was then.
	Send string `json:"send,omitempty"`
}

// The values of Settings.Idle.
const (
	IdleLinger   = "linger"
	IdleComplete = "complete"
)

// The values of Settings.Send ("" is a regular activity).
const (
	SendLocalFirst = "local-first"
)

// The values of Settings.Handling.
const (
	HandlingLocal    = "local"
	HandlingActivity = "activity"
)

// Carry is the state a run hands to its continuation.
type Carry struct {
	// Recent holds the last handled event keys (bounded), for the operator.
	Recent []string `json:"recent,omitempty"`
	// Reconcile holds reasons of reconcile requests not yet served.
	Reconcile []string `json:"reconcile,omitempty"`
	// Handled counts events handled over all runs.
	Handled int `json:"handled"`
	// Runs counts continue-as-new generations.
	Runs int `json:"runs"`
	// Unhandled counts events that ended exhausted or failed (the
	// ExhaustedEvents search attribute).
	Unhandled int `json:"unhandled,omitempty"`
}

// ResourceInput starts or continues a resource workflow.
type ResourceInput struct {
	Resource Resource `json:"resource"`
	Settings Settings `json:"settings"`
	Carry    Carry    `json:"carry"`
}

// ConsoleResourcePath is the operator console's page of a resource, relative
// to the console's base URL: the resource workflow's details in the Temporal
// UI link there, and the console links back to the workflow.
func ConsoleResourcePath(r Resource) string {
	return "/resources/" + url.PathEscape(r.String())
}

// TemporalUIWorkflowURL is the Temporal UI page of a workflow (its latest
// run), under the UI's base URL.
func TemporalUIWorkflowURL(base, namespace, workflowID string) string {
	return strings.TrimRight(base, "/") + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(workflowID)
}
