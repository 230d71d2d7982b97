package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// Invariant names, in the order Check reports them.
const (
	DeliveriesAcked        = "deliveries-acknowledged"
	AckedSettled           = "acked-events-settled"
	InboxSettled           = "inbox-settled"
	DroppedRecovered       = "dropped-events-recovered"
	ConflictsQuarantined   = "conflicts-quarantined"
	NoUnexpectedQuarantine = "no-unexpected-quarantine"
	GrantPerInvoice        = "one-grant-per-paid-invoice"
	NoStrayGrant           = "no-grant-without-paid-invoice"
	BalanceMatches         = "balance-equals-grants"
	ReversalPerCreditNote  = "one-reversal-per-credit-note"
	ProjectionNotBehind    = "projection-not-behind"
	ProjectionMatches      = "projection-matches-provider"
	NoCanceledAccess       = "no-canceled-with-access"
	AccessMatches          = "access-matches-rule"
	AlertPerFeedback       = "one-alert-per-feedback"
	OutboxIntents          = "outbox-intent-per-effect"
	OutboxSettled          = "outbox-settled"
	EmailPerConfirmation   = "one-email-per-confirmation"
	ForwardAppliedOnce     = "forward-applied-once"
	ForwardsInOrder        = "forwards-in-order"
	TeamTableExact         = "team-table-exact"
	GitHubIssueForwards    = "github-issue-forwards"
)

// Result statuses.
const (
	StatusOK        = "OK"
	StatusViolation = "VIOLATION"
	StatusSkipped   = "SKIPPED"
)

// descriptions say what each invariant means, for the table and the JSON.
var descriptions = map[string]string{
	DeliveriesAcked:        "every event the sender tried was acknowledged (2xx) in the end",
	AckedSettled:           "every 2xx-acknowledged event has an inbox row that is done or ignored (none lost)",
	InboxSettled:           "no inbox row of the run is left pending, failed or exhausted",
	DroppedRecovered:       "every event no delivery carried was recovered by the facts backfill",
	ConflictsQuarantined:   "same id, other body: the newcomer is quarantined, the inbox keeps the original",
	NoUnexpectedQuarantine: "nothing else of the run is in the quarantine",
	GrantPerInvoice:        "exactly one grant per paid invoice (workspace, credits, amount)",
	NoStrayGrant:           "no grant for an invoice that is not paid",
	BalanceMatches:         "each workspace's balance = credits per invoice × its grants + what its adjustments applied",
	ReversalPerCreditNote:  "one reversal per credit note of a granted invoice (its share of the credits), one void per voided one, none else",
	ProjectionNotBehind:    "no projection older than the newest version sent",
	ProjectionMatches:      "each projection equals the provider's latest state",
	NoCanceledAccess:       "no canceled subscription gives access",
	AccessMatches:          "access equals the product rule applied to the provider's state",
	AlertPerFeedback:       "exactly one initial alert per feedback item",
	OutboxIntents:          "one outbox intent per effect (confirmation per grant, notice per reversal or void, alert per destination)",
	OutboxSettled:          "every outbox row is sent or visibly held for review",
	EmailPerConfirmation:   "exactly one email per sent confirmation",
	ForwardAppliedOnce:     "each forwarded operation applied exactly once at the receiver, under one key, none it never had",
	ForwardsInOrder:        "each resource's forwards applied in the order the inbox committed their events",
	TeamTableExact:         "the team's table holds each feedback item's votes that reached the receiver, nothing else",
	GitHubIssueForwards:    "each GitHub issues event applied once at the receiver, each issue's events in delivery order",
}

var order = []string{
	DeliveriesAcked, AckedSettled, InboxSettled, DroppedRecovered, ConflictsQuarantined, NoUnexpectedQuarantine,
	GrantPerInvoice, NoStrayGrant, BalanceMatches, ReversalPerCreditNote, ProjectionNotBehind, ProjectionMatches, NoCanceledAccess,
	AccessMatches, AlertPerFeedback, OutboxIntents, OutboxSettled, EmailPerConfirmation,
	ForwardAppliedOnce, ForwardsInOrder, TeamTableExact, GitHubIssueForwards,
}

// Names lists every invariant in report order.
func Names() []string { return append([]string(nil), order...) }

// Run is one simulator's part of a check: its ground truth, what its sender
// saw, and where its events landed.
type Run struct {
	// Label names the run in offenders when a check covers several.
	Label string
	// Truth is the simulator's ground truth (Simulator.Truth or GET /_sim/truth).
	Truth simulator.Truth
	// Sent is what the sender did (SentFrom its reports). Nil: derived from
	// the truth alone, which knows fewer events (the invoices', the feedback
	// items' and each subscription's last) and no bodies, so a few checks
	// are narrower or skipped.
	Sent *Sent
	// StripeProvider and FeedbackProvider name the providers as the receiver
	// records them. Defaults "stripe" and "standard".
	StripeProvider   string
	FeedbackProvider string
	// Environment of the run's events. Default from Truth.Livemode.
	Environment string
	// Workspaces the run's accounts map to. Default: the workspaces their
	// account links name.
	Workspaces []string
}

