package verify

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/feedback"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

// check evaluates every invariant for this run into results.
func (d *runData) check(results map[string]*Result) {
	d.deliveriesAcked(results[DeliveriesAcked])
	d.ackedSettled(results[AckedSettled])
	d.inboxSettled(results[InboxSettled])
	d.droppedRecovered(results[DroppedRecovered])
	d.conflictsQuarantined(results[ConflictsQuarantined])
	d.noUnexpectedQuarantine(results[NoUnexpectedQuarantine])
	d.grantPerInvoice(results[GrantPerInvoice])
	d.noStrayGrant(results[NoStrayGrant])
	d.balanceMatches(results[BalanceMatches])
	d.reversalPerCreditNote(results[ReversalPerCreditNote])
	d.projectionNotBehind(results[ProjectionNotBehind])
	d.projectionMatches(results[ProjectionMatches])
	d.noCanceledAccess(results[NoCanceledAccess])
	d.accessMatches(results[AccessMatches])
	d.alertPerFeedback(results[AlertPerFeedback])
	d.outboxIntents(results[OutboxIntents])
	d.outboxSettled(results[OutboxSettled])
	d.emailPerConfirmation(results[EmailPerConfirmation])
	d.forwardAppliedOnce(results[ForwardAppliedOnce])
	d.forwardsInOrder(results[ForwardsInOrder])
	d.teamTableExact(results[TeamTableExact])
}

func (d *runData) label() string { return d.run.Label }

func (d *runData) skip(r *Result, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if d.run.Label != "" {
		msg = d.run.Label + ": " + msg
	}
	r.skips = append(r.skips, msg)
}

// provider is the receiver's provider name for a simulator event.
func (d *runData) provider(ev Event) string {
	if ev.Provider == simulator.ProviderStandard {
		return d.feedback
	}
	return d.stripe
}

// delivered: the event reached the receiver, acknowledged by a webhook or
// (after a backfill) recovered from the provider's events list.
func (d *runData) delivered(id string) bool {
	return d.sent.Acked[id] || (d.in.BackfillRan && d.dropped[id])
}

// settled: a terminal inbox status (failed and exhausted only when the run
// injected permanent faults).
func (d *runData) settled(status string) bool {
	switch status {
	case keys.StatusDone, keys.StatusIgnored:
		return true
	case keys.StatusFailed, keys.StatusExhausted:
		return d.in.AllowFailed
	}
	return false
}

func describeRow(r inboxRow) string {
	s := fmt.Sprintf("%s (%d attempt(s)", r.status, r.attempts)
	if r.lastError != "" {
		s += ", last error: " + clip(r.lastError, 80)
	}
	return s + ")"
}

func (d *runData) deliveriesAcked(r *Result) {
	r.checked++
	attempted := 0
	for _, id := range d.sent.Order {
		if !d.dropped[id] {
			attempted++
		}
	}
	// The truth knows every unacknowledged event, even those a derived
	// Sent does not list.
	unacked := 0
	for _, e := range d.run.Truth.UnackedEvents {
		unacked++
		r.offend(d.label(), "%s %s %s: never answered 2xx", e.ID, e.Type, e.ResourceID)
	}
	acked := len(d.sent.Acked)
	if d.sent.derived {
		attempted = acked + unacked
	}
	r.Expected += int64(max(attempted, acked+unacked))
	r.Actual += int64(acked)
}

func (d *runData) ackedSettled(r *Result) {
	r.checked++
	failed := 0
	for _, id := range d.sent.Order {
		if !d.sent.Acked[id] {
			continue
		}
		ev := d.sent.Events[id]
		r.Expected++
		row, ok := d.inbox[inboxKey(d.provider(ev), ev.Account, id)]
		switch {
		case !ok:
			r.offend(d.label(), "%s %s %s: acknowledged but no inbox row (lost)", id, ev.Type, ev.ResourceID)
		case !d.settled(row.status):
			r.offend(d.label(), "%s %s %s: %s", id, ev.Type, ev.ResourceID, describeRow(row))
		default:
			r.Actual++
			if row.status == keys.StatusFailed || row.status == keys.StatusExhausted {
				failed++
			}
		}
	}
	if failed > 0 {
		r.note("%d failed or exhausted row(s) counted as settled (permanent faults injected)", failed)
	}
}

