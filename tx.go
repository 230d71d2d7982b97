package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/internal/store/records"
)

// Tx is the one transaction of an event's effect (Event.Commit) or of a
// reconciliation's correction (Reconciliation.Commit). Everything written
// through it commits or rolls back together with the inbox row's
// completion.
type Tx struct {
	tx     pgx.Tx
	ev     *Event
	rc     *Reconciliation
	outbox []int64
	// woken are the resources Wake made rows due in.
	woken []hookintype.Resource
	// completed are other pending rows of the event's resource the commit
	// completes (a coalesced send's covered events).
	completed []hookintype.EventKey
}

// Conn is the raw pgx transaction, for the team's own tables (declared
// with WithMigrations). Do not commit or roll it back: Commit does.
func (t *Tx) Conn() pgx.Tx { return t.tx }

// Claim is a business key's claim.
type Claim struct {
	// First: this transaction made the claim; the effect is this event's
	// to apply. False: the key was claimed before (by another event of the
	// same operation, a repair or a replay) and By says by which event.
	First     bool
	By        hookintype.EventKey
	ClaimedAt time.Time
}

// Claim claims a business key once: (provider, account,
// invoice, "initial-grant"), not the event key, so two events of one
// operation, a webhook and a repair all collapse to one effect. A UNIQUE
// constraint settles it inside this transaction: apply the effect only
// when First. Build keys with Key, which escapes each part.
func (t *Tx) Claim(ctx context.Context, businessKey string) (Claim, error) {
	if strings.TrimSpace(businessKey) == "" {
		return Claim{}, Permanent(errors.New("claim: an empty business key"))
	}
	c := records.Claim{BusinessKey: businessKey}
	switch {
	case t.ev != nil:
		c.EventKey, c.ResourceKey, c.Handler = t.ev.Key.String(), t.ev.Resource.String(), t.ev.call.Route.Name
	case t.rc != nil:
		c.EventKey, c.ResourceKey, c.Handler = "reconcile:"+t.rc.Reason, t.rc.Resource.String(), "reconcile"
	}
	first, prior, err := records.ClaimOnce(ctx, t.tx, c)
	if err != nil {
		return Claim{}, err
	}
	if first {
		return Claim{First: true, By: eventKeyOf(c.EventKey), ClaimedAt: time.Now()}, nil
	}
	return Claim{By: eventKeyOf(prior.EventKey), ClaimedAt: prior.ClaimedAt}, nil
}

func eventKeyOf(s string) hookintype.EventKey {
	k, err := hookintype.ParseEventKey(s)
	if err != nil {
		return hookintype.EventKey{EventID: s}
	}
	return k
}

// Key joins parts into one business or operation key, each part escaped
// so that a '/' inside an id can never forge another key.
func Key(parts ...string) string { return hookintype.JoinKey(parts...) }

// Intent is an outbound effect (an email, a team alert) recorded in the
// effect's transaction and sent after the commit by a retried activity.
// OperationKey makes it once: a second intent with the same key
// is the first one. Class selects the uncertain-outcome policy
// (HOOKINBOX_UNCERTAIN_POLICY: query, accept a duplicate, or hold for
// review).
type Intent struct {
	OperationKey string
	// Class names the intent's kind of message (its delivery policy). The
	// class "notification" is reserved for hookinbox's own notices: Send
	// refuses it.
	Class string
	// Kind is "email", or a team destination's kind ("webhook", "slack").
	Kind string
	// Destination is the email address, or the destination's name.
	Destination string
	// Workspace the intent belongs to (default: the event's).
	Workspace string
	// Payload is the message: for email {"to","subject","text"}.
	Payload any
}

// Email is an email intent to to.
func Email(operationKey, class, to, subject, text string) Intent {
	return Intent{OperationKey: operationKey, Class: class, Kind: "email", Destination: to,
		Payload: map[string]any{"to": to, "subject": subject, "text": text}}
}

// reservedNotificationClass is the outbox class of hookinbox's own notices
// (notification rules, internal/notify.ClassNotification). Send refuses it,
// whatever its case.
const reservedNotificationClass = "notification"

// Send records an outbox intent and returns its id (the existing one when
// its operation key was recorded before). It is sent after the commit.
func (t *Tx) Send(ctx context.Context, in Intent) (int64, error) {
	if strings.TrimSpace(in.OperationKey) == "" || in.Kind == "" || in.Destination == "" {
		return 0, Permanent(errors.New("outbox intent: an operation key, a kind and a destination are required"))
	}
	if strings.EqualFold(strings.TrimSpace(in.Class), reservedNotificationClass) {
		// hookinbox's own notices: their sender reads Destination as a rule's
		// name and signs with the rule's secret. A handler may not send one.
		return 0, Permanent(fmt.Errorf("outbox intent: the class %q is reserved for hookinbox's own notifications", in.Class))
	}
	ws, res := in.Workspace, ""
	switch {
	case t.ev != nil:
		res = t.ev.Resource.String()
		if ws == "" {
			ws = t.ev.Workspace
		}
	case t.rc != nil:
		res = t.rc.Resource.String()
		if ws == "" {
			ws = t.rc.Workspace
		}
	}
	id, err := outbox.InsertOutbox(ctx, t.tx, outbox.OutboxIntent{OperationKey: in.OperationKey, Class: in.Class, Kind: in.Kind,
		Destination: in.Destination, WorkspaceID: ws, ResourceKey: res, Payload: in.Payload})
	if err != nil {
		return 0, err
	}
	t.outbox = append(t.outbox, id)
	return id, nil
}

// Workspace is a tenant: its id and where its notices go.
type Workspace struct {
	ID    string
	Email string
}

