package simulator

import (
	"time"
)

// DefaultListen is where `hookinbox-lab simulate` and the demo serve the
// simulated provider API, email API and /_sim/truth.
const DefaultListen = "127.0.0.1:12111"

// Providers as the receiver names them.
const (
	ProviderStripe   = "stripe"
	ProviderStandard = "standard"
)

// Resource kinds an event is about.
const (
	KindInvoice      = "invoice"
	KindSubscription = "subscription"
	KindFeedback     = "feedback"
	KindCreditNote   = "credit_note"
)

// Thin event modes (Config.ThinEvents).
const (
	ThinOff  = ""     // snapshot events only
	ThinOnly = "thin" // thin events instead of snapshot events
	ThinBoth = "both" // each snapshot event, then its thin twin
)

// Defaults used when a Config field is left zero.
const (
	DefaultAPIKey          = "sk_test_simulator"
	DefaultGitHubAppID     = 424242
	DefaultPlatformAccount = "acct_sim_platform"
	DefaultCurrency        = "usd"
	DefaultAmount          = 2000
)

// Config describes one simulated provider. The zero value is usable: one
// account, no Connect, no faults.
type Config struct {
	// Seed makes every random choice reproducible.
	Seed uint64
	// Accounts are the Stripe accounts whose resources the simulator keeps.
	// Default: acct_sim_a (and acct_sim_b with Connect).
	Accounts []string
	// Connect makes events carry "account" (the connected account) and the
	// API require Stripe-Account for a connected account's resources.
	// Without Connect, the API serves Accounts[0] when no Stripe-Account is sent.
	Connect bool
	// PlatformAccount is the Connect platform's own account (owns nothing).
	PlatformAccount string
	// Projects are the feedback tool's projects. Default: proj_sim_a.
	Projects []string
	// Livemode is the events' and objects' livemode.
	Livemode bool
	// APIKey is the secret key the Stripe API accepts (401 otherwise), and
	// the token GitHub's hook deliveries API accepts.
	APIKey string
	// GitHubAppID is the App whose JWT (its issuer) the App hook's
	// deliveries API accepts. Default DefaultGitHubAppID.
	GitHubAppID int64
	// Versions adds a monotonic integer "version" to every subscription
	// snapshot, in events and API answers alike (Stripe has none).
	Versions bool
	// ThinEvents is what a Stripe event destination sends: ThinOff (the
	// default) snapshot events only; ThinOnly the thin version of each
	// instead (object v2.core.event, type v1.<snapshot type>, the object in
	// related_object, context with Connect); ThinBoth each snapshot event
	// and then its thin twin, which names it in snapshot_event (two
	// destinations on one endpoint, as Stripe's migration to thin events
	// runs). GET /v1/events lists the snapshot events whatever the mode;
	// GET /v2/core/events/{id} serves the thin ones.
	ThinEvents string
	// Clock gives the time written into bodies (created, timestamps).
	// Default time.Now. Signatures always use the real time.
	Clock func() time.Time
	// Logf, when set, receives one line per notable step (progress output).
	Logf func(format string, args ...any)

	Scenario ScenarioKnobs
	Delivery DeliveryKnobs
	API      APIKnobs
	Email    EmailKnobs
}

// ScenarioKnobs sizes what Generate creates.
type ScenarioKnobs struct {
	// CustomersPerAccount, each with one subscription. Default 3.
	CustomersPerAccount int
	// InvoicesPerSubscription paid invoices. Default 2; negative means none.
	InvoicesPerSubscription int
	// UpdatesPerSubscription state changes between creation and the end.
	// Default 2; negative means none.
	UpdatesPerSubscription int
	// CancelRate of subscriptions that end canceled (half of them at once,
	// half at period end). Default 0.5; negative means none.
	CancelRate float64
	// FeedbackPerProject items. Default 3; negative means none.
	FeedbackPerProject int
	// SecondEventRate of paid invoices that get a second, distinct invoice.paid
	// event (another evt_ id for the same invoice).
	SecondEventRate float64
	// CreditNoteRate of paid invoices that get a credit note (of a quarter,
	// half, three quarters or all of the invoice), its event right after the
	// invoice's. Default 0: none (the random streams of older seeds stay as
	// they were).
	CreditNoteRate float64
	// VoidRate of credit notes voided afterwards (credit_note.voided).
	VoidRate float64
	// CommentsPerFeedback: each feedback item gets up to this many comments
	// (feedback.commented, one step each, after its feedback.created), and
	// RecommentRate of them a second event (another message id, the same
	// comment). VotesPerFeedback: up to this many votes (feedback.voted).
	// Default 0: none (older seeds' random streams stay as they were).
	CommentsPerFeedback int
	RecommentRate       float64
	VotesPerFeedback    int
}

