package hookinbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/hookintest"
)

// exampleTB is the testing.TB an Example hands to hookintest (an Example
// has no *testing.T): a failure prints and panics, so the Example fails;
// cleanups run at done. `make test-short` skips Example (it needs
// PostgreSQL).
type exampleTB struct {
	testing.TB // never called: every method hookintest uses is below
	cleanups   []func()
	dirs       []string
}

func exampleT() *exampleTB { return &exampleTB{} }

func (t *exampleTB) Helper()          {}
func (t *exampleTB) Name() string     { return "Example" }
func (t *exampleTB) Failed() bool     { return false }
func (t *exampleTB) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *exampleTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (t *exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (t *exampleTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleTB) FailNow()                          { panic("FailNow") }
func (t *exampleTB) Skip(args ...any) {
	panic(fmt.Sprint(append([]any{"cannot skip an Example: "}, args...)...))
}
func (t *exampleTB) Skipf(format string, args ...any) {
	panic("cannot skip an Example: " + fmt.Sprintf(format, args...))
}
func (t *exampleTB) TempDir() string {
	d, err := os.MkdirTemp("", "hookinbox-example-")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, d)
	return d
}

func (t *exampleTB) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	for _, d := range t.dirs {
		os.RemoveAll(d)
	}
}

// A team's program: its handler, its migrations and their grants, and
// hookinbox's processes and CLI (Main) around them, tried here through
// hookintest as a team's test does: a delivery signed as Stripe signs it,
// admitted by the intake's own path, handled once, a redelivery answered as
// a duplicate, and a replay that changes nothing. examples/provisioning is
// this program in full, with its tests on the whole stack.
func Example() {
	migrations := fstest.MapFS{"0001_accounts.sql": {Data: []byte(
		"CREATE TABLE accounts (session_id text PRIMARY KEY, workspace_id text NOT NULL);\n" +
			"---- create above / drop below ----\nDROP TABLE accounts;\n")}}
	app := hookinbox.New(hookinbox.WithMigrations("provisioning", migrations,
		hookinbox.Table{Name: "accounts", Worker: []string{"SELECT", "INSERT"}}))
	app.HandleFunc("stripe", "checkout.session.completed", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		return ev.Commit(ctx, func(tx *hookinbox.Tx) (hookinbox.Result, error) {
			claim, err := tx.Claim(ctx, hookinbox.Key("provision", ev.Key.Account, ev.Resource.ID))
			if err != nil || !claim.First {
				return hookinbox.Result{Note: "already provisioned"}, err
			}
			_, err = tx.Conn().Exec(ctx, `INSERT INTO accounts (session_id, workspace_id) VALUES ($1, $2)`, ev.Resource.ID, ev.Workspace)
			return hookinbox.Result{Note: "provisioned " + ev.Resource.ID}, err
		})
	}, hookinbox.Name("provisioning"))
	fmt.Println(app.Err())
	// app.Main() would now run the command line: webhook, worker, dev, …

	// In a test: t is the test's *testing.T.
	t := exampleT()
	defer t.done()
	ctx := context.Background()
	h := hookintest.New(t, app)
	h.AddEndpoint(ctx, hookintest.Endpoint{Slug: "stripe", Provider: "stripe", Secret: "whsec_example",
		Account: "acct_team", Workspace: "ws_team"})
	body := []byte(`{"id":"evt_1","object":"event","type":"checkout.session.completed","livemode":false,` +
		`"created":` + strconv.FormatInt(time.Now().Unix(), 10) + `,"data":{"object":{"id":"cs_1","object":"checkout.session"}}}`)
	d := h.Deliver(ctx, "stripe", "whsec_example", nil, body)
	out := h.Handle(ctx, d.Key)
	fmt.Println(d.Outcome, d.Key, out.Status, out.Note)
	fmt.Println(h.Deliver(ctx, "stripe", "whsec_example", nil, body).Outcome)
	h.Replay(ctx, d.Key, "example")
	fmt.Println(h.Handle(ctx, d.Key).Note)
	claim, _ := h.Claim(ctx, hookinbox.Key("provision", "acct_team", "cs_1"))
	fmt.Println("claimed by", claim.By)
	// Output:
	// <nil>
	// accepted stripe/acct_team/test/evt_1 done provisioned cs_1
	// duplicate
	// already provisioned
	// claimed by stripe/acct_team/test/evt_1
}

