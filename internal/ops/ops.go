package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/routes"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// Service performs operator acts on the store and, for signals, schedules
// and status, Temporal.
type Service struct {
	Store *store.Store
	// Payloads, when set, is where payloads are read (the console's pool as
	// hookinbox_payload_reader, whose main role reads none); nil: Store.
	Payloads *store.Store
	// Routes is the route table re-admitted deliveries are recorded by
	// (the same the intake uses).
	Routes routes.Router
	// Handled is the App's own route table (its handlers): a forward route
	// may not take their types unless it says so on purpose.
	Handled *routes.Table
	// Doorbell rings resource workflows after a replay, a re-admission or
	// a release; nil leaves that to the sweeper.
	Doorbell keys.Doorbell
	// Temporal is for schedules and status; nil reports them unavailable.
	Temporal client.Client
	// StoreErr and TemporalErr say why Store or Temporal is nil (Status
	// reports them).
	StoreErr, TemporalErr error
	Config                config.Config
	// Mailer sends a notification rule's test email (nil: an email rule's
	// test says there is none).
	Mailer outbound.Sender
	Logger *slog.Logger
	// SignalTimeout bounds one SignalWithStart (default 10s).
	SignalTimeout time.Duration
}

// Actor is who performs an act: the name recorded in the audit (a CLI
// user, an API token's name).
type Actor struct {
	Name string
}

func (a Actor) check() error {
	if strings.TrimSpace(a.Name) == "" {
		return Invalidf("who acts must be named (--by)")
	}
	return nil
}

// InvalidError is bad input: nothing was done. The CLI exits 2 on it, the
// API answers 400 with its message.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

// Invalidf formats an *InvalidError.
func Invalidf(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// IsInvalid reports whether err is bad input.
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

// ConflictError is an act refused by the current state (already resolved,
// not replayable without force, cannot be re-admitted): nothing was done.
type ConflictError struct{ Err error }

func (e *ConflictError) Error() string { return e.Err.Error() }
func (e *ConflictError) Unwrap() error { return e.Err }

// IsConflict reports whether err is an act refused by the current state.
func IsConflict(err error) bool {
	var ce *ConflictError
	var refused *inbox.ReplayRefusedError
	var resolved *inbox.AlreadyResolvedError
	return errors.As(err, &ce) || errors.As(err, &refused) || errors.As(err, &resolved) ||
		errors.Is(err, store.ErrConflict) || isCannotReadmit(err)
}

// IsNotFound reports whether err names something that does not exist.
func IsNotFound(err error) bool { return errors.Is(err, fault.ErrNotFound) }

// payloads is the store payloads are read from.
func (s *Service) payloads() *store.Store {
	if s.Payloads != nil {
		return s.Payloads
	}
	return s.Store
}

func (s *Service) signalTimeout() time.Duration {
	if s.SignalTimeout > 0 {
		return s.SignalTimeout
	}
	return 10 * time.Second
}

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// WorkflowURL is the Temporal UI page of a resource's workflow.
func (s *Service) WorkflowURL(r keys.Resource) string {
	if s.Config.TemporalUIURL == "" {
		return ""
	}
	return keys.TemporalUIWorkflowURL(s.Config.TemporalUIURL, s.Config.TemporalNamespace, keys.PrefixedResourceWorkflowID(s.Config.WorkflowIDPrefix, r))
}

// WorkflowRef names a resource's workflow and where to see it.
type WorkflowRef struct {
	ID  string `json:"id"`
	URL string `json:"url,omitempty"`
}

// TraceRef names a delivery's trace (the traceparent the intake stored)
// and where to see it (HOOKINBOX_TRACE_URL); the zero TraceRef when the
// delivery was not traced.
type TraceRef struct {
	ID  string `json:"id,omitempty"`
	URL string `json:"url,omitempty"`
}

// traceRef is the trace of the delivery whose stored traceparent is tp.
func (s *Service) traceRef(tp string) TraceRef {
	id := keys.TraceID(tp)
	return TraceRef{ID: id, URL: keys.TraceURL(s.Config.TraceURL, id)}
}

func (s *Service) workflowRef(r keys.Resource) WorkflowRef {
	return WorkflowRef{ID: keys.PrefixedResourceWorkflowID(s.Config.WorkflowIDPrefix, r), URL: s.WorkflowURL(r)}
}

// Doorbells rings each resource once after an operator act. The rows are
// already committed as pending, so a failure only costs latency: the first
// one stops further attempts (Temporal is likely down) and is reported,
// and the sweeper delivers the events when Temporal is back.
type Doorbells struct {
	s    *Service
	rung map[keys.Resource]bool
	// Failed is the first signalling error; later resources are not tried.
	Failed error
	// Missed counts the resources not signalled.
	Missed int
}

// NewDoorbells starts a round of doorbells.
func (s *Service) NewDoorbells() *Doorbells {
	return &Doorbells{s: s, rung: map[keys.Resource]bool{}}
}

// Ring signals r's workflow unless it was rung already; it reports whether
// r has been rung.
func (d *Doorbells) Ring(ctx context.Context, r keys.Resource, value string) bool {
	if d.rung[r] {
		return true
	}
	if d.Failed != nil || d.s.Doorbell == nil {
		if d.Failed == nil {
			d.Failed = errors.New("no Temporal client: the sweeper will deliver")
		}
		d.Missed++
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, d.s.signalTimeout())
	defer cancel()
	if err := d.s.Doorbell.Ring(sctx, r, keys.SignalEvent, value); err != nil {
		d.Failed = err
		d.Missed++
		return false
	}
	d.rung[r] = true
	return true
}

// Rung is how many resources were signalled.
func (d *Doorbells) Rung() int { return len(d.rung) }

// Warning says what a failed round of doorbells means, or "" when all rang.
func (d *Doorbells) Warning() string {
	if d.Failed == nil {
		return ""
	}
	return fmt.Sprintf("Temporal unreachable (%v): %d resource workflow(s) not signalled; the sweeper signals them once "+
		"Temporal is reachable (pending rows due for longer than HOOKINBOX_SWEEP_AFTER, 1m by default)", d.Failed, d.Missed)
}

// AuditEntry is an operator action as shown: the audit row, its time in UTC.
type AuditEntry store.OperatorAction

// AuditEntries converts audit rows to views.
func AuditEntries(acts []store.OperatorAction) []AuditEntry {
	out := make([]AuditEntry, 0, len(acts))
	for _, a := range acts {
		e := AuditEntry(a)
		e.At = a.At.UTC()
		out = append(out, e)
	}
	return out
}

// RecentActions lists the newest operator actions, optionally by one actor
// or of one action.
func (s *Service) RecentActions(ctx context.Context, actor, action string, limit int) ([]AuditEntry, error) {
	if limit < 1 || limit > 1000 {
		return nil, Invalidf("limit must be between 1 and 1000")
	}
	acts, err := store.RecentOperatorActions(ctx, s.Store.Pool, actor, action, limit)
	if err != nil {
		return nil, err
	}
	return AuditEntries(acts), nil
}

// audit records one act; reason defaults to what was done.
func (s *Service) audit(ctx context.Context, db store.DB, who Actor, action, target, reason string, details map[string]any) (int64, error) {
	if strings.TrimSpace(reason) == "" {
		reason = strings.ReplaceAll(action, "_", " ")
	}
	return store.InsertOperatorAction(ctx, db, &store.OperatorAction{Actor: who.Name, Action: action, Target: target,
		Reason: reason, Details: details})
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
