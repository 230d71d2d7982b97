// Package ports declares what the activities need from the world besides
// Temporal: the inbox and its business handlers, the outbox, sweeps,
// reconciliation passes, retention, backfill admission and provider API
// clients, as interfaces with their own input and result types. The
// activities hold these and never the store; the store-backed
// implementations live in handlers and internal/storeports and are wired in
// the composition root. This package must not import the store, pgx or
// Temporal.
package ports

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/providers"
)

// Events is the inbox as the resource workflow's activities see it.
type Events interface {
	// LoadPending returns the resource's due pending rows, oldest first,
	// and its outbox rows due to be sent.
	LoadPending(ctx context.Context, r keys.Resource, limit int) (keys.PendingBatch, error)
	// Handle runs the event's business handler (see Handled). An event not
	// in the inbox is Handled.Missing (a handler's own not-found, such as a
	// provider's 404, is an error like any other); one that can never succeed is
	// Permanent; the database being away is Unavailable (as for every
	// method of Events and Outbox); any other error is retried. Handled.Route is set whenever
	// the event was read, errors included.
	Handle(ctx context.Context, k keys.Event) (Handled, error)
	// RecordFailure notes a failed attempt and when the next one is due.
	RecordFailure(ctx context.Context, k keys.Event, lastErr string, next time.Time) error
	// Defer leaves a pending event pending with reason as its last error,
	// due again at next, without counting an attempt (Handled.NoHandler).
	Defer(ctx context.Context, k keys.Event, reason string, next time.Time) error
	// Stop ends retrying a still-pending event with status (failed or
	// exhausted); changed is false when the row was already final. route
	// names the event's handler ("" if none).
	Stop(ctx context.Context, k keys.Event, status, lastErr string) (changed bool, route string, err error)
}

// Handled is what handling one event did.
type Handled struct {
	// Route names the handler the event routes to ("" for none).
	Route string
	// Status the row is in: done or ignored, or the status it already had
	// (Skipped) when another attempt completed it first.
	Status string
	Note   string
	// Skipped: the row was no longer pending; nothing ran.
	Skipped bool
	// Missing: the event is not in the inbox; nothing ran.
	Missing bool
	// NoHandler: the event's type has a route (the intake decided it is
	// handled) but no handler is registered here (a rolled-back worker, an
	// intake deployed ahead of the workers). Nothing ran and the row is
	// still pending (Status); it must never be ignored.
	NoHandler bool
	// RateLimitedFor, on a row left pending and due: a provider's rate
	// limit is spent for this long (no attempt was counted). The row must
	// not be passed by a later one of its resource.
	RateLimitedFor time.Duration
	// BusinessKey names the business operation, for the logs.
	BusinessKey string
	// Outbox rows the effect produced, to be sent after the commit.
	Outbox []int64
	// Divergences the handler recorded (same provider version, other
	// content), for the metrics.
	Divergences []keys.Divergence
	// WokeOwn: the effect's commit made waiting rows of the event's own
	// resource due now (its workflow loads again before it ends).
	// WokeOthers: resources other than the event's whose waiting rows it
	// made due (their doorbells are rung after the commit).
	WokeOwn    bool
	WokeOthers []keys.Resource
	// Completed: other pending rows of the event's resource the effect's
	// commit completed (a coalesced forward's covered events).
	Completed []keys.Event
	// EventType and ReceivedAt of the row (set whenever it was read): what
	// the receipt-to-effect latency is measured by and from.
	EventType  string
	ReceivedAt time.Time
}

// Reconciler compares one resource with the provider and corrects the
// local state, recording divergences.
type Reconciler interface {
	Reconcile(ctx context.Context, r keys.Resource, reason string) (ReconcileOutcome, error)
}

// ReconcileOutcome is what reconciling one resource found and did (the
// ReconcileResource activity's result).
type ReconcileOutcome struct {
	Divergences []keys.Divergence `json:"divergences,omitempty"`
	Note        string            `json:"note"`
}

// OutboxRow is the part of an outbox row a send needs.
type OutboxRow struct {
	ID           int64
	OperationKey string
	Class        string
	Kind         string
	Destination  string
	WorkspaceID  string
	Payload      json.RawMessage
	// Status is a keys.Outbox* status; Policy the one the last attempt ran under.
	Status    string
	Policy    string
	LastError string
}

