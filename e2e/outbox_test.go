package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/internal/store/outbox"
	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func withMailpit(mp *devenv.Mailpit) func(*config.Config) {
	return func(c *config.Config) {
		c.Mailer, c.SMTPAddr, c.SMTPLookupURL = "smtp", mp.SMTPAddr, mp.HTTPURL
		c.OutboxBudget = 20
	}
}

type mailpitMessage struct {
	ID        string `json:"ID"`
	MessageID string `json:"MessageID"`
}

// mailpitMessages lists what Mailpit received.
func mailpitMessages(t *testing.T, mp *devenv.Mailpit) []mailpitMessage {
	t.Helper()
	resp, err := http.Get(mp.HTTPURL + "/api/v1/messages")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Total    int              `json:"total"`
		Messages []mailpitMessage `json:"messages"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Len(t, out.Messages, out.Total, "one page holds them all")
	return out.Messages
}

func mailpitCount(t *testing.T, mp *devenv.Mailpit) int {
	t.Helper()
	return len(mailpitMessages(t, mp))
}

// outboxStatus is the status of the world's one outbox row ("" before it exists).
func (w *simWorld) outboxStatus(t *testing.T) string {
	var st string
	err := w.store.Pool.QueryRow(w.ctx, `SELECT status FROM outbox`).Scan(&st)
	if errors.Is(err, pgx.ErrNoRows) {
		return ""
	}
	require.NoError(t, err)
	return st
}

// commitWitness is an SMTP relay in front of Mailpit. When the mailer
// connects, before a byte of the message passes, it runs check on a
// connection of its own (which sees only committed rows) and records the
// answer: what was committed at the moment the email left.
type commitWitness struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	check  func(context.Context) (bool, error)
	opened []error // per SMTP connection: nil when check found it committed
}

func newCommitWitness(t *testing.T, upstream string) *commitWitness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cw := &commitWitness{ln: ln, upstream: upstream}
	t.Cleanup(func() { _ = ln.Close() })
	go cw.serve()
	return cw
}

func (cw *commitWitness) addr() string { return cw.ln.Addr().String() }

func (cw *commitWitness) setCheck(f func(context.Context) (bool, error)) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.check = f
}

func (cw *commitWitness) connections() []error {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return slices.Clone(cw.opened)
}

func (cw *commitWitness) serve() {
	for {
		c, err := cw.ln.Accept()
		if err != nil {
			return
		}
		cw.mu.Lock()
		check := cw.check
		cw.mu.Unlock()
		verdict := errors.New("the mailer connected before the test set what to check")
		if check != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			switch ok, err := check(ctx); {
			case err != nil:
				verdict = err
			case !ok:
				verdict = errors.New("the email left before its grant was committed")
			default:
				verdict = nil
			}
			cancel()
		}
		cw.mu.Lock()
		cw.opened = append(cw.opened, verdict)
		cw.mu.Unlock()
		go relay(c, cw.upstream)
	}
}

// relay copies c to upstream and back until either side closes.
func relay(c net.Conn, upstream string) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
}

// TestConfirmationEmailLeavesAfterTheCommitAndOnlyOnce: the mailer reaches
// the SMTP server only once the grant and its confirmation intent are
// committed (an email sent from inside the transaction would find neither
// visible), and three deliveries of two events for one invoice send one
// email, the one of that intent.
func TestConfirmationEmailLeavesAfterTheCommitAndOnlyOnce(t *testing.T) {
	t.Parallel()
	mp := testenv.Mailpit(t)
	witness := newCommitWitness(t, mp.SMTPAddr)
	viaWitness := func(c *config.Config) {
		withMailpit(mp)(c)
		c.SMTPAddr = witness.addr()
	}
	w := newSimWorld(t, newStack(t, stackOptions{configure: viaWitness}), simulator.Config{})
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	witness.setCheck(func(ctx context.Context) (bool, error) {
		var grants, intents int
		err := w.store.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM credit_grants WHERE invoice_id = $1),
			(SELECT count(*) FROM outbox WHERE workspace_id = $2)`, inv.ID, w.workspace).Scan(&grants, &intents)
		return grants == 1 && intents == 1, err
	})
	again, err := w.sim.InvoicePaidAgain(inv.ID)
	require.NoError(t, err)
	w.send(t, paid, again, paid)
	w.allDone(t, 2)
	eventually(t, 30*time.Second, "the confirmation to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })

	conns := witness.connections()
	require.NotEmpty(t, conns, "the email went through the witness")
	for i, verdict := range conns {
		require.NoError(t, verdict, "SMTP connection %d", i+1)
	}
	var opKey string
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT operation_key FROM outbox`).Scan(&opKey))
	msgs := mailpitMessages(t, mp)
	require.Len(t, msgs, 1)
	require.True(t, strings.HasPrefix(msgs[0].MessageID, outbound.StableID(opKey)+"@"),
		"the one email is the committed intent's (Message-ID %s, operation %s)", msgs[0].MessageID, opKey)
}

func f5SMTPDownThenUp(t *testing.T) {
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: withMailpit(mp)}), simulator.Config{})
	mp.Kill()
	_, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1) // the grant does not wait for the email
	eventually(t, 30*time.Second, "a failed send attempt", func() bool {
		var attempts int
		require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT attempts FROM outbox`).Scan(&attempts))
		return attempts >= 2
	})
	require.Equal(t, keys.OutboxPending, w.outboxStatus(t))
	require.NoError(t, mp.Restart(context.Background()))
	eventually(t, 60*time.Second, "the confirmation to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	require.Equal(t, 1, mailpitCount(t, mp))
}

func f5OutboxOfATerminatedWorkflow(t *testing.T) {
	mp := testenv.Mailpit(t)
	w := newSimWorld(t, newStack(t, stackOptions{configure: withMailpit(mp)}), simulator.Config{})
	mp.Kill()
	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	w.allDone(t, 1)
	id := keys.ResourceWorkflowID(keys.Resource{Provider: "stripe", Account: w.account, Environment: "test", Kind: "invoice", ID: inv.ID})
	// An operator terminates the workflow while the send is being retried.
	require.NoError(t, w.client.TerminateWorkflow(w.ctx, id, "", "test: terminated mid-send"))
	require.NoError(t, mp.Restart(context.Background()))
	eventually(t, 60*time.Second, "the sweeper to re-dispatch the unsent row", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	require.Equal(t, 1, mailpitCount(t, mp))
}

func TestFeedbackAlertReachesTheTeamWebhookSigned(t *testing.T) {
	t.Parallel()
	secret := simulator.StandardSecret("team-oncall")
	verifier, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	var mu sync.Mutex
	var got []map[string]any
	team := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		rw.WriteHeader(http.StatusOK)
	}))
	defer team.Close()
	w := newSimWorld(t, newStack(t, stackOptions{}), simulator.Config{})
	require.NoError(t, outbox.UpsertDestination(w.ctx, w.store.Pool, w.store.Keys, outbox.Destination{
		WorkspaceID: w.workspace, Name: "oncall", Kind: "webhook", Target: team.URL, Secret: secret, Enabled: true}))
	item, ev := w.sim.CreateFeedback(w.project, "the mobile app crashes on login")
	w.send(t, ev, ev)
	eventually(t, 30*time.Second, "the alert to be sent", func() bool { return w.outboxStatus(t) == keys.OutboxSent })
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 1)
	require.Equal(t, item.ID, got[0]["feedback_id"])
	require.Equal(t, "the mobile app crashes on login", got[0]["message"])
}