// Workspace reads a workspace (the event's when id is ""). A workspace
// that does not exist is ErrNotFound.
func (t *Tx) Workspace(ctx context.Context, id string) (Workspace, error) {
	if id == "" && t.ev != nil {
		id = t.ev.Workspace
	}
	if id == "" && t.rc != nil {
		id = t.rc.Workspace
	}
	w, err := records.GetWorkspace(ctx, t.tx, id)
	if err != nil {
		return Workspace{}, err
	}
	return Workspace{ID: w.ID, Email: w.Email}, nil
}

// Destination is a team destination of a workspace: where its alerts go.
type Destination struct {
	Name string
	Kind string
}

// Destinations lists the enabled destinations of a workspace (the event's
// when id is ""), by name. Their targets and secrets stay with the outbox.
func (t *Tx) Destinations(ctx context.Context, workspace string) ([]Destination, error) {
	if workspace == "" && t.ev != nil {
		workspace = t.ev.Workspace
	}
	if workspace == "" && t.rc != nil {
		workspace = t.rc.Workspace
	}
	ds, err := outbox.ListDestinations(ctx, t.tx, workspace, true)
	if err != nil {
		return nil, err
	}
	out := make([]Destination, len(ds))
	for i, d := range ds {
		out[i] = Destination{Name: d.Name, Kind: d.Kind}
	}
	return out, nil
}

// Wake makes the waiting events of resource r due now (an event that
// returned Wait for the fact this transaction commits), in this commit.
// After an event's commit they run at once: the event's own resource is
// loaded again by the workflow that runs it, before that run ends; another
// resource's workflow is rung.
func (t *Tx) Wake(ctx context.Context, r hookintype.Resource) error {
	n, err := inbox.WakeResource(ctx, t.tx, r)
	if err == nil && n > 0 {
		t.woken = append(t.woken, r)
	}
	return err
}

// Diverged records divergences of the event's (or reconciliation's)
// resource, found by detectedBy, for the operators (`hookinbox status`,
// the console).
func (t *Tx) Diverged(ctx context.Context, detectedBy string, ds ...hookintype.Divergence) error {
	var r hookintype.Resource
	switch {
	case t.ev != nil:
		r = t.ev.Resource
	case t.rc != nil:
		r = t.rc.Resource
	}
	return passes.InsertDivergences(ctx, t.tx, r.Provider, r.Account, r.Environment, r.Kind, r.ID, detectedBy, ds)
}

// Projection describes a table holding one row per resource that never
// goes backwards. The table has a provider version column
// (bigint, NULL until a versioned write) and a write sequence column
// (bigint NOT NULL DEFAULT 1), the fencing token of fetch-then-write.
type Projection struct {
	// Table is the table's name.
	Table string
	// Key lists the columns of its primary key or UNIQUE constraint.
	Key []string
	// VersionColumn defaults to "provider_version": any type PostgreSQL
	// orders (a bigint, or a timestamptz such as GitHub's updated_at).
	VersionColumn string
	// TieColumn, when set, is a bigint column that breaks ties between
	// writes of one version: WriteNewer writes when (version, tie) is
	// greater than the stored pair. Set it to the event's Seq, the order
	// the intake committed the events in, so that two changes within one
	// second of a timestamp version both apply, in the order they came.
	TieColumn string
	// SeqColumn defaults to "write_seq".
	SeqColumn string
	// TouchedColumn, when set, is set to now() by every update.
	TouchedColumn string
	// Sticky boolean columns stay true once true: a tombstone survives.
	Sticky []string
	// TerminalColumn and TerminalValue name a state no versioned write
	// leaves (a canceled subscription stays canceled).
	TerminalColumn string
	TerminalValue  any
}

func (p Projection) table() records.ProjectionTable {
	t := records.ProjectionTable{Name: p.Table, Key: p.Key, Version: p.VersionColumn, Tie: p.TieColumn, Seq: p.SeqColumn,
		Touched: p.TouchedColumn, Sticky: p.Sticky, TerminalColumn: p.TerminalColumn, TerminalValue: p.TerminalValue}
	if t.Version == "" {
		t.Version = "provider_version"
	}
	if t.Seq == "" {
		t.Seq = "write_seq"
	}
	return t
}

// Row is a projection row: its columns' values, key columns included.
type Row map[string]any

// WriteNewer writes row only when its version (row[VersionColumn], then
// row[TieColumn] when the projection has one) is greater than the stored
// one, or none is stored: the comparison is part of the write, so two
// writers cannot both pass it, and a stale snapshot never overwrites a
// newer one. It reports whether it wrote. The write sequence (SeqColumn)
// is hookinbox's, incremented by every write: WriteNewer needs the column
// but never a value for it.
//
// Use WriteNewer when the event (or a fetch) carries a version that
// orders the object's states; WriteFenced when it carries none and the
// handler writes what it fetched; a fetch (Event.Fetch) when the decision
// must rest on the current state rather than the event's snapshot.
func (t *Tx) WriteNewer(ctx context.Context, p Projection, row Row) (bool, error) {
	return records.WriteIfNewer(ctx, t.tx, p.table(), row)
}

// WriteFenced writes a fetched state only if the row's sequence is still
// readSeq, the value the handler read before fetching (0: the row did not
// exist). An attempt whose fetch began before another write (a timed-out
// attempt still running, a reset workflow) loses and writes nothing;
// return an error then, and the next attempt reads and fetches again. A nil
// version keeps the stored one. It reports whether it wrote.
func (t *Tx) WriteFenced(ctx context.Context, p Projection, row Row, readSeq int64) (bool, error) {
	return records.WriteFenced(ctx, t.tx, p.table(), row, readSeq)
}
