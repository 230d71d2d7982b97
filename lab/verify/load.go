package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox/domains/feedback"
	"github.com/hookinbox/hookinbox/domains/ledger"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/records"
	"github.com/hookinbox/hookinbox/lab/simulator"
)

type inboxRow struct {
	id                         int64
	provider, account, eventID string
	status                     string
	attempts                   int
	lastError                  string
	bodySHA256                 []byte
	origin                     string
	kind, resource             string
}

type grantRow struct {
	account, invoice, operation, workspace string
	credits, amount                        int64
	currency                               string
}

type projectionRow struct {
	account, id string
	version     *int64
	state       records.SubscriptionState
	status      string
	deleted     bool
	access      bool
	effective   bool
}

type outboxRow struct {
	key, class, status string
	attempts           int
	lastError          string
	workspace          string
}

type quarantineRow struct {
	provider, account, eventID, reason, endpoint string
}

type alertKey struct{ project, feedback string }

// adjustmentRow is one credit_adjustments row of a credit note.
type adjustmentRow struct {
	account, invoice, reference, operation, workspace, decision string
	requested, applied                                          int64
}

// creditNoteRows are a credit note's reversal and void, as recorded.
type creditNoteRows struct {
	reversals, voids []adjustmentRow
}

// runData is one run's truth, what its sender did and the database rows in
// its scope.
type runData struct {
	in       Input
	run      Run
	sent     *Sent
	env      string
	stripe   string
	feedback string

	accounts, projects []string
	links              map[string]string // account → workspace
	workspaces         []string
	dropped            map[string]bool
	unacked            map[string]simulator.TruthEvent

	inbox       map[string]inboxRow // inboxKey → row
	inboxOrder  []string
	grants      map[string][]grantRow // invoice id → grants
	grantOrder  []grantRow
	projections map[string]projectionRow // subscription id → row
	alerts      map[alertKey]int
	alertWS     map[alertKey]string
	wsBalance   map[string]int64
	wsEmail     map[string]string
	wsGrants    map[string]int64
	wsAdjusted  map[string]int64           // workspace → Σ applied of its adjustments
	creditNotes map[string]*creditNoteRows // credit note id → rows
	dests       map[string][]string        // workspace → enabled destination names
	teamVotes   map[alertKey]int           // the team's table: (project, item) → votes
	outbox      map[string]outboxRow
	outboxOrder []string
	quarantine  []quarantineRow
}

func inboxKey(provider, account, eventID string) string {
	return provider + "\x00" + account + "\x00" + eventID
}

