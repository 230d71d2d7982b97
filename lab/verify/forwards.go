package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/soakteam"
)

// Forwards is what a forward route's receiver applied, in the order it
// applied them: the route of the feedback tool's comments
// (feedback.commented, one operation per comment, whatever its events).
type Forwards struct {
	// Route is the route's name.
	Route string
	// Applied lists each operation the receiver applied, once, in order
	// (a resend of an applied operation key is not listed again).
	Applied []Applied
}

// Applied is one operation a receiver applied: the document's operation
// key (its Idempotency-Key), event key and resource.
type Applied struct {
	OperationKey string `json:"operation_key"`
	EventKey     string `json:"event_key"`
	ResourceKind string `json:"resource_kind"`
	ResourceID   string `json:"resource_id"`
}

// applied are the run's applications: those of its feedback projects.
func (d *runData) applied() []Applied {
	var out []Applied
	for _, a := range d.in.Forwards.Applied {
		k, err := keys.ParseEvent(a.EventKey)
		if err == nil && k.Provider == d.feedback && slices.Contains(d.projects, k.Account) {
			out = append(out, a)
		}
	}
	return out
}

// forwardAppliedOnce: each comment that reached the receiver (one of its
// events acknowledged) is applied exactly once, under one operation key
// that no other comment shares; nothing else is applied.
func (d *runData) forwardAppliedOnce(r *Result) {
	if d.in.Forwards == nil {
		d.skip(r, "no forward route ran")
		return
	}
	r.checked++
	commentOf := map[string]string{} // event id → comment id
	for _, fb := range d.run.Truth.Feedback {
		for _, c := range fb.Comments {
			for _, id := range c.EventIDs {
				commentOf[id] = c.ID
			}
		}
	}
	keysOf := map[string][]string{} // comment → operation keys applied
	owner := map[string]string{}    // operation key → comment
	for _, a := range d.applied() {
		k, _ := keys.ParseEvent(a.EventKey)
		c, ok := commentOf[k.EventID]
		if !ok {
			r.offend(d.label(), "%s applied (%s), but it is no comment the tool sent", a.OperationKey, a.EventKey)
			continue
		}
		if prev, ok := owner[a.OperationKey]; ok && prev != c {
			r.offend(d.label(), "%s applied for comments %s and %s", a.OperationKey, prev, c)
		}
		owner[a.OperationKey] = c
		if !slices.Contains(keysOf[c], a.OperationKey) {
			keysOf[c] = append(keysOf[c], a.OperationKey)
		}
	}
	for _, fb := range d.run.Truth.Feedback {
		for _, c := range fb.Comments {
			if !slices.ContainsFunc(c.EventIDs, d.delivered) {
				continue
			}
			r.Expected++
			switch ks := keysOf[c.ID]; len(ks) {
			case 0:
				r.offend(d.label(), "comment %s on %s (events %s): never applied at the receiver", c.ID, fb.ID, strings.Join(c.EventIDs, ", "))
			case 1:
				r.Actual++
			default:
				r.offend(d.label(), "comment %s on %s: applied %d times, under %s", c.ID, fb.ID, len(ks), strings.Join(ks, ", "))
			}
		}
	}
}

// forwardsInOrder: per resource, the receiver applied the forwards in the
// order of their events' inbox rows (the order the intake committed them,
// which the resource's workflow keeps).
func (d *runData) forwardsInOrder(r *Result) {
	if d.in.Forwards == nil {
		d.skip(r, "no forward route ran")
		return
	}
	r.checked++
	last := map[string]struct {
		id  int64
		key string
	}{}
	for _, a := range d.applied() {
		k, _ := keys.ParseEvent(a.EventKey)
		row, ok := d.inbox[inboxKey(k.Provider, k.Account, k.EventID)]
		if !ok {
			continue // forward-applied-once names it
		}
		r.Expected++
		res := a.ResourceKind + "/" + a.ResourceID
		if prev, ok := last[res]; ok && prev.id > row.id {
			r.offend(d.label(), "%s: %s (inbox #%d) applied after %s (inbox #%d)", res, k.EventID, row.id, prev.key, prev.id)
		} else {
			r.Actual++
		}
		last[res] = struct {
			id  int64
			key string
		}{row.id, k.EventID}
	}
}

// loadTeamVotes reads the soak team's table: votes by (project, item).
func (d *runData) loadTeamVotes(ctx context.Context, db store.DB) error {
	d.teamVotes = map[alertKey]int{}
	if !d.in.TeamVotes {
		return nil
	}
	rows, err := db.Query(ctx, `SELECT project, feedback_id, votes FROM `+pgx.Identifier{soakteam.Table}.Sanitize()+
		` WHERE project = ANY($1)`, d.projects)
	if err != nil {
		return fmt.Errorf("the team's table %s: %w", soakteam.Table, err)
	}
	var k alertKey
	var n int
	_, err = pgx.ForEachRow(rows, []any{&k.project, &k.feedback, &n}, func() error {
		d.teamVotes[k] = n
		return nil
	})
	if err != nil {
		return fmt.Errorf("the team's table %s: %w", soakteam.Table, err)
	}
	return nil
}

// teamTableExact: the team's table holds, for each feedback item, the
// number of its votes whose event reached the receiver, and no other row.
func (d *runData) teamTableExact(r *Result) {
	if !d.in.TeamVotes {
		d.skip(r, "no team handler ran")
		return
	}
	r.checked++
	known := map[alertKey]bool{}
	for _, fb := range d.run.Truth.Feedback {
		k := alertKey{fb.Project, fb.ID}
		known[k] = true
		want := 0
		for _, v := range fb.Votes {
			if d.delivered(v.EventID) {
				want++
			}
		}
		r.Expected += int64(want)
		got := d.teamVotes[k]
		if got != want {
			r.offend(d.label(), "%s (%s): %d vote(s) in %s, %d reached the receiver", fb.ID, fb.Project, got, soakteam.Table, want)
			continue
		}
		r.Actual += int64(got)
	}
	for _, k := range sortedAlertKeys(d.teamVotes) {
		if !known[k] {
			r.offend(d.label(), "%s (%s): %d vote(s) in %s for an item the tool never had", k.feedback, k.project, d.teamVotes[k], soakteam.Table)
		}
	}
}

// followUps are the truth's comment and vote events, for a Sent derived
// from the truth alone.
func followUps(fb simulator.TruthFeedback) []Event {
	var out []Event
	for _, c := range fb.Comments {
		for _, id := range c.EventIDs {
			out = append(out, Event{Provider: simulator.ProviderStandard, ID: id, Type: simulator.EventFeedbackCommented,
				Account: fb.Project, ResourceKind: simulator.KindFeedback, ResourceID: fb.ID})
		}
	}
	for _, v := range fb.Votes {
		out = append(out, Event{Provider: simulator.ProviderStandard, ID: v.EventID, Type: simulator.EventFeedbackVoted,
			Account: fb.Project, ResourceKind: simulator.KindFeedback, ResourceID: fb.ID})
	}
	return out
}