func (d *runData) inboxSettled(r *Result) {
	r.checked++
	for _, k := range d.inboxOrder {
		row := d.inbox[k]
		r.Expected++
		if d.settled(row.status) {
			r.Actual++
			continue
		}
		r.offend(d.label(), "%s %s/%s (%s): %s", row.eventID, row.kind, row.resource, row.origin, describeRow(row))
	}
}

func (d *runData) droppedRecovered(r *Result) {
	dropped := d.run.Truth.DroppedEvents
	if !d.in.BackfillRan {
		if len(dropped) > 0 {
			d.skip(r, "the facts backfill did not run; %d event(s) only the provider's events list shows", len(dropped))
		} else {
			d.skip(r, "no dropped events")
		}
		return
	}
	r.checked++
	for _, e := range dropped {
		r.Expected++
		p := d.stripe
		if e.Provider == simulator.ProviderStandard {
			p = d.feedback
		}
		row, ok := d.inbox[inboxKey(p, e.Account, e.ID)]
		switch {
		case !ok:
			r.offend(d.label(), "%s %s %s: never delivered and not recovered", e.ID, e.Type, e.ResourceID)
		case !d.settled(row.status):
			r.offend(d.label(), "%s %s %s: recovered (%s) but %s", e.ID, e.Type, e.ResourceID, row.origin, describeRow(row))
		default:
			r.Actual++
		}
	}
}

func (d *runData) conflictsQuarantined(r *Result) {
	if d.sent.derived {
		d.skip(r, "needs the sender's report (the truth does not list conflicting copies)")
		return
	}
	r.checked++
	quarantined := map[string]bool{}
	for _, q := range d.quarantine {
		if q.reason == inbox.ReasonConflictingDuplicate {
			quarantined[inboxKey(q.provider, q.account, q.eventID)] = true
		}
	}
	for _, id := range sortedKeys(d.sent.Conflicts) {
		c := d.sent.Conflicts[id]
		r.Expected++
		k := inboxKey(d.provider(c), c.Account, id)
		orig, known := d.sent.Events[id]
		row, ok := d.inbox[k]
		switch {
		case !quarantined[k]:
			r.offend(d.label(), "%s %s: conflicting copy acknowledged but not quarantined", id, c.ResourceID)
		case !ok:
			r.offend(d.label(), "%s %s: quarantined, but the original has no inbox row", id, c.ResourceID)
		case known && row.origin == keys.OriginWebhook && !bytes.Equal(row.bodySHA256, orig.BodySHA256):
			r.offend(d.label(), "%s %s: the inbox row does not hold the original body", id, c.ResourceID)
		default:
			r.Actual++
		}
	}
}

func (d *runData) noUnexpectedQuarantine(r *Result) {
	r.checked++
	for _, q := range d.quarantine {
		if q.reason == inbox.ReasonConflictingDuplicate {
			if _, ok := d.sent.Conflicts[q.eventID]; ok || d.sent.derived {
				continue
			}
		}
		r.Actual++
		r.offend(d.label(), "%s/%s %s quarantined at %s: %s", q.provider, q.account, q.eventID, q.endpoint, q.reason)
	}
}