// Input is what Check compares.
type Input struct {
	Runs []Run
	// CreditsPerInvoice each grant must carry. Default 100.
	CreditsPerInvoice int64
	// BackfillRan: the facts backfill ran after the deliveries, so every
	// dropped event must have been recovered.
	BackfillRan bool
	// AllowFailed: the run injected permanent faults, so failed and exhausted
	// inbox rows count as settled (visible and replayable) instead of as
	// violations.
	AllowFailed bool
	// CheckEmails with Emails (the email API's record, Simulator.Emails):
	// every sent confirmation must have exactly one email.
	CheckEmails bool
	Emails      []simulator.Email
	// Forwards, when set, is what the forward route's receiver applied
	// (forward-applied-once, forwards-in-order; skipped without).
	Forwards *Forwards
	// GitHubIssues, when set, are the GitHub issues events sent and what
	// their forward route's receiver applied (github-issue-forwards).
	GitHubIssues *GitHubIssues
	// TeamVotes: the soak team's handler ran (lab/soakteam), so its table
	// must hold the votes (team-table-exact; skipped when false).
	TeamVotes bool
	// MaxOffenders kept per invariant. Default 5.
	MaxOffenders int
}

// Result is one invariant's outcome.
type Result struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Status      string `json:"status"`
	Expected    int64  `json:"expected"`
	Actual      int64  `json:"actual"`
	// Offenders are the first few items that break it; OffenderCount all of them.
	Offenders     []string `json:"offenders,omitempty"`
	OffenderCount int      `json:"offender_count"`
	// Note says how it was counted or why it was skipped.
	Note string `json:"note,omitempty"`

	checked int
	skips   []string
	max     int
}

// OK reports whether the invariant holds (or was skipped).
func (r *Result) OK() bool { return r.Status != StatusViolation }

func (r *Result) offend(label, format string, args ...any) {
	r.OffenderCount++
	if len(r.Offenders) < r.max {
		msg := fmt.Sprintf(format, args...)
		if label != "" {
			msg = "[" + label + "] " + msg
		}
		r.Offenders = append(r.Offenders, msg)
	}
}

func (r *Result) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if r.Note == "" {
		r.Note = n
		return
	}
	r.Note += "; " + n
}

// Report is the outcome of every invariant.
type Report struct {
	OK        bool      `json:"ok"`
	CheckedAt time.Time `json:"checked_at"`
	Results   []*Result `json:"invariants"`
}

// Get returns the named invariant's result.
func (r *Report) Get(name string) *Result {
	for _, res := range r.Results {
		if res.Name == name {
			return res
		}
	}
	return nil
}

// Violations returns the invariants that do not hold.
func (r *Report) Violations() []*Result {
	var out []*Result
	for _, res := range r.Results {
		if !res.OK() {
			out = append(out, res)
		}
	}
	return out
}

// Check reads the database and evaluates every invariant for the runs.
func Check(ctx context.Context, db store.DB, in Input) (*Report, error) {
	if in.CreditsPerInvoice <= 0 {
		in.CreditsPerInvoice = 100
	}
	if in.MaxOffenders <= 0 {
		in.MaxOffenders = 5
	}
	results := map[string]*Result{}
	rep := &Report{CheckedAt: time.Now().UTC(), OK: true}
	for _, name := range order {
		res := &Result{Name: name, Description: descriptions[name], max: in.MaxOffenders}
		results[name] = res
		rep.Results = append(rep.Results, res)
	}
	label := len(in.Runs) > 1
	for i := range in.Runs {
		run := in.Runs[i]
		if !label {
			run.Label = ""
		} else if run.Label == "" {
			run.Label = "run " + strconv.Itoa(i+1)
		}
		d, err := load(ctx, db, run, in)
		if err != nil {
			return nil, err
		}
		d.check(results)
	}
	githubIssueForwards(in.GitHubIssues, results[GitHubIssueForwards])
	for _, res := range rep.Results {
		switch {
		case res.OffenderCount > 0:
			res.Status = StatusViolation
			rep.OK = false
		case res.checked == 0 && len(res.skips) > 0:
			res.Status = StatusSkipped
		default:
			res.Status = StatusOK
		}
		if len(res.skips) > 0 {
			res.note("skipped: %s", strings.Join(res.skips, "; "))
		}
	}
	return rep, nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as a table (one line per invariant), then
// the offenders of each violation and the notes.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INVARIANT\tEXPECTED\tACTUAL\tRESULT\tDETAIL")
	for _, res := range r.Results {
		detail := res.Description
		if len(res.Offenders) > 0 {
			detail = clip(res.Offenders[0], 70)
			if res.OffenderCount > 1 {
				detail += fmt.Sprintf(" (+%d more)", res.OffenderCount-1)
			}
		} else if res.Status == StatusSkipped {
			detail = clip(res.Note, 70)
		}
		exp, act := strconv.FormatInt(res.Expected, 10), strconv.FormatInt(res.Actual, 10)
		if res.Status == StatusSkipped {
			exp, act = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", res.Name, exp, act, res.Status, detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Violations() {
		fmt.Fprintf(w, "\n%s (%s): %d offender(s)\n", res.Name, res.Description, res.OffenderCount)
		for _, o := range res.Offenders {
			fmt.Fprintf(w, "  - %s\n", o)
		}
		if res.OffenderCount > len(res.Offenders) {
			fmt.Fprintf(w, "  … and %d more\n", res.OffenderCount-len(res.Offenders))
		}
	}
	var notes []string
	for _, res := range r.Results {
		if res.Note != "" && res.Status != StatusSkipped {
			notes = append(notes, fmt.Sprintf("  %s: %s", res.Name, res.Note))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n%s\n", strings.Join(notes, "\n"))
	}
	verdict := "all invariants hold"
	if !r.OK {
		verdict = fmt.Sprintf("%d invariant(s) violated", len(r.Violations()))
	}
	_, err := fmt.Fprintf(w, "\n%s\n", verdict)
	return err
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
