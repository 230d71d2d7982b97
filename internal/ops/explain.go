package ops

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/internal/store/passes"
	"github.com/hookinbox/hookinbox/internal/store/records"
)

// Lineage kinds: what `explain` starts from.
const (
	LineageGrant        = "grant"
	LineageSubscription = "subscription"
	LineageAlert        = "alert"
	LineageOutbox       = "outbox"
	LineageResource     = "resource"
	LineageEvent        = "event"
)

// LineageKinds are the kinds Explain accepts.
var LineageKinds = []string{LineageGrant, LineageSubscription, LineageAlert, LineageOutbox, LineageResource, LineageEvent}

// Business operations of the built-in handlers (their business keys are
// keys.Join(prefix, provider, account, environment, id, operation)).
const (
	grantKeyPrefix = "credit-grant"
	grantOperation = "initial-credit-grant"
	alertKeyPrefix = "feedback-alert"
	alertOperation = "initial-alert"
)

// Lineage is why an effect exists: its business key, every delivery of its
// resource (duplicates and quarantined conflicts included, and those
// retention deleted, from their kept record), the effects on the resource,
// its workflow and every operator act on any of them.
type Lineage struct {
	Kind        string        `json:"kind"`
	Ref         string        `json:"ref"`
	BusinessKey string        `json:"business_key,omitempty"`
	Summary     string        `json:"summary"`
	Resource    keys.Resource `json:"resource"`
	ResourceKey string        `json:"resource_key"`
	Workflow    WorkflowRef   `json:"workflow"`
	ConsolePath string        `json:"console_path"`
	Grants      []GrantView   `json:"grants"`
	Alerts      []AlertView   `json:"alerts"`
	// Claims are the business keys a handler claimed on the resource
	// through the public API (tx.Claim): a team's own effects.
	Claims []records.Claim `json:"claims"`
	// Forwards are the forward attempts of the resource's events (forward
	// routes): what each send got back and how long it took.
	Forwards    []forwards.Attempt        `json:"forwards"`
	Projection  *ProjectionView           `json:"subscription,omitempty"`
	Events      []LineageRow              `json:"events"`
	Outbox      []OutboxView              `json:"outbox"`
	Divergences []passes.StoredDivergence `json:"divergences"`
	Actions     []AuditEntry              `json:"operator_actions"`
	// Focus is the event key the lineage was asked for (kind event).
	Focus string `json:"focus,omitempty"`
}

// GrantView is a credit grant.
type GrantView struct {
	ID          int64     `json:"id"`
	BusinessKey string    `json:"business_key"`
	Workspace   string    `json:"workspace"`
	Credits     int64     `json:"credits"`
	AmountPaid  int64     `json:"amount_paid"`
	Currency    string    `json:"currency"`
	EventKey    string    `json:"event_key"`
	CreatedAt   time.Time `json:"created_at"`
}

// AlertView is a feedback alert.
type AlertView struct {
	ID          int64     `json:"id"`
	BusinessKey string    `json:"business_key"`
	Workspace   string    `json:"workspace"`
	EventKey    string    `json:"event_key"`
	CreatedAt   time.Time `json:"created_at"`
}

// ProjectionView is a subscription's current local state.
type ProjectionView struct {
	BusinessKey  string     `json:"business_key"`
	Workspace    string     `json:"workspace"`
	Status       string     `json:"status"`
	Version      *int64     `json:"provider_version,omitempty"`
	Deleted      bool       `json:"deleted"`
	Access       bool       `json:"access"`
	AccessEndsAt *time.Time `json:"access_ends_at,omitempty"`
	WriteSeq     int64      `json:"write_seq"`
	WrittenBy    string     `json:"written_by"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

// OutboxView is an outbox row without its payload (which may hold personal
// data).
type OutboxView struct {
	ID           int64      `json:"id"`
	OperationKey string     `json:"operation_key"`
	Class        string     `json:"class"`
	Kind         string     `json:"kind"`
	Destination  string     `json:"destination"`
	Status       string     `json:"status"`
	Attempts     int        `json:"attempts"`
	LastError    string     `json:"last_error,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	SentAt       *time.Time `json:"sent_at,omitempty"`
}