// DeliveryKnobs shape how events reach the receiver. Durations are provider
// time, multiplied by TimeScale before anything waits on them.
type DeliveryKnobs struct {
	// DuplicateRate of deliveries sent again with the same id and body.
	DuplicateRate float64
	// DuplicateSpread: a copy goes out up to this long after its original.
	// Default 30s.
	DuplicateSpread time.Duration
	// ReorderWindow shuffles deliveries inside consecutive windows of this size.
	ReorderWindow int
	// DelayRate of deliveries held back by up to MaxDelay. Default MaxDelay 10m.
	DelayRate float64
	MaxDelay  time.Duration
	// Interval between consecutive planned deliveries. Default 0.
	Interval time.Duration
	// ConflictRate of acknowledged events redelivered later with the same id
	// and a different body.
	ConflictRate float64
	// DropRate of Stripe events never sent (only GET /v1/events shows them).
	DropRate float64
	// Concurrency of the sender. Default 4.
	Concurrency int
	// MaxAttempts per delivery, the first included. Default 16.
	MaxAttempts int
	// RetryBase and RetryCap: exponential schedule Base·2^(n-1), capped, with
	// ±25% jitter. Defaults 1m and 12h (Stripe-like, about three days in all).
	RetryBase time.Duration
	RetryCap  time.Duration
	// TimeScale compresses provider time into real time. Default 0.001
	// (an hour becomes 3.6 s).
	TimeScale float64
	// AttemptTimeout is the real-time limit of one POST. Default 10s.
	AttemptTimeout time.Duration
}

// APIKnobs shape the Stripe API's misbehaviour.
type APIKnobs struct {
	// Latency added to each answer, plus a random part up to LatencyJitter.
	Latency       time.Duration
	LatencyJitter time.Duration
	// Rates of spurious answers: 500 api_error, 429 rate_limit with
	// Retry-After, 404 resource_missing for a resource that exists, 403.
	ErrorRate     float64
	RateLimitRate float64
	NotFoundRate  float64
	ForbiddenRate float64
	// RetryAfter is sent with 429 answers. Default 1s.
	RetryAfter time.Duration
}

// EmailKnobs shape the outbound email API.
type EmailKnobs struct {
	// NoIdempotency ignores Idempotency-Key: every POST is a new email.
	NoIdempotency bool
	// LoseAnswerRate of accepted emails whose answer is lost (see LoseMode).
	LoseAnswerRate float64
	// LoseMode is how an answer is lost: LoseClose (default), Lose5xx or LoseTimeout.
	LoseMode string
	// APIKey, when set, is required as a Bearer token.
	APIKey string
}

// Ways the email API loses an answer after it recorded the email.
const (
	LoseClose   = "close"   // the connection is closed without an answer
	Lose5xx     = "5xx"     // 502 with an error body
	LoseTimeout = "timeout" // no answer until the client gives up
)

func (c Config) withDefaults() Config {
	if len(c.Accounts) == 0 {
		c.Accounts = []string{"acct_sim_a"}
		if c.Connect {
			c.Accounts = append(c.Accounts, "acct_sim_b")
		}
	}
	c.Accounts = append([]string(nil), c.Accounts...)
	if c.PlatformAccount == "" {
		c.PlatformAccount = DefaultPlatformAccount
	}
	if len(c.Projects) == 0 {
		c.Projects = []string{"proj_sim_a"}
	}
	c.Projects = append([]string(nil), c.Projects...)
	if c.GitHubAppID == 0 {
		c.GitHubAppID = DefaultGitHubAppID
	}
	if c.APIKey == "" {
		c.APIKey = DefaultAPIKey
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	s := &c.Scenario
	if s.CustomersPerAccount == 0 {
		s.CustomersPerAccount = 3
	}
	if s.InvoicesPerSubscription == 0 {
		s.InvoicesPerSubscription = 2
	}
	if s.UpdatesPerSubscription == 0 {
		s.UpdatesPerSubscription = 2
	}
	if s.CancelRate == 0 {
		s.CancelRate = 0.5
	}
	if s.FeedbackPerProject == 0 {
		s.FeedbackPerProject = 3
	}
	d := &c.Delivery
	if d.DuplicateSpread == 0 {
		d.DuplicateSpread = 30 * time.Second
	}
	if d.MaxDelay == 0 {
		d.MaxDelay = 10 * time.Minute
	}
	if d.Concurrency <= 0 {
		d.Concurrency = 4
	}
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = 16
	}
	if d.RetryBase == 0 {
		d.RetryBase = time.Minute
	}
	if d.RetryCap == 0 {
		d.RetryCap = 12 * time.Hour
	}
	if d.TimeScale == 0 {
		d.TimeScale = 0.001
	}
	if d.AttemptTimeout == 0 {
		d.AttemptTimeout = 10 * time.Second
	}
	if c.API.RetryAfter == 0 {
		c.API.RetryAfter = time.Second
	}
	if c.Email.LoseMode == "" {
		c.Email.LoseMode = LoseClose
	}
	return c
}