// Outbox is the outbox's bookkeeping and its destinations.
type Outbox interface {
	// Get reads a row (ErrNotFound when there is none).
	Get(ctx context.Context, id int64) (*OutboxRow, error)
	// Sender resolves the row's sender and message; a destination that
	// cannot be resolved again is Permanent.
	Sender(ctx context.Context, row *OutboxRow) (outbound.Sender, outbound.Message, error)
	// BeginAttempt records an attempt (the row becomes uncertain until
	// until); false when the row is no longer sendable.
	BeginAttempt(ctx context.Context, id int64, policy string, until time.Time) (bool, error)
	MarkSent(ctx context.Context, id int64, remoteID, note string) error
	// AttemptFailed puts the row in status (pending or uncertain) until next.
	AttemptFailed(ctx context.Context, id int64, status, lastErr string, next time.Time) error
	// Stop ends sending (failed or held); false when it was already final.
	Stop(ctx context.Context, id int64, status, note string) (bool, error)
}

// Sweeps find the work whose doorbell was lost.
type Sweeps interface {
	// StalePending lists resources with inbox rows due for longer than olderThan.
	StalePending(ctx context.Context, olderThan time.Duration, limit int) ([]keys.Resource, error)
	// HeldPending lists resources with inbox rows due for longer than
	// olderThan that StalePending's backoff holds back, last looked at more
	// than probeEvery ago (to be probed: started only if no run is going).
	HeldPending(ctx context.Context, olderThan, probeEvery time.Duration, limit int) ([]keys.Resource, error)
	// StaleOutbox lists the resource keys of outbox rows unsent for longer than olderThan.
	StaleOutbox(ctx context.Context, olderThan time.Duration, limit int) ([]string, error)
	// SampleTrends records this minute's sample of the backlog for the
	// console's trends.
	SampleTrends(ctx context.Context) error
}

// Passes are the scopes and checkpoints of the paged reconciliation and
// backfill passes.
type Passes interface {
	// ListScopes lists the accounts linked to provider endpoints with an
	// API key (one endpoint's when endpoint is not "").
	ListScopes(ctx context.Context, provider, endpoint string) ([]keys.Scope, error)
	// ListHookScopes lists the endpoints of provider with an API key that
	// name a webhook whose delivery log the recovery reads, one scope each
	// (its Account is the hook; one endpoint's when endpoint is not "").
	ListHookScopes(ctx context.Context, provider, endpoint string) ([]keys.Scope, error)
	// BeginPass takes (or resumes) the pass of a checkpoint.
	BeginPass(ctx context.Context, name, owner string, restart bool) (cp keys.Checkpoint, resumed bool, err error)
	// AdvancePass records one page; a page that lost its fence is
	// CheckpointMoved; repeated when the same page was recorded before.
	AdvancePass(ctx context.Context, name string, p PageProgress) (cp keys.Checkpoint, repeated bool, err error)
}

// PageProgress is what one page of a pass adds to its checkpoint.
type PageProgress struct {
	// Owner and Pages fence the update: it applies only if owner still
	// holds the pass and Pages pages were done before this one.
	Owner string
	Pages int64
	// Next is the cursor after this page; Done ends the pass.
	Next        string
	Done        bool
	Seen        int64
	Divergences int64
}

// movedError marks a checkpoint update that lost its fence.
type movedError struct{ err error }

func (m movedError) Error() string { return m.err.Error() }
func (m movedError) Unwrap() error { return m.err }

// CheckpointMoved wraps err to say another run took the pass over, or the
// pass is not where the page began.
func CheckpointMoved(err error) error { return movedError{err} }

// IsCheckpointMoved reports whether err was wrapped by CheckpointMoved.
func IsCheckpointMoved(err error) bool {
	var m movedError
	return errors.As(err, &m)
}

// Projections compare provider listings with the local projections.
type Projections interface {
	// DifferingSubscriptions reports, by subscription id, whether each
	// listed subscription of the scope differs from its projection or has
	// none.
	DifferingSubscriptions(ctx context.Context, scope keys.Scope, listed []providers.Subscription) (map[string]bool, error)
}