// LineageRow is one delivery behind the effect and what it did.
type LineageRow struct {
	inbox.LineageEvent
	BodySHA256 string `json:"body_sha256"`
	// KeyString is the event key as logged ("" for a quarantine entry
	// whose key is incomplete).
	KeyString string `json:"event_key,omitempty"`
	// Role says what this delivery did for the effect.
	Role string `json:"role"`
	// Trace is the delivery's OpenTelemetry trace (empty when it was not
	// traced).
	Trace TraceRef `json:"trace,omitzero"`
}

// ParseLineageKind checks a kind.
func ParseLineageKind(kind string) error {
	for _, k := range LineageKinds {
		if k == kind {
			return nil
		}
	}
	return Invalidf("kind must be one of %s (got %q)", strings.Join(LineageKinds, ", "), kind)
}

// Explain builds the lineage of an effect. ref is, by kind:
//   - grant: its id, its business key, provider/account/environment/invoice, or an invoice id
//   - subscription: its resource key, provider/account/environment/sub_id, or a subscription id
//   - alert: its id, its business key, provider/project/environment/feedback_id, or a feedback id
//   - outbox: its id or operation key
//   - resource: a resource key; event: an event key
func (s *Service) Explain(ctx context.Context, kind, ref string) (*Lineage, error) {
	if err := ParseLineageKind(kind); err != nil {
		return nil, err
	}
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, Invalidf("a reference is required")
	}
	l := &Lineage{Kind: kind, Ref: ref}
	var r keys.Resource
	var err error
	switch kind {
	case LineageGrant:
		r, err = s.findGrant(ctx, ref)
	case LineageSubscription:
		r, err = s.findSubscription(ctx, ref)
	case LineageAlert:
		r, err = s.findAlert(ctx, ref)
	case LineageOutbox:
		r, err = s.findOutbox(ctx, ref, l)
	case LineageResource:
		if r, err = keys.ParseResource(ref); err != nil {
			err = Invalidf("resource must be provider/account/environment/kind/id: %v", err)
		}
	case LineageEvent:
		var k keys.Event
		if k, err = keys.ParseEvent(ref); err != nil {
			return nil, Invalidf("event must be provider/account/environment/event_id: %v", err)
		}
		var d *EventDetail
		if d, err = s.ShowEvent(ctx, k, false); err == nil {
			r, l.Focus = d.ResourceKey(), k.String()
		}
	}
	if err != nil {
		return nil, err
	}
	if err := s.fillLineage(ctx, l, r); err != nil {
		return nil, err
	}
	return l, nil
}

func ambiguous(what, ref string, n int) error {
	return Invalidf("%s %q matches %d effects: give the full key (provider/account/environment/id) or the id", what, ref, n)
}

func notFound(what, ref string) error {
	return fmt.Errorf("no %s matches %q: %w", what, ref, fault.ErrNotFound)
}

// refParts splits a reference that may be a business key with prefix, a
// provider/account/environment/id[/operation] key, or a bare id.
func refParts(ref, prefix string) (provider, account, env, id string, err error) {
	if !strings.Contains(ref, "/") {
		return "", "", "", ref, nil
	}
	p := strings.Split(ref, "/")
	if p[0] == prefix {
		p = p[1:]
	}
	if len(p) != 4 && len(p) != 5 {
		return "", "", "", "", Invalidf("%q: want provider/account/environment/id, a business key or an id", ref)
	}
	for i := range p {
		u, err := url.PathUnescape(p[i])
		if err != nil || u == "" {
			return "", "", "", "", Invalidf("%q: part %d is empty or badly escaped", ref, i+1)
		}
		p[i] = u
	}
	return p[0], p[1], p[2], p[3], nil
}

// requireDomain refuses a lookup of a built-in domain's records where the
// App's database has no such table: the domain is not registered (a team's
// App), so there is nothing to find, and "not found" would mislead.
func (s *Service) requireDomain(ctx context.Context, relation, domain string) error {
	ok, err := records.HasRelation(ctx, s.Store.Pool, relation)
	if err != nil {
		return err
	}
	if !ok {
		return Invalidf("this App has no %s domain: its database has no %s table", domain, relation)
	}
	return nil
}

