// Package provisioning is a team's own business on hookinbox, kept in the
// team's own module: every paid Stripe Checkout session provisions one
// account, in a table of the team's own migration, and sends one welcome
// email through hookinbox's outbox, however many events mention the
// session (checkout.session.completed, then
// checkout.session.async_payment_succeeded for delayed payment methods,
// redeliveries, replays). It imports only the public API.
package provisioning

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintype"
)

//go:embed migrations/*.sql
var files embed.FS

// Migrations are the team's own migrations (the folder's files).
func Migrations() fs.FS {
	sub, err := fs.Sub(files, "migrations")
	if err != nil {
		panic(err) // the folder is embedded above
	}
	return sub
}

// Name is the handler's name (its metrics label).
const Name = "provisioning"

// ClassWelcome is the outbox class of the welcome email.
const ClassWelcome = "provisioning_welcome"

// Table is the team's own table and what hookinbox's roles may do with it:
// the worker inserts (handlers run there) and reads back, the operator
// reads, never the email (personal data).
var Table = hookinbox.Table{Name: "provisioned_accounts", Worker: []string{"SELECT", "INSERT"}, Private: []string{"email"}}

// New is the team's whole program: hookinbox's processes and CLI with the
// provisioning handler and its migrations.
func New() *hookinbox.App {
	app := hookinbox.New(hookinbox.WithMigrations("provisioning", Migrations(), Table))
	Register(app)
	return app
}

// Register adds the handler to app.
func Register(app *hookinbox.App) {
	// A welcome email twice is better than none.
	app.OutboxClass(ClassWelcome, hookinbox.AcceptDuplicate)
	for _, typ := range []string{"checkout.session.completed", "checkout.session.async_payment_succeeded"} {
		app.Handle("stripe", typ, Provisioner{}, hookinbox.Name(Name))
	}
}

// Key is the business key of a session's account.
func Key(ev *hookinbox.Event, session string) string {
	return hookinbox.Key("provision", ev.Key.Provider, ev.Key.Account, ev.Key.Environment, session)
}

// session is what the handler reads of a Checkout session.
type session struct {
	ID              string  `json:"id"`
	Object          string  `json:"object"`
	Status          string  `json:"status"`
	PaymentStatus   string  `json:"payment_status"`
	Livemode        bool    `json:"livemode"`
	Customer        *string `json:"customer"`
	CustomerDetails struct {
		Email string `json:"email"`
	} `json:"customer_details"`
}

// Provisioner provisions one account per paid session.
type Provisioner struct{}

// Handle trusts the provider, not the event: the session is fetched and
// must be complete and paid (an unpaid one waits for its
// async_payment_succeeded). Then the claim of the session's business key,
// the account row, the welcome email's intent and the inbox row's
// completion commit in one transaction.
func (Provisioner) Handle(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
	raw, err := ev.Fetch(ctx)
	if err != nil {
		return hookinbox.Result{}, err
	}
	var s session
	if err := json.Unmarshal(raw, &s); err != nil {
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("checkout session %s: %w", ev.Resource.ID, err))
	}
	switch {
	case s.ID != ev.Resource.ID:
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("stripe answered session %q for %q", s.ID, ev.Resource.ID))
	case s.Livemode != (ev.Key.Environment == hookintype.Live):
		return hookinbox.Result{}, hookinbox.Permanent(fmt.Errorf("session %s livemode=%t on a %s endpoint", s.ID, s.Livemode, ev.Key.Environment))
	case s.Status != "complete" || (s.PaymentStatus != "paid" && s.PaymentStatus != "no_payment_required"):
		// Not paid (yet): a delayed payment method; its
		// checkout.session.async_payment_succeeded provisions it.
		return hookinbox.Result{Ignored: true, Note: fmt.Sprintf("session %s is %s/%s: nothing to provision", s.ID, s.Status, s.PaymentStatus)}, nil
	}
	key := Key(ev, s.ID)
	res, err := ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
		claim, err := tx.Claim(ctx, key)
		if err != nil {
			return hookinbox.Result{}, err
		}
		if !claim.First {
			return hookinbox.Result{Note: "already provisioned by " + claim.By.String()}, nil
		}
		var customer string
		if s.Customer != nil {
			customer = *s.Customer
		}
		if _, err := tx.Conn().Exec(ctx, `
			INSERT INTO provisioned_accounts (session_id, workspace_id, stripe_customer, email, event_key)
			VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), $5)`,
			s.ID, ev.Workspace, customer, s.CustomerDetails.Email, ev.Key.String()); err != nil {
			return hookinbox.Result{}, err
		}
		res := hookinbox.Result{Note: "provisioned an account for session " + s.ID}
		if s.CustomerDetails.Email == "" {
			res.Note += "; no welcome email: the session has no email"
			return res, nil
		}
		_, err = tx.Send(ctx, hookinbox.Email(key+":welcome", ClassWelcome, s.CustomerDetails.Email,
			"Welcome aboard", "Your account is ready. Thank you for your purchase."))
		return res, err
	})
	res.BusinessKey = key
	return res, err
}