// Registration mistakes are collected, and Main refuses to start on them.
func ExampleApp_Err() {
	app := hookinbox.New()
	h := hookinbox.HandlerFunc(func(context.Context, *hookinbox.Event) (hookinbox.Result, error) { return hookinbox.Result{}, nil })
	app.Handle("stripe", "invoice.paid", h, hookinbox.Name("credits"))
	app.Handle("stripe", "invoice.paid", h, hookinbox.Name("billing"))
	app.Handle("acme", "order.created", h)
	fmt.Println(app.Err())
	// Output:
	// Handle(stripe, invoice.paid): route conflict: stripe invoice.paid is taken by credits and billing
	// Handle(acme, order.created): unknown provider "acme" (register it WithProvider)
}

// A family of types by prefix, serialized on another resource than the
// event's own, with a retry budget of its own.
func ExampleSerializeOn() {
	app := hookinbox.New()
	app.HandleFunc("stripe", "credit_note.*", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		// ev.Resource is the invoice; ev.ObjectID the credit note.
		return hookinbox.Result{}, nil
	}, hookinbox.Name("credit_notes"), hookinbox.SerializeOn("invoice", "data.object.invoice"), hookinbox.RetryBudget(20))
	fmt.Println(app.Err())
	// Output: <nil>
}

// Business keys are joined from escaped parts, so an id holding a '/'
// cannot forge another key.
func ExampleKey() {
	fmt.Println(hookinbox.Key("credit-grant", "stripe", "acct_1", "live", "in_1", "initial-credit-grant"))
	fmt.Println(hookinbox.Key("provision", "cs_1/../cs_2"))
	// Output:
	// credit-grant/stripe/acct_1/live/in_1/initial-credit-grant
	// provision/cs_1%2F..%2Fcs_2
}

// An email intent, recorded in the effect's transaction with tx.Send and
// sent after the commit; its operation key makes it once.
func ExampleEmail() {
	in := hookinbox.Email("provision/cs_1:welcome", "provisioning_welcome", "ada@example.com", "Welcome", "Your account is ready.")
	fmt.Println(in.Kind, in.Destination, in.OperationKey)
	// Output: email ada@example.com provision/cs_1:welcome
}

// A projection that never goes backwards: a versioned snapshot is written
// only when newer (Tx.WriteNewer), a fetched one only if nobody wrote since
// it was read (Tx.WriteFenced); a canceled row stays canceled, a deletion's
// tombstone stays.
func ExampleProjection() {
	subscriptions := hookinbox.Projection{
		Table:          "subscription_projection",
		Key:            []string{"provider", "source_account", "environment", "resource_id"},
		TouchedColumn:  "updated_at",
		Sticky:         []string{"deleted"},
		TerminalColumn: "status",
		TerminalValue:  "canceled",
	}
	fmt.Println(subscriptions.Table, subscriptions.Key)
	// Output: subscription_projection [provider source_account environment resource_id]
}

// The errors a handler returns: Permanent fails the event at once, Wait
// keeps it pending until another fact comes, anything else is retried.
func ExamplePermanent() {
	bad := hookinbox.Permanent(errors.New("the invoice belongs to another workspace"))
	later := hookinbox.Wait("waiting for the invoice's grant", nil)
	retried := fmt.Errorf("provider answered 503")
	fmt.Println(hookinbox.IsPermanent(bad), hookinbox.IsPermanent(later), hookinbox.IsPermanent(retried))
	// Output: true false false
}

// A handler's wait for another fact may last up to its WaitLimit.
func ExampleWaitLimit() {
	app := hookinbox.New()
	app.HandleFunc("stripe", "credit_note.created", func(ctx context.Context, ev *hookinbox.Event) (hookinbox.Result, error) {
		return hookinbox.Result{}, hookinbox.Wait("waiting for the invoice's grant", nil)
	}, hookinbox.WaitLimit(72*time.Hour))
	fmt.Println(app.Err())
	// Output: <nil>
}

// Migrations are files at the root of the FS given.
func ExampleWithMigrations() {
	folder := fstest.MapFS{"migrations/0001_a.sql": {Data: []byte("SELECT 1;")}}
	app := hookinbox.New(hookinbox.WithMigrations("team", folder))
	fmt.Println(app.Err())
	// Output: WithMigrations("team"): no .sql file at the root of the files (an embed.FS of a folder wants fs.Sub(files, "migrations"))
}