func (s *Service) findGrant(ctx context.Context, ref string) (keys.Resource, error) {
	if err := s.requireDomain(ctx, records.TableCreditGrants, "credits"); err != nil {
		return keys.Resource{}, err
	}
	var gs []records.StoredGrant
	var err error
	if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil && id > 0 {
		gs, err = records.FindCreditGrants(ctx, s.Store.Pool, id, "", "", "", "")
	} else {
		p, a, e, inv, perr := refParts(ref, grantKeyPrefix)
		if perr != nil {
			return keys.Resource{}, perr
		}
		gs, err = records.FindCreditGrants(ctx, s.Store.Pool, 0, p, a, e, inv)
	}
	if err != nil {
		return keys.Resource{}, err
	}
	switch {
	case len(gs) == 0:
		return keys.Resource{}, notFound("credit grant", ref)
	case len(gs) > 1 && !sameInvoice(gs):
		return keys.Resource{}, ambiguous("credit grant", ref, len(gs))
	}
	g := gs[0]
	return keys.Resource{Provider: g.Provider, Account: g.Account, Environment: g.Environment, Kind: "invoice", ID: g.InvoiceID}, nil
}

func sameInvoice(gs []records.StoredGrant) bool {
	for _, g := range gs[1:] {
		if g.Provider != gs[0].Provider || g.Account != gs[0].Account || g.Environment != gs[0].Environment || g.InvoiceID != gs[0].InvoiceID {
			return false
		}
	}
	return true
}

func (s *Service) findSubscription(ctx context.Context, ref string) (keys.Resource, error) {
	if r, err := keys.ParseResource(ref); err == nil {
		return r, nil
	}
	p, a, e, id, err := refParts(ref, "projection")
	if err != nil {
		return keys.Resource{}, err
	}
	if err := s.requireDomain(ctx, records.TableSubscriptions, "subscriptions"); err != nil {
		return keys.Resource{}, err
	}
	rs, err := records.FindProjections(ctx, s.Store.Pool, p, a, e, id)
	if err != nil {
		return keys.Resource{}, err
	}
	switch len(rs) {
	case 0:
		return keys.Resource{}, notFound("subscription", ref)
	case 1:
		return rs[0], nil
	default:
		return keys.Resource{}, ambiguous("subscription", ref, len(rs))
	}
}

func (s *Service) findAlert(ctx context.Context, ref string) (keys.Resource, error) {
	if err := s.requireDomain(ctx, records.TableFeedbackAlerts, "feedback"); err != nil {
		return keys.Resource{}, err
	}
	var as []records.StoredFeedbackAlert
	var err error
	if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil && id > 0 {
		as, err = records.FindFeedbackAlerts(ctx, s.Store.Pool, id, "", "", "", "")
	} else {
		p, a, e, fid, perr := refParts(ref, alertKeyPrefix)
		if perr != nil {
			return keys.Resource{}, perr
		}
		as, err = records.FindFeedbackAlerts(ctx, s.Store.Pool, 0, p, a, e, fid)
	}
	if err != nil {
		return keys.Resource{}, err
	}
	switch {
	case len(as) == 0:
		return keys.Resource{}, notFound("feedback alert", ref)
	case len(as) > 1:
		return keys.Resource{}, ambiguous("feedback alert", ref, len(as))
	}
	a := as[0]
	// The alert's resource is the feedback item its event named.
	if k, err := keys.ParseEvent(a.EventKey); err == nil {
		if d, err := s.ShowEvent(ctx, k, false); err == nil {
			return d.ResourceKey(), nil
		}
	}
	return keys.Resource{Provider: a.Provider, Account: a.Project, Environment: a.Environment, Kind: "feedback", ID: a.FeedbackID}, nil
}

