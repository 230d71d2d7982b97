package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/samples"
)

// `hookinbox send`: realistic deliveries, signed with the endpoint's own
// secret exactly as its provider signs them, posted to a running intake,
// then what hookinbox made of each, read back through ops.

type sendOptions struct {
	slug, eventType, payloadFile string
	account, url                 string
	count                        int
	duplicateRate                float64
	live                         bool
	wait                         time.Duration
	by, reason                   string
	format                       cli.OutputFormat
	// client posts the deliveries (tests may set one; default 15s timeout).
	client *http.Client
}

// maxSendCount bounds --count: a local tool, not a load generator
// (hookinbox-lab bench is that).
const maxSendCount = 10000

func newSendCmd() *cobra.Command {
	o := sendOptions{count: 1, wait: 5 * time.Second, format: "table"}
	cmd := &cobra.Command{
		Use:   "send --endpoint SLUG --event TYPE [--payload FILE] [--count N] [--duplicate-rate R]",
		Short: "Send realistic deliveries, signed as the provider signs them, to a running intake and show what hookinbox did",
		Long: `Send an endpoint realistic deliveries of an event type, each signed with the endpoint's own
active secret exactly as its provider signs it, to a running intake (--url, else the intake of
HOOKINBOX_HTTP_ADDR, by default the local stack's http://127.0.0.1:8080), then print what hookinbox
did with each: the HTTP answer, the inbox outcome (pending, done, ignored, quarantined, duplicate)
and the event's page in the console. For local and staging work: a live endpoint is refused
unless --live is given.

The built-in payloads are real ones (docs/providers.md, "hookinbox send"):
  stripe    invoice.paid, customer.subscription.updated, checkout.session.completed,
            credit_note.created (stripe-mock's fixtures as events; Stripe-Signature)
  github    push, issues.opened, pull_request.opened, ping (@octokit/webhooks-examples;
            X-Hub-Signature-256, X-GitHub-Event, X-GitHub-Delivery)
  standard  feedback.created (our own; webhook-id, webhook-timestamp, webhook-signature)
  shopify   orders/create (our own; X-Shopify-Hmac-Sha256, topic, event id, shop)
--payload FILE sends your own JSON body instead, for any --event type.

Each event gets fresh ids (Stripe's evt_, GitHub's delivery GUID, the webhook-id, Shopify's event
id) and, where the provider signs the body only (GitHub, Shopify), a body of its own (a new commit,
issue, pull request, hook or order), so --count N sends N distinct events. --duplicate-rate R
sends that fraction of them a second time, the same id and the same body (re-signed at the time of
sending, as a provider's retry is), to show them answered 2xx and stored once.

The deliveries name the endpoint's own account when it is linked, else its first linked account
(--account picks another linked one): Stripe's account (only for a connected account), GitHub's
installation or owner, the endpoint's Standard Webhooks --account-path, Shopify's shop. Stripe's
livemode follows the endpoint's environment.

Reading the signing secret is audited (endpoint_secret_read, by --by); the secret is never printed.
Exit status 2 for a usage error (unknown endpoint or type, a bad rate, a live endpoint without
--live), 1 when a delivery was not answered 2xx.`,
		Example: `  hookinbox send --endpoint stripe-sim --event invoice.paid
  hookinbox send --endpoint stripe-sim --event invoice.paid --count 10 --duplicate-rate 0.3
  hookinbox send --endpoint gh --event issues.opened --account octo-org
  hookinbox send --endpoint feedback-sim --event feedback.created --payload my-feedback.json
  hookinbox send --endpoint shop --event orders/create --url http://staging-intake.internal:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return withStoreOps(cmd, func(env opsEnv) error { return runSend(cmd.Context(), env, o) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.slug, "endpoint", "", "endpoint slug (required)")
	f.StringVar(&o.eventType, "event", "", "event type, e.g. invoice.paid, issues.opened, orders/create (required)")
	f.StringVar(&o.payloadFile, "payload", "", "send this JSON file's body instead of the built-in one")
	f.IntVar(&o.count, "count", o.count, "how many distinct events to send")
	f.Float64Var(&o.duplicateRate, "duplicate-rate", 0, "fraction of the events sent again as exact duplicates (0 to 1)")
	f.StringVar(&o.account, "account", "", "the linked source account the deliveries name (default: the endpoint's own, else its first linked)")
	f.StringVar(&o.url, "url", "", "the intake's base URL (default: HOOKINBOX_HTTP_ADDR's, http://127.0.0.1:8080 for the local stack)")
	f.BoolVar(&o.live, "live", false, "allow a live endpoint")
	f.DurationVar(&o.wait, "wait", o.wait, "how long to wait for pending events to be handled before printing (0: do not wait)")
	f.StringVar(&o.by, "by", defaultActor(), "who (recorded in the audit of the secret's read)")
	f.StringVar(&o.reason, "reason", "", "why (recorded in the audit)")
	f.Var(&o.format, "output", "table or json")
	_ = cmd.MarkFlagRequired("endpoint")
	_ = cmd.MarkFlagRequired("event")
	return cmd
}

// validate checks the flags that need no database.
func (o *sendOptions) validate() error {
	switch {
	case strings.TrimSpace(o.slug) == "":
		return cli.Usagef("--endpoint must not be empty")
	case strings.TrimSpace(o.eventType) == "":
		return cli.Usagef("--event must not be empty")
	case o.count < 1 || o.count > maxSendCount:
		return cli.Usagef("--count must be between 1 and %d (got %d)", maxSendCount, o.count)
	case math.IsNaN(o.duplicateRate) || o.duplicateRate < 0 || o.duplicateRate > 1:
		return cli.Usagef("--duplicate-rate must be a fraction between 0 and 1 (got %v)", o.duplicateRate)
	case o.wait < 0:
		return cli.Usagef("--wait must not be negative")
	case strings.TrimSpace(o.by) == "":
		return cli.Usagef("--by must not be empty")
	}
	if o.url != "" {
		u, err := url.Parse(o.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			return cli.Usagef("--url must be the intake's base URL, e.g. http://127.0.0.1:8080 (got %q)", o.url)
		}
	}
	return nil
}

// duplicated reports whether the i-th event (from 0) of a run is sent
// again at rate: spread evenly, floor(count × rate) of them in all.
func duplicated(i int, rate float64) bool {
	const eps = 1e-9
	return math.Floor(float64(i+1)*rate+eps) > math.Floor(float64(i)*rate+eps)
}

// intakeBaseURL is where the intake of addr (HOOKINBOX_HTTP_ADDR) is
// reached from this machine: a wildcard or empty host is loopback.
func intakeBaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// sentDelivery is one POST and what became of it.
type sentDelivery struct {
	// N is the event's number in the run (from 1); Duplicate marks its
	// second delivery.
	N         int    `json:"n"`
	Duplicate bool   `json:"duplicate,omitempty"`
	EventID   string `json:"event_id"`
	EventKey  string `json:"event_key,omitempty"`
	HTTP      int    `json:"http_status"`
	// Answer is the intake's: accepted, ignored, duplicate, quarantined,
	// or its error.
	Answer string `json:"answer"`
	Reason string `json:"reason,omitempty"`
	// Outcome is what the inbox says now: pending, done, ignored, failed,
	// exhausted; quarantined; duplicate; or refused.
	Outcome string `json:"outcome"`
	// Detail is what handling did (a done row's note) or its last error.
	Detail  string `json:"detail,omitempty"`
	Console string `json:"console,omitempty"`
}

// sendReport is the whole run.
type sendReport struct {
	Endpoint   string         `json:"endpoint"`
	Provider   string         `json:"provider"`
	EventType  string         `json:"event_type"`
	URL        string         `json:"url"`
	Account    string         `json:"account"`
	Workspace  string         `json:"workspace"`
	SecretID   int64          `json:"secret_id"`
	AuditID    int64          `json:"operator_action"`
	Events     int            `json:"events"`
	Duplicates int            `json:"duplicates"`
	Deliveries []sentDelivery `json:"deliveries"`
	// Stored counts the inbox rows of the run's events by status.
	Stored map[string]int `json:"stored"`
}

// intakeAnswer is the intake's JSON answer.
type intakeAnswer struct {
	Status string `json:"status"`
	Event  string `json:"event"`
	Detail string `json:"detail"`
	Reason string `json:"reason"`
	Error  string `json:"error"`
}

func runSend(ctx context.Context, env opsEnv, o sendOptions) error {
	svc := env.svc
	view, err := svc.ShowEndpoint(ctx, o.slug)
	if ops.IsNotFound(err) {
		return cli.Usagef("unknown endpoint %q ('hookinbox endpoints list' shows them)", o.slug)
	}
	if err != nil {
		return err
	}
	if view.Environment == keys.EnvLive && !o.live {
		return cli.Usagef("endpoint %s is a live endpoint: sending made-up events is for local and staging work "+
			"(give --live to send to it anyway)", view.Slug)
	}
	tmpl, err := sendTemplate(view.Provider, o)
	if err != nil {
		return err
	}
	own, _ := view.OwnAccount()
	target := samples.Endpoint{Slug: view.Slug, Provider: view.Provider, Environment: view.Environment, Settings: view.Settings,
		OwnAccount: own, Links: view.Links}
	account, err := target.ChooseAccount(o.account)
	if err != nil {
		if o.account != "" {
			return cli.UsageError{Msg: err.Error()}
		}
		return err
	}
	base := strings.TrimRight(o.url, "/")
	if base == "" {
		base = intakeBaseURL(svc.Config.HTTPAddr)
	}
	postURL := base + "/webhooks/" + url.PathEscape(view.Slug)

	key, err := svc.SigningKey(ctx, ops.Actor{Name: o.by}, ops.SigningKeyRequest{Slug: view.Slug, Account: account,
		AllowLive: o.live, Reason: o.reason})
	if err != nil {
		return asUsage(err)
	}
	rep := &sendReport{Endpoint: view.Slug, Provider: view.Provider, EventType: tmpl.Type, URL: postURL, Account: account,
		Workspace: key.Workspace, SecretID: key.SecretID, AuditID: key.ActionID, Stored: map[string]int{}}
	client := o.client
	if client == nil {
		client = sendClient()
	}
	bodies := map[string]int{}
	var sendErr error
send:
	for i := range o.count {
		d, err := tmpl.Delivery(target, account, time.Now())
		if err != nil {
			return err
		}
		if n, seen := bodies[string(d.Body)]; seen && signsBodyOnly(view.Provider) {
			fmt.Fprintf(env.errOut, "warning: event %d has the same body as event %d: %s signs the body only, so hookinbox "+
				"takes it for a replay of that event (a payload of your own needs a field that differs)\n", i+1, n, view.Provider)
		} else if !seen {
			bodies[string(d.Body)] = i + 1
		}
		copies := 1
		if duplicated(i, o.duplicateRate) {
			copies = 2
			rep.Duplicates++
		}
		for c := range copies {
			sd, err := post(ctx, client, postURL, key, d)
			sd.N, sd.Duplicate = i+1, c > 0
			if err != nil {
				sendErr = err
				break send
			}
			rep.Deliveries = append(rep.Deliveries, sd)
		}
	}
	for _, d := range rep.Deliveries {
		rep.Events = max(rep.Events, d.N)
	}
	settle(ctx, svc, rep, o.wait)
	describeOutcomes(ctx, svc, rep)
	if o.format == "json" {
		if err := cli.Render(env.out, o.format, rep, nil, nil); err != nil {
			return err
		}
	} else {
		printSendReport(env.out, rep)
	}
	if sendErr != nil {
		return fmt.Errorf("%w (is the intake running? 'make run' starts it; --url or HOOKINBOX_HTTP_ADDR say where it is)", sendErr)
	}
	refused := 0
	for _, d := range rep.Deliveries {
		if d.HTTP/100 != 2 {
			refused++
		}
	}
	if refused > 0 {
		return fmt.Errorf("%d of %d deliveries were not answered 2xx (above)", refused, len(rep.Deliveries))
	}
	return nil
}

// signsBodyOnly: the provider's signature covers neither the event id nor
// a time, so the intake deduplicates its deliveries on the body too.
func signsBodyOnly(provider string) bool {
	return provider == keys.ProviderGitHub || provider == keys.ProviderShopify
}

// sendTemplate is the body template of the run: the built-in one of the
// type, or the --payload file's.
func sendTemplate(provider string, o sendOptions) (*samples.Template, error) {
	if o.payloadFile == "" {
		t, err := samples.Lookup(provider, o.eventType)
		if errors.Is(err, samples.ErrUnknownType) {
			return nil, cli.UsageError{Msg: err.Error()}
		}
		return t, err
	}
	b, err := os.ReadFile(o.payloadFile)
	if err != nil {
		return nil, cli.Usagef("--payload: %v", err)
	}
	t, err := samples.Custom(provider, o.eventType, b)
	if err != nil {
		return nil, cli.Usagef("--payload %s: %v", o.payloadFile, err)
	}
	return t, nil
}

// post signs d now and sends it once.
// sendClient is send's HTTP client. It never follows a redirect: the body it
// posts is signed, and a 3xx from whatever answers the intake's URL must not
// carry that signed body (a replayable delivery) to another host. A 3xx is
// reported as the answer instead.
func sendClient() *http.Client {
	return &http.Client{
		Timeout:       15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func post(ctx context.Context, client *http.Client, postURL string, key *ops.SigningKey, d samples.Delivery) (sentDelivery, error) {
	sd := sentDelivery{EventID: d.EventID}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, postURL, bytes.NewReader(d.Body))
	if err != nil {
		return sd, err
	}
	req.Header = d.Header.Clone()
	if err := key.Sign(req.Header, d.Body, time.Now()); err != nil {
		return sd, fmt.Errorf("sign %s: %w", d.EventID, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return sd, fmt.Errorf("post to %s: %w", postURL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	sd.HTTP = resp.StatusCode
	var a intakeAnswer
	if json.Unmarshal(raw, &a) != nil {
		a.Error = strings.TrimSpace(oneLine(string(raw), 120))
	}
	sd.EventKey, sd.Reason = a.Event, a.Reason
	switch {
	case a.Status != "" && resp.StatusCode/100 == 2:
		sd.Answer = a.Status
	case a.Error != "":
		sd.Answer = a.Error
	default:
		sd.Answer = http.StatusText(resp.StatusCode)
	}
	return sd, nil
}

// settle waits up to wait for the run's pending events to be handled.
func settle(ctx context.Context, svc *ops.Service, rep *sendReport, wait time.Duration) {
	if wait <= 0 {
		return
	}
	deadline := time.Now().Add(wait)
	for {
		pending := false
		for _, d := range rep.Deliveries {
			if d.Duplicate || d.EventKey == "" || (d.Answer != "accepted" && d.Answer != "duplicate") {
				continue
			}
			if st, _ := eventStatus(ctx, svc, d.EventKey); st == keys.StatusPending {
				pending = true
				break
			}
		}
		if !pending || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func eventStatus(ctx context.Context, svc *ops.Service, key string) (string, *ops.EventDetail) {
	k, err := keys.ParseEvent(key)
	if err != nil {
		return "", nil
	}
	ev, err := svc.ShowEvent(ctx, k, false)
	if err != nil {
		return "", nil
	}
	return ev.Status, ev
}

// describeOutcomes reads what hookinbox made of each delivery, through
// ops: the inbox row of an accepted, ignored or duplicate one, the
// quarantine entry of a quarantined one.
func describeOutcomes(ctx context.Context, svc *ops.Service, rep *sendReport) {
	var quarantine []ops.QuarantineView
	quarantineRead := false
	seen := map[string]bool{}
	for i := range rep.Deliveries {
		d := &rep.Deliveries[i]
		switch {
		case d.HTTP/100 != 2:
			d.Outcome = "refused"
		case d.Answer == "quarantined":
			d.Outcome = "quarantined"
			if !quarantineRead {
				quarantine, _ = svc.ListQuarantine(ctx, ops.QuarantineFilter{Endpoint: rep.Endpoint, Limit: ops.MaxListLimit})
				quarantineRead = true
			}
			for _, q := range quarantine {
				if q.EventID == d.EventID {
					d.Console = svc.ConsoleURL(ops.ConsoleQuarantinePath(q.ID))
					break
				}
			}
			d.Detail = d.Reason
		default:
			st, ev := eventStatus(ctx, svc, d.EventKey)
			d.Outcome = orDefault(st, "unknown")
			if d.Answer == "duplicate" {
				d.Outcome = "duplicate"
				d.Detail = "stored once (" + orDefault(st, "?") + ")"
			} else if ev != nil {
				d.Detail = outcomeOf(ev.Status, ev.Note, ev.LastError)
			}
			if d.EventKey != "" {
				d.Console = svc.ConsoleURL(ops.ConsoleEventPath(d.EventKey))
				if !seen[d.EventKey] && st != "" {
					seen[d.EventKey] = true
					rep.Stored[st]++
				}
			}
		}
	}
}

func printSendReport(out io.Writer, rep *sendReport) {
	fmt.Fprintf(out, "%s (%s) ← %d %s event(s), account %s (workspace %s), signed with secret #%d (read audited: operator action #%d)\n",
		rep.Endpoint, rep.Provider, rep.Events, rep.EventType, rep.Account, rep.Workspace, rep.SecretID, rep.AuditID)
	fmt.Fprintf(out, "posted to %s\n\n", rep.URL)
	rows := make([][]string, 0, len(rep.Deliveries))
	for _, d := range rep.Deliveries {
		n := strconv.Itoa(d.N)
		if d.Duplicate {
			n += " again"
		}
		rows = append(rows, []string{n, orDash(d.EventKey), strconv.Itoa(d.HTTP), d.Answer, d.Outcome,
			orDash(oneLine(d.Detail, 60)), orDash(d.Console)})
	}
	_ = cli.Render(out, "table", nil, []string{"#", "EVENT KEY", "HTTP", "ANSWER", "OUTCOME", "DETAIL", "CONSOLE"}, rows)
	ok := 0
	for _, d := range rep.Deliveries {
		if d.HTTP/100 == 2 {
			ok++
		}
	}
	var stored []string
	total := 0
	for st, n := range rep.Stored {
		stored = append(stored, fmt.Sprintf("%s %d", st, n))
		total += n
	}
	sort.Strings(stored)
	fmt.Fprintf(out, "\n%d deliveries (%d events, %d sent twice), %d answered 2xx; inbox: %d row(s)", len(rep.Deliveries),
		rep.Events, rep.Duplicates, ok, total)
	if len(stored) > 0 {
		fmt.Fprintf(out, " (%s)", strings.Join(stored, ", "))
	}
	fmt.Fprintln(out)
}
