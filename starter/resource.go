package starter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// Search attributes of resource workflows (registered on the dev server at
// start and by EnsureSearchAttributes elsewhere).
var (
	SAProvider      = temporal.NewSearchAttributeKeyKeyword("Provider")
	SASourceAccount = temporal.NewSearchAttributeKeyKeyword("SourceAccount")
	SAEnvironment   = temporal.NewSearchAttributeKeyKeyword("Environment")
	SAResourceKind  = temporal.NewSearchAttributeKeyKeyword("ResourceKind")
	SAResourceID    = temporal.NewSearchAttributeKeyKeyword("ResourceID")
)

// SearchAttributeTypes lists the custom search attributes: name → type.
// ExhaustedEvents (Int) is upserted by a resource workflow when one of its
// events is exhausted or failed: `ExhaustedEvents > 0` finds them in the UI.
func SearchAttributeTypes() map[string]string {
	return map[string]string{
		SAProvider.GetName(): "Keyword", SASourceAccount.GetName(): "Keyword", SAEnvironment.GetName(): "Keyword",
		SAResourceKind.GetName(): "Keyword", SAResourceID.GetName(): "Keyword",
		keys.SearchAttributeExhaustedEvents: "Int",
	}
}

// EnsureSearchAttributes registers the search attributes on namespace,
// leaving existing ones alone.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	want := map[string]enumspb.IndexedValueType{}
	for name, typ := range SearchAttributeTypes() {
		want[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		if typ == "Int" {
			want[name] = enumspb.INDEXED_VALUE_TYPE_INT
		}
	}
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	for name := range resp.GetCustomAttributes() {
		delete(want, name)
	}
	if len(want) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: want,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

// ResourceWorkflowID is the ID of a resource's workflow,
// resource/{provider}/{account}/{environment}/{kind}/{id}, each part
// escaped so a '/' inside an id cannot forge another resource. It is
// keys.ResourceWorkflowID, which makes them (this package calls that),
// exported here for code outside the module.
func ResourceWorkflowID(r keys.Resource) string {
	return keys.ResourceWorkflowID(r)
}

// ResourceFromWorkflowID (keys.ResourceFromWorkflowID) parses a resource workflow ID.
func ResourceFromWorkflowID(id string) (keys.Resource, error) {
	return keys.ResourceFromWorkflowID(id)
}

// WorkflowID is r's workflow ID in this deployment: after its prefix
// (keys.PrefixedResourceWorkflowID).
func (s *Resources) WorkflowID(r keys.Resource) string {
	return keys.PrefixedResourceWorkflowID(s.IDPrefix, r)
}

// Resources signals and starts resource workflows.
type Resources struct {
	Client    client.Client
	TaskQueue string
	// Namespace of the workflows, for Backlog ("" is "default").
	Namespace string
	Settings  keys.Settings
	// ConsoleURL, when set, is the operator console's base URL: each
	// workflow's static details link to its resource's console page.
	ConsoleURL string
	// CompleteKinds are the resource kinds whose runs complete as soon as
	// they are drained (Settings.Idle = keys.IdleComplete): kinds that
	// rarely get a second event. Other kinds linger IdleTimeout.
	CompleteKinds []string
	// IDPrefix is the deployment's workflow-id prefix
	// (HOOKINBOX_WORKFLOW_ID_PREFIX), before every resource workflow ID.
	IDPrefix string
}

// SettingsFor is the workflow settings of resource r: Settings, with the
// idle policy of r's kind.
func (s *Resources) SettingsFor(r keys.Resource) keys.Settings {
	st := s.Settings
	if slices.Contains(s.CompleteKinds, r.Kind) {
		st.Idle = keys.IdleComplete
	} else if len(s.CompleteKinds) > 0 && st.Idle == "" {
		st.Idle = keys.IdleLinger
	}
	return st
}

// StartOptions are the options of a resource workflow: its ID, task queue,
// search attributes, a static summary naming the resource in the UI and,
// with a console URL, static details linking to the resource's lineage in
// the operator console.
func (s *Resources) StartOptions(r keys.Resource) client.StartWorkflowOptions {
	var details string
	if s.ConsoleURL != "" {
		details = fmt.Sprintf("Operator console (events, effects, operator acts): %s%s",
			strings.TrimRight(s.ConsoleURL, "/"), keys.ConsoleResourcePath(r))
	}
	return client.StartWorkflowOptions{
		StaticDetails: details,
		ID:            s.WorkflowID(r),
		TaskQueue:     s.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			SAProvider.ValueSet(r.Provider), SASourceAccount.ValueSet(r.Account),
			SAEnvironment.ValueSet(r.Environment), SAResourceKind.ValueSet(r.Kind), SAResourceID.ValueSet(r.ID)),
		// The UI renders it as Markdown, and the kind, id and account come
		// from the sender: text, never markup.
		StaticSummary: fmt.Sprintf("%s %s %s (account %s, %s)", keys.MarkdownText(r.Provider), keys.MarkdownText(r.Kind),
			keys.MarkdownText(r.ID), keys.MarkdownText(r.Account), keys.MarkdownText(r.Environment)),
		// Defaults kept on purpose: conflict policy use-existing (a running
		// workflow just gets the signal) and reuse allow-duplicate (a
		// completed resource starts a new run). Never terminate-existing.
	}
}