func (s *Service) findOutbox(ctx context.Context, ref string, l *Lineage) (keys.Resource, error) {
	var o *outbox.OutboxRow
	var err error
	if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil && id > 0 {
		o, err = outbox.GetOutboxRow(ctx, s.Store.Pool, id)
	} else {
		o, err = outbox.FindOutboxByOperation(ctx, s.Store.Pool, ref)
	}
	if err != nil {
		return keys.Resource{}, err
	}
	l.BusinessKey = o.OperationKey
	l.Summary = fmt.Sprintf("outbox #%d %s to %s: %s after %d attempt(s)", o.ID, o.Kind, o.Destination, o.Status, o.Attempts)
	r, err := keys.ParseResource(o.ResourceKey)
	if err != nil {
		return keys.Resource{}, fmt.Errorf("outbox %d names resource %q: %w", o.ID, o.ResourceKey, err)
	}
	return r, nil
}

// fillLineage gathers everything about resource r into l.
func (s *Service) fillLineage(ctx context.Context, l *Lineage, r keys.Resource) error {
	db := s.Store.Pool
	l.Resource, l.ResourceKey = r, r.String()
	l.Workflow, l.ConsolePath = s.workflowRef(r), keys.ConsoleResourcePath(r)
	l.Grants, l.Alerts, l.Outbox, l.Events = []GrantView{}, []AlertView{}, []OutboxView{}, []LineageRow{}
	claims, err := records.ResourceClaims(ctx, db, r.String(), 100)
	if err != nil {
		return err
	}
	l.Claims = claims
	if l.Claims == nil {
		l.Claims = []records.Claim{}
	}

	gs, err := records.FindCreditGrants(ctx, db, 0, r.Provider, r.Account, r.Environment, r.ID)
	if err != nil {
		return err
	}
	effectEvents := map[string]string{}
	for _, c := range claims {
		effectEvents[c.EventKey] = fmt.Sprintf("claimed %s (handler %s)", c.BusinessKey, c.Handler)
	}
	for _, g := range gs {
		if r.Kind != "invoice" {
			break
		}
		bk := keys.Join(grantKeyPrefix, g.Provider, g.Account, g.Environment, g.InvoiceID, g.Operation)
		l.Grants = append(l.Grants, GrantView{ID: g.ID, BusinessKey: bk, Workspace: g.WorkspaceID, Credits: g.Credits,
			AmountPaid: g.AmountPaid, Currency: g.Currency, EventKey: g.EventKey, CreatedAt: g.CreatedAt.UTC()})
		effectEvents[g.EventKey] = fmt.Sprintf("created credit grant #%d (%d credits)", g.ID, g.Credits)
	}
	as, err := records.FindFeedbackAlerts(ctx, db, 0, r.Provider, r.Account, r.Environment, r.ID)
	if err != nil {
		return err
	}
	for _, a := range as {
		bk := keys.Join(alertKeyPrefix, a.Provider, a.Project, a.Environment, a.FeedbackID, a.Operation)
		l.Alerts = append(l.Alerts, AlertView{ID: a.ID, BusinessKey: bk, Workspace: a.WorkspaceID, EventKey: a.EventKey, CreatedAt: a.CreatedAt.UTC()})
		effectEvents[a.EventKey] = fmt.Sprintf("created feedback alert #%d", a.ID)
	}
	if p, err := records.GetProjection(ctx, db, r.Provider, r.Account, r.Environment, r.ID); err == nil && r.Kind == "subscription" {
		l.Projection = &ProjectionView{BusinessKey: "projection/" + r.String(), Workspace: p.WorkspaceID, Status: p.State.Status,
			Version: p.Version, Deleted: p.Deleted, Access: p.Access, AccessEndsAt: utcPtr(p.AccessEndsAt),
			WriteSeq: p.WriteSeq, WrittenBy: p.WrittenBy, UpdatedAt: p.UpdatedAt.UTC()}
		effectEvents[p.WrittenBy] = fmt.Sprintf("wrote the subscription's current state (%s, write #%d)", p.State.Status, p.WriteSeq)
	} else if err != nil && !IsNotFound(err) {
		return err
	}

	evs, err := inbox.ResourceLineage(ctx, db, r)
	if err != nil {
		return err
	}
	refs := []string{l.ResourceKey, "resource:" + l.ResourceKey}
	for _, e := range evs {
		row := LineageRow{LineageEvent: e, BodySHA256: hex.EncodeToString(e.BodySHA256), Trace: s.traceRef(e.Traceparent)}
		if e.Key.Provider != "" && e.Key.Account != "" && e.Key.Environment != "" && e.Key.EventID != "" {
			row.KeyString = e.Key.String()
		}
		row.Role = lineageRole(&row, effectEvents, len(effectEvents) > 0)
		l.Events = append(l.Events, row)
		if e.Source == "quarantine" {
			refs = append(refs, inbox.QuarantineTarget(e.SourceID))
		} else if row.KeyString != "" {
			refs = append(refs, row.KeyString)
		}
	}
	var evKeys []keys.Event
	for _, e := range evs {
		if e.Source != "quarantine" && e.Key.EventID != "" {
			evKeys = append(evKeys, e.Key)
		}
	}
	if l.Forwards, err = forwards.AttemptsFor(ctx, db, evKeys); err != nil {
		return err
	}
	os, err := outbox.ResourceOutbox(ctx, db, r)
	if err != nil {
		return err
	}
	for _, o := range os {
		l.Outbox = append(l.Outbox, OutboxView{ID: o.ID, OperationKey: o.OperationKey, Class: o.Class, Kind: o.Kind,
			Destination: o.Destination, Status: o.Status, Attempts: o.Attempts, LastError: o.LastError,
			CreatedAt: o.CreatedAt.UTC(), SentAt: utcPtr(o.SentAt)})
		refs = append(refs, OutboxTarget(o.ID))
	}
	if l.Divergences, err = passes.ResourceDivergences(ctx, db, r); err != nil {
		return err
	}
	acts, err := store.ListOperatorActionsFor(ctx, db, refs, 500)
	if err != nil {
		return err
	}
	l.Actions = AuditEntries(acts)
	s.summarize(l)
	return nil
}

