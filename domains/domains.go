// Package domains registers hookinbox's built-in business domains on an
// App: credits and credit notes (domains/credits, with their ledger in
// domains/ledger), the subscription projection (domains/subscriptions) and
// feedback alerts (domains/feedback). Each is written on the public API
// alone, as a team's own would be; the shipped hookinbox binary is
// hookinbox.New() plus Register.
package domains

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/domains/credits"
	"github.com/hookinbox/hookinbox/domains/feedback"
	"github.com/hookinbox/hookinbox/domains/subscriptions"
)

// Options configure the built-in domains. The zero value is the default.
type Options struct {
	Credits credits.Options
	// Logger is the subscriptions domain's (nil: slog.Default()).
	Logger *slog.Logger
}

// OptionsFromEnv reads the domains' settings from the environment:
// HOOKINBOX_CREDITS_PER_INVOICE (default 100),
// HOOKINBOX_NEGATIVE_BALANCE_POLICY (allow, clamp or hold; default allow)
// and HOOKINBOX_CREDIT_NOTE_WAIT (a duration; default 72h). A value that
// does not parse is an error naming the variable.
func OptionsFromEnv() (Options, error) {
	var o Options
	if v, ok := os.LookupEnv("HOOKINBOX_CREDITS_PER_INVOICE"); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("HOOKINBOX_CREDITS_PER_INVOICE=%q: a positive whole number", v)
		}
		o.Credits.PerInvoice = n
	}
	o.Credits.Policy = os.Getenv("HOOKINBOX_NEGATIVE_BALANCE_POLICY")
	if v, ok := os.LookupEnv("HOOKINBOX_CREDIT_NOTE_WAIT"); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("HOOKINBOX_CREDIT_NOTE_WAIT=%q: a positive duration (72h)", v)
		}
		o.Credits.CreditNoteWait = d
	}
	return o, nil
}

// Register adds every built-in domain to app.
func Register(app *hookinbox.App, o Options) error {
	if err := credits.Register(app, o.Credits); err != nil {
		return err
	}
	subscriptions.Register(app, o.Logger)
	feedback.Register(app)
	return nil
}

// New is the shipped hookinbox app: hookinbox.New(opts...) with every
// built-in domain, configured from the environment.
func New(opts ...hookinbox.Option) (*hookinbox.App, error) {
	o, err := OptionsFromEnv()
	if err != nil {
		return nil, err
	}
	app := hookinbox.New(opts...)
	if err := Register(app, o); err != nil {
		return nil, err
	}
	return app, app.Err()
}