func (d *runData) grantPerInvoice(r *Result) {
	r.checked++
	unreached := 0
	for _, inv := range d.run.Truth.PaidInvoices {
		reached := false
		for _, id := range inv.EventIDs {
			reached = reached || d.delivered(id)
		}
		if !reached {
			unreached++
			continue
		}
		r.Expected++
		gs := d.grants[inv.ID]
		ws, linked := d.links[inv.Account]
		switch {
		case len(gs) == 0:
			r.offend(d.label(), "%s (%s): paid, no grant", inv.ID, inv.Account)
		case len(gs) > 1:
			r.offend(d.label(), "%s: %d grants", inv.ID, len(gs))
		case gs[0].operation != credits.OperationInitialGrant:
			r.offend(d.label(), "%s: grant operation %q", inv.ID, gs[0].operation)
		case linked && gs[0].workspace != ws:
			r.offend(d.label(), "%s: granted to %s, the account links %s", inv.ID, gs[0].workspace, ws)
		case gs[0].credits != d.in.CreditsPerInvoice:
			r.offend(d.label(), "%s: %d credits, want %d", inv.ID, gs[0].credits, d.in.CreditsPerInvoice)
		case gs[0].amount != inv.Amount || !strings.EqualFold(gs[0].currency, inv.Currency):
			r.offend(d.label(), "%s: grant records %d %s, the invoice is %d %s", inv.ID, gs[0].amount, gs[0].currency, inv.Amount, inv.Currency)
		default:
			r.Actual++
		}
	}
	if unreached > 0 {
		r.note("%d paid invoice(s) whose events never reached the receiver not counted", unreached)
	}
}

func (d *runData) noStrayGrant(r *Result) {
	r.checked++
	paid := map[string]bool{}
	for _, inv := range d.run.Truth.PaidInvoices {
		paid[inv.ID] = true
	}
	for _, g := range d.grantOrder {
		if !paid[g.invoice] {
			r.Actual++
			r.offend(d.label(), "%s (%s): %d credits to %s, but the invoice is not paid at the provider", g.invoice, g.account, g.credits, g.workspace)
		}
	}
}

func (d *runData) balanceMatches(r *Result) {
	r.checked++
	for _, ws := range d.workspaces {
		bal, ok := d.wsBalance[ws]
		want := d.in.CreditsPerInvoice*d.wsGrants[ws] + d.wsAdjusted[ws]
		r.Expected += want
		r.Actual += bal
		switch {
		case !ok:
			r.offend(d.label(), "workspace %s does not exist", ws)
		case bal != want:
			r.offend(d.label(), "workspace %s: balance %d, %d grant(s) × %d %+d adjusted = %d", ws, bal, d.wsGrants[ws],
				d.in.CreditsPerInvoice, d.wsAdjusted[ws], want)
		}
	}
}