func load(ctx context.Context, db store.DB, run Run, in Input) (*runData, error) {
	d := &runData{in: in, run: run, stripe: run.StripeProvider, feedback: run.FeedbackProvider, env: run.Environment}
	if d.stripe == "" {
		d.stripe = simulator.ProviderStripe
	}
	if d.feedback == "" {
		d.feedback = simulator.ProviderStandard
	}
	if d.env == "" {
		d.env = keys.EnvTest
		if run.Truth.Livemode {
			d.env = keys.EnvLive
		}
	}
	d.sent = run.Sent
	if d.sent == nil {
		d.sent = sentFromTruth(run.Truth)
	}
	d.accounts = nonNil(run.Truth.Accounts)
	d.projects = nonNil(run.Truth.Projects)
	d.dropped = map[string]bool{}
	for _, e := range run.Truth.DroppedEvents {
		d.dropped[e.ID] = true
	}
	d.unacked = map[string]simulator.TruthEvent{}
	for _, e := range run.Truth.UnackedEvents {
		d.unacked[e.ID] = e
	}
	steps := []func(context.Context, store.DB) error{
		d.loadLinks, d.loadInbox, d.loadGrants, d.loadProjections, d.loadAlerts,
		d.loadWorkspaces, d.loadAdjustments, d.loadOutbox, d.loadQuarantine, d.loadTeamVotes,
	}
	for _, step := range steps {
		if err := step(ctx, db); err != nil {
			return nil, fmt.Errorf("verify %s: %w", orDefault(run.Label, "run"), err)
		}
	}
	return d, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (d *runData) loadLinks(ctx context.Context, db store.DB) error {
	d.links = map[string]string{}
	rows, err := db.Query(ctx, `
		SELECT account, workspace_id FROM account_links WHERE account = ANY($1) ORDER BY endpoint_slug`,
		append(slices.Clone(d.accounts), d.projects...))
	if err != nil {
		return fmt.Errorf("account links: %w", err)
	}
	var account, ws string
	_, err = pgx.ForEachRow(rows, []any{&account, &ws}, func() error {
		if _, ok := d.links[account]; !ok {
			d.links[account] = ws
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("account links: %w", err)
	}
	d.workspaces = slices.Clone(d.run.Workspaces)
	if len(d.workspaces) == 0 {
		for _, a := range append(slices.Clone(d.accounts), d.projects...) {
			if ws, ok := d.links[a]; ok && !slices.Contains(d.workspaces, ws) {
				d.workspaces = append(d.workspaces, ws)
			}
		}
	}
	return nil
}

func (d *runData) loadInbox(ctx context.Context, db store.DB) error {
	d.inbox = map[string]inboxRow{}
	rows, err := db.Query(ctx, `
		SELECT id, provider, source_account, event_id, status, attempts, coalesce(last_error, ''), body_sha256, origin,
		       resource_kind, resource_id
		  FROM webhook_inbox
		 WHERE environment = $1
		   AND ((provider = $2 AND source_account = ANY($3)) OR (provider = $4 AND source_account = ANY($5)))
		 ORDER BY id`, d.env, d.stripe, d.accounts, d.feedback, d.projects)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	var r inboxRow
	_, err = pgx.ForEachRow(rows, []any{&r.id, &r.provider, &r.account, &r.eventID, &r.status, &r.attempts, &r.lastError,
		&r.bodySHA256, &r.origin, &r.kind, &r.resource}, func() error {
		k := inboxKey(r.provider, r.account, r.eventID)
		r.bodySHA256 = slices.Clone(r.bodySHA256)
		d.inbox[k] = r
		d.inboxOrder = append(d.inboxOrder, k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	return nil
}

func (d *runData) loadGrants(ctx context.Context, db store.DB) error {
	d.grants = map[string][]grantRow{}
	rows, err := db.Query(ctx, `
		SELECT source_account, invoice_id, operation, workspace_id, credits, amount_paid, currency
		  FROM credit_grants
		 WHERE provider = $1 AND environment = $2 AND source_account = ANY($3)
		 ORDER BY id`, d.stripe, d.env, d.accounts)
	if err != nil {
		return fmt.Errorf("credit grants: %w", err)
	}
	var g grantRow
	_, err = pgx.ForEachRow(rows, []any{&g.account, &g.invoice, &g.operation, &g.workspace, &g.credits, &g.amount, &g.currency}, func() error {
		d.grants[g.invoice] = append(d.grants[g.invoice], g)
		d.grantOrder = append(d.grantOrder, g)
		return nil
	})
	if err != nil {
		return fmt.Errorf("credit grants: %w", err)
	}
	return nil
}

func (d *runData) loadProjections(ctx context.Context, db store.DB) error {
	d.projections = map[string]projectionRow{}
	rows, err := db.Query(ctx, `
		SELECT source_account, resource_id, provider_version, state, status, deleted, access,
		       access AND NOT deleted AND (access_ends_at IS NULL OR access_ends_at > now())
		  FROM subscription_projection
		 WHERE provider = $1 AND environment = $2 AND source_account = ANY($3)`, d.stripe, d.env, d.accounts)
	if err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	var p projectionRow
	var state []byte
	_, err = pgx.ForEachRow(rows, []any{&p.account, &p.id, &p.version, &state, &p.status, &p.deleted, &p.access, &p.effective}, func() error {
		p.state = records.SubscriptionState{}
		if p.version != nil {
			v := *p.version
			p.version = &v
		}
		if err := json.Unmarshal(state, &p.state); err != nil {
			return fmt.Errorf("projection %s state: %w", p.id, err)
		}
		d.projections[p.id] = p
		p.version = nil // the next row scans into a fresh pointer
		return nil
	})
	if err != nil {
		return fmt.Errorf("projections: %w", err)
	}
	return nil
}

func (d *runData) loadAlerts(ctx context.Context, db store.DB) error {
	d.alerts, d.alertWS = map[alertKey]int{}, map[alertKey]string{}
	rows, err := db.Query(ctx, `
		SELECT project, feedback_id, min(workspace_id), count(*)
		  FROM feedback_alerts
		 WHERE provider = $1 AND environment = $2 AND project = ANY($3) AND operation = $4
		 GROUP BY project, feedback_id`, d.feedback, d.env, d.projects, feedback.OperationInitialAlert)
	if err != nil {
		return fmt.Errorf("feedback alerts: %w", err)
	}
	var k alertKey
	var ws string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&k.project, &k.feedback, &ws, &n}, func() error {
		d.alerts[k], d.alertWS[k] = n, ws
		return nil
	})
	if err != nil {
		return fmt.Errorf("feedback alerts: %w", err)
	}
	return nil
}

func (d *runData) loadWorkspaces(ctx context.Context, db store.DB) error {
	for _, gs := range d.grants {
		for _, g := range gs {
			if !slices.Contains(d.workspaces, g.workspace) {
				d.workspaces = append(d.workspaces, g.workspace)
			}
		}
	}
	d.wsBalance, d.wsEmail, d.wsGrants, d.dests = map[string]int64{}, map[string]string{}, map[string]int64{}, map[string][]string{}
	rows, err := db.Query(ctx, `SELECT id, credits_balance, coalesce(email, '') FROM workspaces WHERE id = ANY($1)`, d.workspaces)
	if err != nil {
		return fmt.Errorf("workspaces: %w", err)
	}
	var id, email string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n, &email}, func() error {
		d.wsBalance[id], d.wsEmail[id] = n, email
		return nil
	}); err != nil {
		return fmt.Errorf("workspaces: %w", err)
	}
	rows, err = db.Query(ctx, `SELECT workspace_id, count(*) FROM credit_grants WHERE workspace_id = ANY($1) GROUP BY 1`, d.workspaces)
	if err != nil {
		return fmt.Errorf("grants per workspace: %w", err)
	}
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		d.wsGrants[id] = n
		return nil
	}); err != nil {
		return fmt.Errorf("grants per workspace: %w", err)
	}
	rows, err = db.Query(ctx, `SELECT workspace_id, name FROM team_destinations WHERE enabled AND workspace_id = ANY($1) ORDER BY name`, d.workspaces)
	if err != nil {
		return fmt.Errorf("destinations: %w", err)
	}
	var name string
	if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
		d.dests[id] = append(d.dests[id], name)
		return nil
	}); err != nil {
		return fmt.Errorf("destinations: %w", err)
	}
	return nil
}