// Retention deletes and redacts old rows in batches; each call is one
// short statement touching at most limit rows older than olderThan.
type Retention interface {
	// RedactPayloads redacts a batch of each kind of old payload (settled
	// inbox rows, resolved quarantine entries, sent outbox rows) and returns
	// the sum: below limit means every kind is done for now.
	RedactPayloads(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	// DeleteInboxRows refuses (Permanent) a window inside the dedup window.
	DeleteInboxRows(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	DeleteResolvedQuarantine(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
}

// Providers gives the provider API client of an endpoint (each endpoint
// has its own API base URL and key). An endpoint without one is Permanent.
type Providers interface {
	For(ctx context.Context, endpointSlug string) (providers.Client, error)
}

// Hooks give the delivery log client of an endpoint's webhook (GitHub) and
// how its missing deliveries are recovered. An endpoint without an API key
// or a hook is Permanent.
type Hooks interface {
	Hook(ctx context.Context, endpointSlug string) (HookEndpoint, error)
}

// HookEndpoint is an endpoint's webhook delivery log.
type HookEndpoint struct {
	Client providers.HookDeliveries
	// Mode is keys.RecoverRedeliver or keys.RecoverFetch.
	Mode string
}

// Recoveries are the bookkeeping of the delivery recovery: what reached
// hookinbox, and what was done about what did not.
type Recoveries interface {
	// Received reports which delivery ids reached hookinbox through the
	// scope's endpoint: an inbox row of its provider and environment, or a
	// quarantine entry of the endpoint.
	Received(ctx context.Context, scope keys.Scope, ids []string) (map[string]bool, error)
	// Claim records that pass acts on a missing delivery and returns how many
	// passes have, this one included; claimed is false when this pass
	// already did.
	Claim(ctx context.Context, endpoint, guid string, deliveryID int64, pass string) (attempts int, claimed bool, err error)
	// Record says how the claiming pass recovered it: keys.RecoverRedeliver,
	// keys.RecoverFetch or RecoveryAbandoned.
	Record(ctx context.Context, endpoint, guid, action string) error
}

// RecoveryAbandoned is the action of a delivery the recovery gave up on.
const RecoveryAbandoned = "abandoned"

// Facts admits provider events listed by the facts backfill through the
// intake's own path.
type Facts interface {
	// OwnAccount is the account of an endpoint's own events, which carry
	// no account field ("" when it has none); ErrNotFound when the
	// endpoint is gone.
	OwnAccount(ctx context.Context, endpoint string) (string, error)
	// Admit derives each listed event as the intake would, through the
	// endpoint's current settings and links, marked as backfilled, and
	// inserts it; the event key's UNIQUE constraint settles whether the
	// inbox already had it. Events of another account than account are
	// rejected. An error means none of the remaining events was tried.
	Admit(ctx context.Context, endpoint, account string, events []providers.Event) ([]Admission, error)
}

// Admission outcomes.
const (
	Admitted  = "inserted"
	Duplicate = "duplicate"
	Rejected  = "rejected"
)

// Admission is what admitting one listed event did.
type Admission struct {
	EventID string
	Type    string
	// Outcome is Admitted, Duplicate or Rejected (with Reason).
	Outcome string
	Reason  error
	// Key, Resource and Status of an admitted event.
	Key      keys.Event
	Resource keys.Resource
	Status   string
}

// Notifications evaluates the notification rules (internal/notify's
// grouping over what each trigger observes): each notice it decides is
// committed with its outbox intent and its state in one transaction.
type Notifications interface {
	// Evaluate observes every enabled rule's triggers once and decides,
	// per (rule, trigger, subject), the notice due. It returns what it
	// decided and the resources whose workflows have notices to send (new
	// or left), also with an error when some rule could not be evaluated
	// (the others were).
	Evaluate(ctx context.Context, in NotifyInput) (NotifyOutcome, error)
}

// NotifyInput is what an evaluation knows besides the database: how the
// schedules' latest runs ended.
type NotifyInput struct {
	Schedules []notify.ScheduleHealth
	// SchedulesRead: Schedules could be read. When false the
	// schedule_failed trigger is not evaluated at all (an unknown is
	// neither a failure nor a recovery).
	SchedulesRead bool
}

// NotifyOutcome is what one evaluation did.
type NotifyOutcome struct {
	Rules   int
	Notices []NoticeDecided
	// Resources have notices to send: ring their workflows.
	Resources []keys.Resource
}

// NoticeDecided names one notice an evaluation committed.
type NoticeDecided struct {
	Rule, Trigger, Subject, Phase, Channel string
}

// ScheduleRuns reads how hookinbox's schedules' latest runs ended.
type ScheduleRuns interface {
	Health(ctx context.Context) ([]notify.ScheduleHealth, error)
}