// reversalPerCreditNote: every credit note that reached the receiver, of
// an invoice that was granted, took back its share of the grant once
// (floor(credits × total / invoice total), whatever the policy then
// applied); every voided one whose void reached it gave back exactly what
// was applied, once; an issued one has no void; and no reversal exists for
// a credit note the provider never had.
func (d *runData) reversalPerCreditNote(r *Result) {
	if len(d.run.Truth.CreditNotes) == 0 && len(d.creditNotes) == 0 {
		d.skip(r, "no credit notes in the run")
		return
	}
	r.checked++
	known := map[string]bool{}
	unreached := 0
	for _, cn := range d.run.Truth.CreditNotes {
		known[cn.ID] = true
		reached, voidReached := false, false
		for _, id := range cn.EventIDs {
			reached = reached || d.delivered(id)
		}
		for _, id := range cn.VoidEventIDs {
			voidReached = voidReached || d.delivered(id)
		}
		gs := d.grants[cn.Invoice]
		if !reached && !voidReached || len(gs) != 1 {
			unreached++
			continue
		}
		r.Expected++
		rows := d.creditNotes[cn.ID]
		if rows == nil {
			rows = &creditNoteRows{}
		}
		want := -credits.ReversalCredits(gs[0].credits, cn.Total, cn.InvoiceTotal)
		switch {
		case len(rows.reversals) != 1:
			r.offend(d.label(), "%s (invoice %s): %d reversal(s)", cn.ID, cn.Invoice, len(rows.reversals))
		case rows.reversals[0].requested != want:
			r.offend(d.label(), "%s: reversal asked %d, its share is %d", cn.ID, rows.reversals[0].requested, want)
		case rows.reversals[0].workspace != gs[0].workspace:
			r.offend(d.label(), "%s: reversed from %s, the grant went to %s", cn.ID, rows.reversals[0].workspace, gs[0].workspace)
		case len(rows.voids) > 1:
			r.offend(d.label(), "%s: %d voids", cn.ID, len(rows.voids))
		case cn.Status == simulator.CreditNoteIssued && len(rows.voids) > 0:
			r.offend(d.label(), "%s: issued at the provider, but voided here", cn.ID)
		case cn.Status == simulator.CreditNoteVoid && voidReached && len(rows.voids) == 0:
			r.offend(d.label(), "%s: voided (event reached), nothing given back", cn.ID)
		case len(rows.voids) == 1 && rows.voids[0].applied != -rows.reversals[0].applied:
			r.offend(d.label(), "%s: void gave back %d, the reversal took %d", cn.ID, rows.voids[0].applied, -rows.reversals[0].applied)
		default:
			r.Actual++
		}
	}
	for _, id := range sortedKeys(d.creditNotes) {
		if !known[id] {
			r.offend(d.label(), "%s: %d reversal(s) for a credit note the provider never had", id, len(d.creditNotes[id].reversals))
		}
	}
	if unreached > 0 {
		r.note("%d credit note(s) whose events never reached the receiver, or whose invoice was not granted, not counted", unreached)
	}
}

// subscriptionEvents lists each subscription's events known to the sender.
func (d *runData) subscriptionEvents() map[string][]Event {
	out := map[string][]Event{}
	for _, id := range d.sent.Order {
		ev := d.sent.Events[id]
		if ev.ResourceKind == simulator.KindSubscription {
			out[ev.ResourceID] = append(out[ev.ResourceID], ev)
		}
	}
	return out
}

// newestSent is the newest version of a subscription that reached the
// receiver (0: none known).
func (d *runData) newestSent(evs []Event) int64 {
	var v int64
	for _, ev := range evs {
		if ev.Version != nil && d.delivered(ev.ID) && *ev.Version > v {
			v = *ev.Version
		}
	}
	return v
}

// reached: the subscription's latest state reached the receiver: with
// versions its newest version was delivered; without, any notice was (the
// worker fetches the current state on each).
func (d *runData) reached(sub simulator.TruthSubscription, evs []Event) bool {
	if d.run.Truth.Versions && sub.Version != nil {
		return d.newestSent(evs) == *sub.Version
	}
	for _, ev := range evs {
		if d.delivered(ev.ID) {
			return true
		}
	}
	return false
}

func (d *runData) projectionNotBehind(r *Result) {
	if !d.run.Truth.Versions {
		d.skip(r, "versions off (snapshots carry none)")
		return
	}
	r.checked++
	byEvents := d.subscriptionEvents()
	for _, sub := range d.run.Truth.Subscriptions {
		newest := d.newestSent(byEvents[sub.ID])
		if newest == 0 {
			continue
		}
		r.Expected++
		p, ok := d.projections[sub.ID]
		switch {
		case !ok:
			r.offend(d.label(), "%s: v%d sent, no projection", sub.ID, newest)
		case p.version == nil:
			r.offend(d.label(), "%s: v%d sent, projection has no version", sub.ID, newest)
		case *p.version < newest:
			r.offend(d.label(), "%s: projection v%d (%s) behind v%d sent", sub.ID, *p.version, p.status, newest)
		default:
			r.Actual++
		}
	}
}