func (d *runData) loadAdjustments(ctx context.Context, db store.DB) error {
	d.wsAdjusted, d.creditNotes = map[string]int64{}, map[string]*creditNoteRows{}
	rows, err := db.Query(ctx, `SELECT workspace_id, sum(applied) FROM credit_adjustments WHERE workspace_id = ANY($1) GROUP BY 1`, d.workspaces)
	if err != nil {
		return fmt.Errorf("adjustments per workspace: %w", err)
	}
	var id string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		d.wsAdjusted[id] = n
		return nil
	}); err != nil {
		return fmt.Errorf("adjustments per workspace: %w", err)
	}
	rows, err = db.Query(ctx, `
		SELECT source_account, invoice_id, reference, operation, workspace_id, decision, requested, applied
		  FROM credit_adjustments
		 WHERE provider = $1 AND environment = $2 AND source_account = ANY($3)
		 ORDER BY id`, d.stripe, d.env, d.accounts)
	if err != nil {
		return fmt.Errorf("credit adjustments: %w", err)
	}
	var a adjustmentRow
	_, err = pgx.ForEachRow(rows, []any{&a.account, &a.invoice, &a.reference, &a.operation, &a.workspace, &a.decision, &a.requested, &a.applied}, func() error {
		c := d.creditNotes[a.reference]
		if c == nil {
			c = &creditNoteRows{}
			d.creditNotes[a.reference] = c
		}
		if a.operation == ledger.OperationCreditReversalVoid {
			c.voids = append(c.voids, a)
		} else {
			c.reversals = append(c.reversals, a)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("credit adjustments: %w", err)
	}
	return nil
}

func (d *runData) loadOutbox(ctx context.Context, db store.DB) error {
	d.outbox = map[string]outboxRow{}
	rows, err := db.Query(ctx, `
		SELECT operation_key, class, status, attempts, coalesce(last_error, ''), workspace_id
		  FROM outbox WHERE workspace_id = ANY($1) ORDER BY id`, d.workspaces)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	var o outboxRow
	_, err = pgx.ForEachRow(rows, []any{&o.key, &o.class, &o.status, &o.attempts, &o.lastError, &o.workspace}, func() error {
		d.outbox[o.key] = o
		d.outboxOrder = append(d.outboxOrder, o.key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

func (d *runData) loadQuarantine(ctx context.Context, db store.DB) error {
	rows, err := db.Query(ctx, `
		SELECT provider, coalesce(source_account, ''), coalesce(event_id, ''), reason, endpoint_slug
		  FROM inbox_quarantine
		 WHERE (provider = $1 AND source_account = ANY($2)) OR (provider = $3 AND source_account = ANY($4))
		 ORDER BY id`, d.stripe, d.accounts, d.feedback, d.projects)
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	var q quarantineRow
	_, err = pgx.ForEachRow(rows, []any{&q.provider, &q.account, &q.eventID, &q.reason, &q.endpoint}, func() error {
		d.quarantine = append(d.quarantine, q)
		return nil
	})
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	return nil
}
