package simulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Subscription statuses the simulator uses.
const (
	StatusActive   = "active"
	StatusTrialing = "trialing"
	StatusPastDue  = "past_due"
	StatusCanceled = "canceled"
)

// Stripe event types the simulator emits.
const (
	EventInvoicePaid         = "invoice.paid"
	EventSubscriptionCreated = "customer.subscription.created"
	EventSubscriptionUpdated = "customer.subscription.updated"
	EventSubscriptionDeleted = "customer.subscription.deleted"
	EventFeedbackCreated     = "feedback.created"
	EventCreditNoteCreated   = "credit_note.created"
	EventCreditNoteVoided    = "credit_note.voided"
	// A feedback item's follow-ups (ScenarioKnobs.CommentsPerFeedback,
	// VotesPerFeedback): types no built-in handler takes, for a team's
	// forward route and a team's own handler.
	EventFeedbackCommented = "feedback.commented"
	EventFeedbackVoted     = "feedback.voted"
)

// Credit note statuses.
const (
	CreditNoteIssued = "issued"
	CreditNoteVoid   = "void"
)

const period = 30 * 24 * time.Hour

// Simulator is one simulated provider. All methods are safe for concurrent use.
type Simulator struct {
	cfg Config

	mu sync.Mutex
	// Separate random streams so that, say, a different duplicate rate does
	// not change the ids of a run.
	idRand, scenRand, planRand, apiRand, mailRand *rand.Rand
	// thinRand draws thin event ids, so that turning thin events on leaves
	// every other id of a seed as it was.
	thinRand *rand.Rand

	ids       map[string]bool
	accounts  []string
	customers map[string]*Customer
	invoices  map[string]*Invoice
	subs      map[string]*Subscription
	feedback  map[string]*FeedbackItem
	cnotes    map[string]*CreditNote
	cnOrder   []string
	invOrder  []string
	subOrder  []string
	fbOrder   []string
	seq       int64
	// events is the Stripe event log (GET /v1/events), in creation order.
	events   []*Event
	eventIdx map[string]int
	// thin are the thin events (GET /v2/core/events/{id}) by id; thinOf
	// the thin twin of a snapshot event, by the snapshot's id.
	thin   map[string]*Event
	thinOf map[string]*Event
	// messages are the Standard Webhooks messages, by msg id.
	messages map[string]*Event
	// delivered tracks, per event id, what the senders did with it.
	delivered map[string]*eventFate

	stats  Stats
	faults []*Fault
	mail   mailbox
	// gh is the simulated GitHub's hooks and their delivery logs.
	gh gitHubState
}

type eventFate struct {
	dropped   bool
	attempted bool
	acked     bool
}

// Customer is a Stripe customer.
type Customer struct {
	ID      string    `json:"id"`
	Account string    `json:"account"`
	Email   string    `json:"email"`
	Created time.Time `json:"created"`
}

// Invoice is a paid Stripe invoice.
type Invoice struct {
	ID           string    `json:"id"`
	Account      string    `json:"account"`
	Customer     string    `json:"customer"`
	Subscription string    `json:"subscription,omitempty"`
	AmountPaid   int64     `json:"amount_paid"`
	Currency     string    `json:"currency"`
	Status       string    `json:"status"`
	Created      time.Time `json:"created"`
	PaidAt       time.Time `json:"paid_at"`
	// EventIDs are the invoice.paid events emitted for it (two when a second
	// distinct event was sent).
	EventIDs []string `json:"event_ids"`
}

// CreditNote is a Stripe credit note on a paid invoice: it credits Total of
// the invoice's total back to the customer, until it is voided.
type CreditNote struct {
	ID       string    `json:"id"`
	Account  string    `json:"account"`
	Invoice  string    `json:"invoice"`
	Customer string    `json:"customer"`
	Total    int64     `json:"total"`
	Currency string    `json:"currency"`
	Status   string    `json:"status"`
	Created  time.Time `json:"created"`
	VoidedAt time.Time `json:"voided_at"`
	// EventIDs are its credit_note.created events (two when a second
	// distinct event was sent); VoidEventIDs its credit_note.voided ones.
	EventIDs     []string `json:"event_ids"`
	VoidEventIDs []string `json:"void_event_ids,omitempty"`
}