func lineageRole(row *LineageRow, effects map[string]string, anyEffect bool) string {
	if row.Source == "quarantine" {
		role := "quarantined (" + row.QuarantineReason + ")"
		if row.QuarantineReason == inbox.ReasonConflictingDuplicate {
			role = "quarantined conflict: same event key, different body; the original was kept"
		}
		if row.Status == "resolved" {
			role += "; resolved"
			if row.Resolution != "" {
				role += ": " + row.Resolution
			}
		}
		return role
	}
	if what, ok := effects[row.KeyString]; ok {
		return what
	}
	switch row.Status {
	case keys.StatusDone:
		if anyEffect {
			return "done: no new effect (the business key already held it)"
		}
		return "done"
	case keys.StatusIgnored:
		return "ignored: " + row.LastError
	case keys.StatusPending:
		return "pending: waiting for its workflow"
	default:
		return row.Status + " after " + strconv.Itoa(row.Attempts) + " attempt(s): replayable"
	}
}

func (s *Service) summarize(l *Lineage) {
	var parts []string
	switch {
	case l.Kind == LineageGrant && len(l.Grants) > 0:
		g := l.Grants[0]
		l.BusinessKey = g.BusinessKey
		parts = append(parts, fmt.Sprintf("credit grant #%d: %d credits to %s", g.ID, g.Credits, g.Workspace))
	case l.Kind == LineageAlert && len(l.Alerts) > 0:
		a := l.Alerts[0]
		l.BusinessKey = a.BusinessKey
		parts = append(parts, fmt.Sprintf("feedback alert #%d for %s", a.ID, a.Workspace))
	case l.Kind == LineageSubscription && l.Projection != nil:
		l.BusinessKey = l.Projection.BusinessKey
		parts = append(parts, fmt.Sprintf("subscription %s: %s, access %t", l.Resource.ID, l.Projection.Status, l.Projection.Access))
	case l.Summary != "":
		parts = append(parts, l.Summary)
	default:
		parts = append(parts, fmt.Sprintf("%s %s", l.Resource.Kind, l.Resource.ID))
	}
	inbox, quarantined := 0, 0
	for _, e := range l.Events {
		if e.Source == "quarantine" {
			quarantined++
		} else {
			inbox++
		}
	}
	parts = append(parts, fmt.Sprintf("%d event(s), %d quarantined, %d outbox row(s), %d operator act(s)", inbox, quarantined,
		len(l.Outbox), len(l.Actions)))
	l.Summary = strings.Join(parts, "; ")
}