// Ring rings the resource's doorbell with SignalWithStart.
func (s *Resources) Ring(ctx context.Context, r keys.Resource, signal, value string) error {
	if !r.Valid() {
		return fmt.Errorf("signal %s: incomplete resource key %+v", signal, r)
	}
	_, err := s.Client.SignalWithStartWorkflow(ctx, s.WorkflowID(r), signal, value, s.StartOptions(r),
		keys.ResourceWorkflowType, keys.ResourceInput{Resource: r, Settings: s.SettingsFor(r)})
	if err != nil {
		return fmt.Errorf("signal-with-start %s: %w", s.WorkflowID(r), err)
	}
	return nil
}

// StartIfIdle starts the resource's workflow unless a run of it is going,
// and reports whether it started one: the sweeper's probe of a row its
// backoff holds. A start refused because a run is going writes nothing
// into that run's history (no signal, no workflow task): a busy workflow
// is not disturbed. A new run starts with a pass over the due rows.
func (s *Resources) StartIfIdle(ctx context.Context, r keys.Resource) (bool, error) {
	if !r.Valid() {
		return false, fmt.Errorf("start %s: incomplete resource key %+v", s.WorkflowID(r), r)
	}
	opts := s.StartOptions(r)
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL
	opts.WorkflowExecutionErrorWhenAlreadyStarted = true
	_, err := s.Client.ExecuteWorkflow(ctx, opts, keys.ResourceWorkflowType, keys.ResourceInput{Resource: r, Settings: s.SettingsFor(r)})
	var running *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &running) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("start %s: %w", s.WorkflowID(r), err)
	}
	return true, nil
}

// Backlog is the number of workflow tasks waiting on the resource task
// queue for a worker (the server's approximate count over the queue's
// partitions): doorbells Temporal has taken and the workers have not
// reached yet. The sweeper holds back while it is large.
func (s *Resources) Backlog(ctx context.Context) (int64, error) {
	ns := s.Namespace
	if ns == "" {
		ns = "default"
	}
	resp, err := s.Client.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
		Namespace:     ns,
		TaskQueue:     &taskqueuepb.TaskQueue{Name: s.TaskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
		ReportStats:   true,
	})
	if err != nil {
		return 0, fmt.Errorf("backlog of task queue %s: %w", s.TaskQueue, err)
	}
	if resp.GetStats() == nil {
		return 0, fmt.Errorf("backlog of task queue %s: the server reports no statistics", s.TaskQueue)
	}
	return resp.GetStats().GetApproximateBacklogCount(), nil
}