// SubscriptionState is the mutable part of a subscription.
type SubscriptionState struct {
	Status             string
	CancelAtPeriodEnd  bool
	CurrentPeriodStart time.Time
	CurrentPeriodEnd   time.Time
	CanceledAt         time.Time // zero: null
	EndedAt            time.Time // zero: null
	TrialEnd           time.Time // zero: null
}

// SubscriptionSnapshot is the state after one change. Version counts from 1
// and grows with every change.
type SubscriptionSnapshot struct {
	Version int64
	SubscriptionState
	EventID   string
	EventType string
}

// Subscription is a Stripe subscription and its history of snapshots.
type Subscription struct {
	ID       string
	Account  string
	Customer string
	Created  time.Time
	History  []SubscriptionSnapshot
	itemID   string
	lastWire wireSubscription
}

// Current returns the latest snapshot.
func (s Subscription) Current() SubscriptionSnapshot { return s.History[len(s.History)-1] }

// Access applies the product rule at now: active, trialing and past_due keep
// access until the current period ends (so cancel-at-period-end keeps it);
// canceled (an immediate cancellation) has none.
func (st SubscriptionState) Access(now time.Time) bool {
	switch st.Status {
	case StatusActive, StatusTrialing, StatusPastDue:
		return now.Before(st.CurrentPeriodEnd)
	}
	return false
}