func unixOf(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

func (d *runData) projectionMatches(r *Result) {
	r.checked++
	byEvents := d.subscriptionEvents()
	unreached := 0
	for _, sub := range d.run.Truth.Subscriptions {
		if !d.reached(sub, byEvents[sub.ID]) {
			unreached++
			continue
		}
		r.Expected++
		p, ok := d.projections[sub.ID]
		if !ok {
			r.offend(d.label(), "%s: provider %s, no projection", sub.ID, sub.Status)
			continue
		}
		var diffs []string
		diff := func(field string, local, remote any) {
			if fmt.Sprint(local) != fmt.Sprint(remote) {
				diffs = append(diffs, fmt.Sprintf("%s %v≠%v", field, local, remote))
			}
		}
		diff("status", p.state.Status, sub.Status)
		diff("cancel_at_period_end", p.state.CancelAtPeriodEnd, sub.CancelAtPeriodEnd)
		diff("current_period_end", unixOf(p.state.CurrentPeriodEnd), sub.CurrentPeriodEnd)
		diff("ended_at", unixOf(p.state.EndedAt), sub.EndedAt)
		if sub.Version != nil {
			var local int64
			if p.version != nil {
				local = *p.version
			}
			diff("version", local, *sub.Version)
		}
		if len(diffs) > 0 {
			r.offend(d.label(), "%s: %s", sub.ID, strings.Join(diffs, ", "))
			continue
		}
		r.Actual++
	}
	if unreached > 0 {
		r.note("%d subscription(s) whose latest state never reached the receiver not counted", unreached)
	}
}

func (d *runData) noCanceledAccess(r *Result) {
	r.checked++
	for _, sub := range d.run.Truth.Subscriptions {
		p, ok := d.projections[sub.ID]
		if !ok || p.status != simulator.StatusCanceled {
			continue
		}
		r.Expected++
		if p.effective || p.access {
			r.offend(d.label(), "%s: canceled (provider %s) with access", sub.ID, sub.Status)
			continue
		}
		r.Actual++
	}
	// Projections of the run's accounts the truth does not know.
	for id, p := range d.projections {
		if p.status == simulator.StatusCanceled && (p.effective || p.access) && !d.knownSubscription(id) {
			r.offend(d.label(), "%s: canceled with access (unknown to the provider)", id)
		}
	}
}

func (d *runData) knownSubscription(id string) bool {
	for _, s := range d.run.Truth.Subscriptions {
		if s.ID == id {
			return true
		}
	}
	return false
}

func (d *runData) accessMatches(r *Result) {
	r.checked++
	byEvents := d.subscriptionEvents()
	for _, sub := range d.run.Truth.Subscriptions {
		if !d.reached(sub, byEvents[sub.ID]) {
			continue
		}
		p, ok := d.projections[sub.ID]
		if !ok {
			continue // projection-matches-provider reports it
		}
		r.Expected++
		if p.effective != sub.Access {
			r.offend(d.label(), "%s (%s, cancel_at_period_end %t): access %t, the rule gives %t",
				sub.ID, sub.Status, sub.CancelAtPeriodEnd, p.effective, sub.Access)
			continue
		}
		r.Actual++
	}
}

func (d *runData) alertPerFeedback(r *Result) {
	r.checked++
	known := map[alertKey]bool{}
	for _, fb := range d.run.Truth.Feedback {
		k := alertKey{fb.Project, fb.ID}
		known[k] = true
		if !d.delivered(fb.EventID) {
			continue
		}
		r.Expected++
		switch n := d.alerts[k]; {
		case n == 0:
			r.offend(d.label(), "%s (%s): no alert", fb.ID, fb.Project)
		case n > 1:
			r.offend(d.label(), "%s (%s): %d alerts", fb.ID, fb.Project, n)
		default:
			if ws, linked := d.links[fb.Project]; linked && d.alertWS[k] != ws {
				r.offend(d.label(), "%s: alert for %s, the project links %s", fb.ID, d.alertWS[k], ws)
				continue
			}
			r.Actual++
		}
	}
	for k, n := range d.alerts {
		if !known[k] {
			r.offend(d.label(), "%s (%s): %d alert(s) for a feedback item the tool never had", k.feedback, k.project, n)
		}
	}
}

func (d *runData) outboxIntents(r *Result) {
	r.checked++
	for _, g := range d.grantOrder {
		if d.wsEmail[g.workspace] == "" {
			continue
		}
		r.Expected++
		key := credits.GrantKey(d.stripe, g.account, d.env, g.invoice) + ":confirmation"
		if _, ok := d.outbox[key]; !ok {
			r.offend(d.label(), "%s: granted to %s (email %s), no confirmation intent", g.invoice, g.workspace, d.wsEmail[g.workspace])
			continue
		}
		r.Actual++
	}
	for _, id := range sortedKeys(d.creditNotes) {
		c := d.creditNotes[id]
		for _, a := range append(slices.Clone(c.reversals), c.voids...) {
			if d.wsEmail[a.workspace] == "" {
				continue
			}
			r.Expected++
			key := credits.CreditReversalKey(d.stripe, a.account, d.env, a.invoice, a.reference) + ":notice"
			if a.operation == ledger.OperationCreditReversalVoid {
				key = credits.CreditReversalVoidKey(d.stripe, a.account, d.env, a.invoice, a.reference) + ":notice"
			}
			if _, ok := d.outbox[key]; !ok {
				r.offend(d.label(), "%s %s: no notice intent", a.reference, a.operation)
				continue
			}
			r.Actual++
		}
	}
	for _, k := range sortedAlertKeys(d.alerts) {
		for _, dest := range d.dests[d.alertWS[k]] {
			r.Expected++
			key := feedback.AlertKey(d.feedback, k.project, d.env, k.feedback) + ":" + dest
			if _, ok := d.outbox[key]; !ok {
				r.offend(d.label(), "%s: alert, no intent for destination %s", k.feedback, dest)
				continue
			}
			r.Actual++
		}
	}
}

func (d *runData) outboxSettled(r *Result) {
	r.checked++
	held := 0
	for _, k := range d.outboxOrder {
		o := d.outbox[k]
		r.Expected++
		switch o.status {
		case keys.OutboxSent:
			r.Actual++
		case keys.OutboxHeld:
			r.Actual++
			held++
		default:
			msg := fmt.Sprintf("%s: %s after %d attempt(s)", k, o.status, o.attempts)
			if o.lastError != "" {
				msg += ", last error: " + clip(o.lastError, 80)
			}
			r.offend(d.label(), "%s", msg)
		}
	}
	if held > 0 {
		r.note("%d row(s) held for review (visible; an operator decides)", held)
	}
}

func (d *runData) emailPerConfirmation(r *Result) {
	if !d.in.CheckEmails {
		d.skip(r, "the email API's record was not given (SMTP, or not checked)")
		return
	}
	r.checked++
	byKey := map[string]int{}
	for _, e := range d.in.Emails {
		byKey[e.IdempotencyKey]++
	}
	mine := map[string]bool{}
	for _, ws := range d.workspaces {
		if e := d.wsEmail[ws]; e != "" {
			mine[e] = true
		}
	}
	for _, k := range d.outboxOrder {
		o := d.outbox[k]
		if o.class != keys.ClassCreditsConfirmation || o.status != keys.OutboxSent {
			continue
		}
		r.Expected++
		if n := byKey[k]; n != 1 {
			r.offend(d.label(), "%s: sent, %d email(s) with its key", k, n)
			continue
		}
		r.Actual++
	}
	for _, e := range d.in.Emails {
		if _, ok := d.outbox[e.IdempotencyKey]; !ok && mine[e.To] {
			r.offend(d.label(), "email %s to %s (key %q): no outbox row", e.ID, e.To, e.IdempotencyKey)
		}
	}
}