// FeedbackItem is one item of the feedback tool.
type FeedbackItem struct {
	ID        string    `json:"id"`
	Project   string    `json:"project"`
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"created_at"`
	EventID   string    `json:"event_id"`
	// Comments and Votes on the item, in creation order.
	Comments []Comment `json:"comments,omitempty"`
	Votes    []Vote    `json:"votes,omitempty"`
}

// Comment is one comment on a feedback item: one operation, announced by
// its feedback.commented events (a second one, another message id, when
// the tool sends it twice).
type Comment struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	EventIDs []string `json:"event_ids"`
}

// Vote is one vote on a feedback item, announced by one feedback.voted event.
type Vote struct {
	ID      string `json:"id"`
	Voter   string `json:"voter"`
	EventID string `json:"event_id"`
}

// Event is one message the provider sends: a Stripe event (ID evt_…) or a
// Standard Webhooks message (ID msg_…). Body is the exact bytes sent and
// must not be modified.
type Event struct {
	Provider     string // ProviderStripe or ProviderStandard
	ID           string // evt_… or msg_… (the webhook-id)
	Type         string // e.g. invoice.paid, feedback.created
	Account      string // source account: acct_… or proj_…
	ResourceKind string // KindInvoice, KindSubscription, KindCreditNote or KindFeedback
	ResourceID   string // in_…, sub_…, cn_… or fb_…
	// Invoice is the invoice a credit note event credits.
	Invoice string
	Created time.Time // the event's created time
	Body    []byte
	// Conflicting marks a copy made by Conflicting: same ID, other Body.
	Conflicting bool
	// Thin marks a thin event (object v2.core.event); Snapshot is then
	// the id of the snapshot event it is the twin of (its snapshot_event).
	Thin     bool
	Snapshot string
	seq      int64
}

// New builds a simulator from cfg (zero fields take their defaults).
func New(cfg Config) *Simulator {
	cfg = cfg.withDefaults()
	s := &Simulator{
		cfg:       cfg,
		idRand:    rand.New(rand.NewPCG(cfg.Seed, 1)),
		scenRand:  rand.New(rand.NewPCG(cfg.Seed, 2)),
		planRand:  rand.New(rand.NewPCG(cfg.Seed, 3)),
		apiRand:   rand.New(rand.NewPCG(cfg.Seed, 4)),
		mailRand:  rand.New(rand.NewPCG(cfg.Seed, 5)),
		thinRand:  rand.New(rand.NewPCG(cfg.Seed, 7)),
		thin:      map[string]*Event{},
		thinOf:    map[string]*Event{},
		ids:       map[string]bool{},
		accounts:  append([]string(nil), cfg.Accounts...),
		customers: map[string]*Customer{},
		invoices:  map[string]*Invoice{},
		subs:      map[string]*Subscription{},
		feedback:  map[string]*FeedbackItem{},
		cnotes:    map[string]*CreditNote{},
		eventIdx:  map[string]int{},
		messages:  map[string]*Event{},
		delivered: map[string]*eventFate{},
		gh:        newGitHubState(cfg.Seed),
	}
	s.mail.init()
	return s
}

// Config returns the configuration in force, defaults filled in.
func (s *Simulator) Config() Config { return s.cfg }

// Accounts returns the Stripe accounts that own resources.
func (s *Simulator) Accounts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.accounts)
}

// Projects returns the feedback projects.
func (s *Simulator) Projects() []string { return slices.Clone(s.cfg.Projects) }

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newID draws a Stripe-looking id from the seeded id stream. Callers hold mu.
func (s *Simulator) newID(prefix string) string {
	for {
		b := make([]byte, 24)
		for i := range b {
			b[i] = idAlphabet[s.idRand.IntN(len(idAlphabet))]
		}
		id := prefix + "_" + string(b)
		if !s.ids[id] {
			s.ids[id] = true
			return id
		}
	}
}

func (s *Simulator) now() time.Time { return s.cfg.Clock().UTC().Truncate(time.Second) }

func (s *Simulator) knowAccount(account string) string {
	if account == "" {
		return s.accounts[0]
	}
	if !slices.Contains(s.accounts, account) {
		s.accounts = append(s.accounts, account)
	}
	return account
}

// CreateCustomer adds a customer to account ("" means the first account).
func (s *Simulator) CreateCustomer(account string) Customer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.createCustomer(account)
}

func (s *Simulator) createCustomer(account string) *Customer {
	account = s.knowAccount(account)
	c := &Customer{ID: s.newID("cus"), Account: account, Created: s.now()}
	c.Email = fmt.Sprintf("%s@example.test", c.ID)
	s.customers[c.ID] = c
	return c
}

// SubscriptionOptions shape a new subscription.
type SubscriptionOptions struct {
	// Status is active (default) or trialing.
	Status string
}

// CreateSubscription starts a subscription for customer in account (a new
// customer when customer is "") and records its customer.subscription.created
// event.
func (s *Simulator) CreateSubscription(account, customer string, opts SubscriptionOptions) (Subscription, Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ev := s.createSubscription(account, customer, opts)
	return sub.clone(), *ev
}

func (s *Simulator) createSubscription(account, customer string, opts SubscriptionOptions) (*Subscription, *Event) {
	if c, ok := s.customers[customer]; ok {
		account = c.Account
	} else {
		account = s.knowAccount(account)
		if customer == "" {
			customer = s.createCustomer(account).ID
		} else {
			s.customers[customer] = &Customer{ID: customer, Account: account, Created: s.now()}
		}
	}
	now := s.now()
	sub := &Subscription{
		ID: s.newID("sub"), Account: account, Customer: customer, Created: now, itemID: s.newID("si"),
	}
	st := SubscriptionState{Status: StatusActive, CurrentPeriodStart: now, CurrentPeriodEnd: now.Add(period)}
	if opts.Status == StatusTrialing {
		st.Status = StatusTrialing
		st.TrialEnd = now.Add(14 * 24 * time.Hour)
		st.CurrentPeriodEnd = st.TrialEnd
	}
	s.subs[sub.ID] = sub
	s.subOrder = append(s.subOrder, sub.ID)
	return sub, s.snapshot(sub, st, EventSubscriptionCreated)
}

// snapshot appends a state to sub's history and records its event.
func (s *Simulator) snapshot(sub *Subscription, st SubscriptionState, typ string) *Event {
	snap := SubscriptionSnapshot{Version: int64(len(sub.History) + 1), SubscriptionState: st, EventType: typ}
	w := s.subscriptionWire(sub, snap)
	var prev map[string]any
	if typ == EventSubscriptionUpdated {
		prev = previousAttributes(sub.lastWire, w)
	}
	ev := s.recordStripe(typ, sub.Account, KindSubscription, sub.ID, w, prev)
	snap.EventID = ev.ID
	sub.History = append(sub.History, snap)
	sub.lastWire = w
	return ev
}

func (s *Simulator) recordStripe(typ, account, kind, resource string, object any, prev map[string]any) *Event {
	now := s.now()
	s.seq++
	ev := &Event{
		Provider: ProviderStripe, ID: s.newID("evt"), Type: typ, Account: account,
		ResourceKind: kind, ResourceID: resource, Created: now, seq: s.seq,
	}
	ev.Body = s.eventBody(ev.ID, typ, account, now, object, prev)
	s.eventIdx[ev.ID] = len(s.events)
	s.events = append(s.events, ev)
	if s.cfg.ThinEvents != ThinOff {
		s.thinTwin(ev)
	}
	return ev
}

// ThinEvent returns the thin twin of a recorded snapshot event (recording
// it on first use, whatever Config.ThinEvents says): the same change, as an
// event destination with the thin payload sends it. GET /v2/core/events/{id}
// serves it from then on.
func (s *Simulator) ThinEvent(snapshotID string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.eventIdx[snapshotID]
	if !ok {
		return Event{}, fmt.Errorf("simulator: no Stripe event %q", snapshotID)
	}
	return *s.thinTwin(s.events[i]), nil
}

// thinTwin records (once) and returns snap's thin twin. Callers hold mu.
func (s *Simulator) thinTwin(snap *Event) *Event {
	if t, ok := s.thinOf[snap.ID]; ok {
		return t
	}
	s.seq++
	prefix := "evt_test_"
	if s.cfg.Livemode {
		prefix = "evt_"
	}
	b := make([]byte, 48)
	for i := range b {
		b[i] = idAlphabet[s.thinRand.IntN(len(idAlphabet))]
	}
	t := &Event{
		Provider: ProviderStripe, ID: prefix + string(b), Type: "v1." + snap.Type, Account: snap.Account,
		ResourceKind: snap.ResourceKind, ResourceID: snap.ResourceID, Invoice: snap.Invoice, Created: snap.Created,
		Thin: true, Snapshot: snap.ID, seq: s.seq,
	}
	t.Body = s.thinBody(t)
	s.thin[t.ID] = t
	s.thinOf[snap.ID] = t
	return t
}

// UpdateSubscription applies change to the subscription's current state and
// records a customer.subscription.updated event with the new snapshot.
func (s *Simulator) UpdateSubscription(id string, change func(*SubscriptionState)) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[id]
	if !ok {
		return Event{}, fmt.Errorf("simulator: no subscription %q", id)
	}
	st := sub.Current().SubscriptionState
	change(&st)
	return *s.snapshot(sub, st, EventSubscriptionUpdated), nil
}

// CancelSubscription cancels at once (status canceled, ended_at set, event
// customer.subscription.deleted) or at period end (cancel_at_period_end,
// event customer.subscription.updated; access stays until the period ends).
func (s *Simulator) CancelSubscription(id string, atPeriodEnd bool) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[id]
	if !ok {
		return Event{}, fmt.Errorf("simulator: no subscription %q", id)
	}
	return *s.cancel(sub, atPeriodEnd), nil
}

func (s *Simulator) cancel(sub *Subscription, atPeriodEnd bool) *Event {
	st := sub.Current().SubscriptionState
	now := s.now()
	st.CanceledAt = now
	if atPeriodEnd {
		st.CancelAtPeriodEnd = true
		return s.snapshot(sub, st, EventSubscriptionUpdated)
	}
	st.Status = StatusCanceled
	st.CancelAtPeriodEnd = false
	st.EndedAt = now
	return s.snapshot(sub, st, EventSubscriptionDeleted)
}

// InvoiceOptions describe a paid invoice. With Subscription set, the account
// and customer are the subscription's; otherwise Customer (or a new customer
// of Account) is billed. Amount defaults to 2000, Currency to usd.
type InvoiceOptions struct {
	Account      string
	Customer     string
	Subscription string
	Amount       int64
	Currency     string
}

// PayInvoice creates a paid invoice and records its invoice.paid event.
func (s *Simulator) PayInvoice(opts InvoiceOptions) (Invoice, Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ev, err := s.payInvoice(opts)
	if err != nil {
		return Invoice{}, Event{}, err
	}
	return inv.clone(), *ev, nil
}

func (s *Simulator) payInvoice(opts InvoiceOptions) (*Invoice, *Event, error) {
	switch {
	case opts.Subscription != "":
		sub, ok := s.subs[opts.Subscription]
		if !ok {
			return nil, nil, fmt.Errorf("simulator: no subscription %q", opts.Subscription)
		}
		opts.Account, opts.Customer = sub.Account, sub.Customer
	case opts.Customer != "":
		c, ok := s.customers[opts.Customer]
		if !ok {
			return nil, nil, fmt.Errorf("simulator: no customer %q", opts.Customer)
		}
		opts.Account = c.Account
	default:
		opts.Customer = s.createCustomer(opts.Account).ID
		opts.Account = s.customers[opts.Customer].Account
	}
	if opts.Amount == 0 {
		opts.Amount = DefaultAmount
	}
	if opts.Currency == "" {
		opts.Currency = DefaultCurrency
	}
	now := s.now()
	inv := &Invoice{
		ID: s.newID("in"), Account: opts.Account, Customer: opts.Customer, Subscription: opts.Subscription,
		AmountPaid: opts.Amount, Currency: opts.Currency, Status: "paid", Created: now, PaidAt: now,
	}
	s.invoices[inv.ID] = inv
	s.invOrder = append(s.invOrder, inv.ID)
	return inv, s.invoicePaidEvent(inv), nil
}

func (s *Simulator) invoicePaidEvent(inv *Invoice) *Event {
	ev := s.recordStripe(EventInvoicePaid, inv.Account, KindInvoice, inv.ID, s.invoiceWire(inv), nil)
	inv.EventIDs = append(inv.EventIDs, ev.ID)
	return ev
}

// InvoicePaidAgain records a second, distinct invoice.paid event (a new evt_
// id) for an invoice that is already paid.
func (s *Simulator) InvoicePaidAgain(invoiceID string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.invoices[invoiceID]
	if !ok {
		return Event{}, fmt.Errorf("simulator: no invoice %q", invoiceID)
	}
	return *s.invoicePaidEvent(inv), nil
}

// CreateCreditNote issues a credit note of total on a paid invoice (total 0:
// the whole invoice) and records its credit_note.created event.
func (s *Simulator) CreateCreditNote(invoiceID string, total int64) (CreditNote, Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.invoices[invoiceID]
	if !ok {
		return CreditNote{}, Event{}, fmt.Errorf("simulator: no invoice %q", invoiceID)
	}
	if total <= 0 {
		total = inv.AmountPaid
	}
	cn, ev := s.createCreditNote(inv, total)
	return cn.clone(), *ev, nil
}

func (s *Simulator) createCreditNote(inv *Invoice, total int64) (*CreditNote, *Event) {
	cn := &CreditNote{
		ID: s.newID("cn"), Account: inv.Account, Invoice: inv.ID, Customer: inv.Customer, Total: total,
		Currency: inv.Currency, Status: CreditNoteIssued, Created: s.now(),
	}
	s.cnotes[cn.ID] = cn
	s.cnOrder = append(s.cnOrder, cn.ID)
	return cn, s.creditNoteEvent(cn, EventCreditNoteCreated)
}

func (s *Simulator) creditNoteEvent(cn *CreditNote, typ string) *Event {
	ev := s.recordStripe(typ, cn.Account, KindCreditNote, cn.ID, s.creditNoteWire(cn), nil)
	ev.Invoice = cn.Invoice
	if typ == EventCreditNoteVoided {
		cn.VoidEventIDs = append(cn.VoidEventIDs, ev.ID)
	} else {
		cn.EventIDs = append(cn.EventIDs, ev.ID)
	}
	return ev
}

// CreditNoteCreatedAgain records a second, distinct credit_note.created
// event (a new evt_ id) for a credit note.
func (s *Simulator) CreditNoteCreatedAgain(id string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cn, ok := s.cnotes[id]
	if !ok {
		return Event{}, fmt.Errorf("simulator: no credit note %q", id)
	}
	return *s.creditNoteEvent(cn, EventCreditNoteCreated), nil
}

// VoidCreditNote voids a credit note and records its credit_note.voided event.
func (s *Simulator) VoidCreditNote(id string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cn, ok := s.cnotes[id]
	if !ok {
		return Event{}, fmt.Errorf("simulator: no credit note %q", id)
	}
	if cn.Status == CreditNoteVoid {
		return Event{}, fmt.Errorf("simulator: credit note %q is already void", id)
	}
	cn.Status, cn.VoidedAt = CreditNoteVoid, s.now()
	return *s.creditNoteEvent(cn, EventCreditNoteVoided), nil
}

// CreditNote returns a credit note.
func (s *Simulator) CreditNote(id string) (CreditNote, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cn, ok := s.cnotes[id]
	if !ok {
		return CreditNote{}, false
	}
	return cn.clone(), true
}

func (cn *CreditNote) clone() CreditNote {
	c := *cn
	c.EventIDs = slices.Clone(cn.EventIDs)
	c.VoidEventIDs = slices.Clone(cn.VoidEventIDs)
	return c
}

// CreateFeedback adds a feedback item to project ("" means the first project)
// and returns its feedback.created message (a Standard Webhooks event).
func (s *Simulator) CreateFeedback(project, message string) (FeedbackItem, Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ev := s.createFeedback(project, message)
	return *item, *ev
}

var feedbackWords = []string{
	"love the new dashboard", "export to CSV is broken", "please add dark mode",
	"search is slow", "billing page is confusing", "great support, thanks",
	"the mobile app crashes on login", "can we get SSO?",
}

func (s *Simulator) createFeedback(project, message string) (*FeedbackItem, *Event) {
	if project == "" {
		project = s.cfg.Projects[0]
	}
	if message == "" {
		message = feedbackWords[s.scenRand.IntN(len(feedbackWords))]
	}
	now := s.now()
	item := &FeedbackItem{ID: s.newID("fb"), Project: project, Message: message, CreatedAt: now}
	s.seq++
	ev := &Event{
		Provider: ProviderStandard, ID: s.newID("msg"), Type: EventFeedbackCreated, Account: project,
		ResourceKind: KindFeedback, ResourceID: item.ID, Created: now, Body: feedbackBody(item, now), seq: s.seq,
	}
	item.EventID = ev.ID
	s.feedback[item.ID] = item
	s.fbOrder = append(s.fbOrder, item.ID)
	s.messages[ev.ID] = ev
	return item, ev
}

// CommentOn adds a comment to feedback item id and returns its
// feedback.commented message.
func (s *Simulator) CommentOn(id, text string) (Comment, Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.feedback[id]
	if !ok {
		return Comment{}, Event{}, fmt.Errorf("no feedback item %s", id)
	}
	ev := s.comment(item, text)
	return item.Comments[len(item.Comments)-1], *ev, nil
}

// CommentedAgain is a second feedback.commented message (another id) for
// comment c of item id: the same operation announced twice.
func (s *Simulator) CommentedAgain(id, comment string) (Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.feedback[id]
	if !ok {
		return Event{}, fmt.Errorf("no feedback item %s", id)
	}
	for i := range item.Comments {
		if item.Comments[i].ID == comment {
			return *s.commentEvent(item, &item.Comments[i]), nil
		}
	}
	return Event{}, fmt.Errorf("no comment %s on %s", comment, id)
}

// VoteOn adds a vote to feedback item id and returns its feedback.voted
// message.
func (s *Simulator) VoteOn(id string) (Vote, Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	item, ok := s.feedback[id]
	if !ok {
		return Vote{}, Event{}, fmt.Errorf("no feedback item %s", id)
	}
	ev := s.vote(item)
	return item.Votes[len(item.Votes)-1], *ev, nil
}

var commentWords = []string{"+1, same here", "any update?", "fixed for me in 2.3", "still happens", "workaround: reload twice"}

// comment adds a comment to item and returns its first event. Callers hold mu.
func (s *Simulator) comment(item *FeedbackItem, text string) *Event {
	if text == "" {
		text = commentWords[s.scenRand.IntN(len(commentWords))]
	}
	item.Comments = append(item.Comments, Comment{ID: s.newID("cm"), Text: text})
	return s.commentEvent(item, &item.Comments[len(item.Comments)-1])
}

// commentEvent is one more feedback.commented message for c. Callers hold mu.
func (s *Simulator) commentEvent(item *FeedbackItem, c *Comment) *Event {
	now := s.now()
	s.seq++
	ev := &Event{Provider: ProviderStandard, ID: s.newID("msg"), Type: EventFeedbackCommented, Account: item.Project,
		ResourceKind: KindFeedback, ResourceID: item.ID, Created: now, seq: s.seq,
		Body: mustJSON(wireFollowUp{Type: EventFeedbackCommented, Timestamp: now.UTC().Format(time.RFC3339),
			Data: wireFollowUpData{ID: item.ID, ProjectID: item.Project, CommentID: c.ID, Text: c.Text}})}
	c.EventIDs = append(c.EventIDs, ev.ID)
	s.messages[ev.ID] = ev
	return ev
}

// vote adds a vote to item and returns its event. Callers hold mu.
func (s *Simulator) vote(item *FeedbackItem) *Event {
	now := s.now()
	v := Vote{ID: s.newID("vt"), Voter: fmt.Sprintf("user_%d", 1+s.scenRand.IntN(50))}
	s.seq++
	ev := &Event{Provider: ProviderStandard, ID: s.newID("msg"), Type: EventFeedbackVoted, Account: item.Project,
		ResourceKind: KindFeedback, ResourceID: item.ID, Created: now, seq: s.seq,
		Body: mustJSON(wireFollowUp{Type: EventFeedbackVoted, Timestamp: now.UTC().Format(time.RFC3339),
			Data: wireFollowUpData{ID: item.ID, ProjectID: item.Project, VoteID: v.ID, Voter: v.Voter}})}
	v.EventID = ev.ID
	item.Votes = append(item.Votes, v)
	s.messages[ev.ID] = ev
	return ev
}

// Conflicting returns a copy of ev with the same id and a different body that
// matters: an invoice's amount_paid doubled, a subscription's
// cancel_at_period_end flipped, a feedback message edited. The copy is not
// part of the provider's state or events list: the original stays the truth.
func (s *Simulator) Conflicting(ev Event) Event {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(ev.Body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		// Not JSON: any other bytes conflict.
		ev.Body = append(slices.Clone(ev.Body), ' ')
		ev.Conflicting = true
		return ev
	}
	switch {
	case ev.Thin:
		// A thin event carries little but its time: move it by a second.
		if t, err := time.Parse(time.RFC3339Nano, fmt.Sprint(doc["created"])); err == nil {
			doc["created"] = t.Add(time.Second).UTC().Format(thinTimeFormat)
		}
	case ev.Provider == ProviderStripe:
		data, _ := doc["data"].(map[string]any)
		obj, _ := data["object"].(map[string]any)
		switch ev.ResourceKind {
		case KindInvoice:
			if n, err := obj["amount_paid"].(json.Number).Int64(); err == nil {
				obj["amount_paid"] = n * 2
				obj["total"] = n * 2
			}
		default:
			b, _ := obj["cancel_at_period_end"].(bool)
			obj["cancel_at_period_end"] = !b
		}
	default:
		data, _ := doc["data"].(map[string]any)
		msg, _ := data["message"].(string)
		data["message"] = msg + " (edited)"
	}
	ev.Body = mustJSON(doc)
	ev.Conflicting = true
	return ev
}

// Event returns the recorded event (snapshot or thin) or message with that id.
func (s *Simulator) Event(id string) (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.eventIdx[id]; ok {
		return *s.events[i], true
	}
	if t, ok := s.thin[id]; ok {
		return *t, true
	}
	if m, ok := s.messages[id]; ok {
		return *m, true
	}
	return Event{}, false
}

// Events returns the Stripe event log in creation order.
func (s *Simulator) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Event, len(s.events))
	for i, e := range s.events {
		out[i] = *e
	}
	return out
}

// Subscription returns a subscription with its history.
func (s *Simulator) Subscription(id string) (Subscription, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[id]
	if !ok {
		return Subscription{}, false
	}
	return sub.clone(), true
}

// Invoice returns an invoice.
func (s *Simulator) Invoice(id string) (Invoice, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.invoices[id]
	if !ok {
		return Invoice{}, false
	}
	return inv.clone(), true
}

func (sub *Subscription) clone() Subscription {
	c := *sub
	c.History = slices.Clone(sub.History)
	return c
}

func (inv *Invoice) clone() Invoice {
	c := *inv
	c.EventIDs = slices.Clone(inv.EventIDs)
	return c
}
