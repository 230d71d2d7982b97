package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/outbound"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// What a notice's crash guarantee is, exactly (docs/notifications.md): the
// notice and its window's mark commit in one transaction with its outbox
// intent, so a worker killed anywhere never decides a second notice for
// the window. Killed between the send and the mark (the row still
// uncertain), the restarted worker's next attempt follows the outbox's
// uncertain-outcome path: a Standard Webhooks receiver gets the same
// webhook-id once more (twice in all, at most) and dedups on it; an email
// is found in Mailpit by its Message-ID and not sent again.
func TestNoticeNotSentTwiceWhenTheWorkerIsKilledBetweenTheSendAndTheMark(t *testing.T) {
	t.Parallel()
	t.Run("webhook: the same webhook-id twice, applied once", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, stackOptions{noWorker: true})
		w := newNotifyWorld(t, s, nil)
		_, err := w.svc.AddNotification(w.ctx, operator, ops.NotificationSpec{Name: "hook", Triggers: []string{notify.TriggerQuarantine},
			WebhookURL: w.rcv.srv.URL + "/notices", Secret: noticeSecret, AllowPrivate: true}, "e2e")
		require.NoError(t, err)
		s.stripeEndpoint("ep", "acct_kill_hook", "ws_kill_hook")

		var mu sync.Mutex
		var current *workerProcess
		killed := make(chan struct{})
		w.rcv.mu.Lock()
		w.rcv.beforeAnswer = func(noticeRequest) {
			// The receiver has the notice; its 2xx is about to leave. The
			// worker dies first: it cannot have marked the row sent.
			mu.Lock()
			defer mu.Unlock()
			select {
			case <-killed:
			default:
				current.kill()
				close(killed)
			}
		}
		w.rcv.mu.Unlock()
		env := []string{"HOOKINBOX_NOTIFY_INTERVAL=1s"}
		mu.Lock()
		current = startWorkerProcess(t, s, env...)
		mu.Unlock()

		require.Equal(t, http.StatusBadRequest, s.sendStripeRaw("ep", []byte(`{"id":"evt_k", "type": `)))
		select {
		case <-killed:
		case <-time.After(90 * time.Second):
			t.Fatal("the worker never sent the notice")
		}
		op := w.noticeOutbox(t)
		require.Equal(t, keys.OutboxUncertain, op.status, "killed between the send and the mark")
		require.Equal(t, 1, w.noticeCount(t), "one notice decided for the window")

		mu.Lock()
		current = startWorkerProcess(t, s, env...) // the restarted worker
		mu.Unlock()
		eventually(t, 90*time.Second, "the notice marked sent after the restart", func() bool { return w.noticeOutbox(t).status == keys.OutboxSent })
		op = w.noticeOutbox(t)
		require.Equal(t, "retry_same_key", op.policy, "a Standard Webhooks receiver dedupes: repeated with the same key")
		require.Equal(t, 2, op.attempts)

		reqs, docs := w.rcv.all()
		require.Len(t, reqs, 2, "sent again once: its outcome was unknown to hookinbox")
		for _, r := range reqs {
			require.Equal(t, outbound.WebhookID(op.key), r.id, "the resend carries the same webhook-id")
		}
		require.Len(t, docs, 1, "the receiver, deduping on webhook-id, has one notice")
		require.Equal(t, notify.PhaseFiring, docs[0].Phase)
		require.Zero(t, w.rcv.unverified)

		// Through the restart too, the window got no second notice; the
		// recovery is a notice of its own.
		_, err = w.svc.ResolveQuarantine(w.ctx, operator, s.openQuarantine(t), ops.ResolveDiscard, "junk")
		require.NoError(t, err)
		eventually(t, 90*time.Second, "the recovery notice", func() bool { _, docs := w.rcv.all(); return len(docs) == 2 })
		_, docs = w.rcv.all()
		require.Equal(t, notify.PhaseRecovered, docs[1].Phase)
		require.Equal(t, docs[0].WindowStart, docs[1].WindowStart)
		require.Equal(t, 2, w.noticeCount(t))
	})

	t.Run("email: found in Mailpit, not sent again", func(t *testing.T) {
		t.Parallel()
		mp := testenv.Mailpit(t)
		var mu sync.Mutex
		var current *workerProcess
		killed := make(chan struct{})
		relay := newKillingRelay(t, mp.SMTPAddr, func() {
			// Mailpit queued the message (its 250 is in hand) and the
			// mailer has not read it: the worker dies before the mark.
			mu.Lock()
			defer mu.Unlock()
			current.kill()
			close(killed)
		})
		s := newStack(t, stackOptions{noWorker: true})
		w := newNotifyWorld(t, s, mp)
		_, err := w.svc.AddNotification(w.ctx, operator, ops.NotificationSpec{Name: "mail", Triggers: []string{notify.TriggerQuarantine},
			Email: "oncall@e2e.example"}, "e2e")
		require.NoError(t, err)
		s.stripeEndpoint("ep", "acct_kill_mail", "ws_kill_mail")
		env := []string{"HOOKINBOX_NOTIFY_INTERVAL=1s", "HOOKINBOX_MAILER=smtp", "HOOKINBOX_SMTP_ADDR=" + relay.addr(),
			"HOOKINBOX_SMTP_LOOKUP_URL=" + mp.HTTPURL, "HOOKINBOX_OUTBOX_BUDGET=20"}
		mu.Lock()
		current = startWorkerProcess(t, s, env...)
		mu.Unlock()

		require.Equal(t, http.StatusBadRequest, s.sendStripeRaw("ep", []byte(`{"id":"evt_k", "type": `)))
		select {
		case <-killed:
		case <-time.After(90 * time.Second):
			t.Fatal("the worker never sent the notice")
		}
		require.Equal(t, keys.OutboxUncertain, w.noticeOutbox(t).status, "killed between the send and the mark")
		require.Len(t, mailpitNotices(t, mp), 1, "Mailpit has it")

		mu.Lock()
		current = startWorkerProcess(t, s, env...)
		mu.Unlock()
		eventually(t, 90*time.Second, "the notice marked sent after the restart", func() bool { return w.noticeOutbox(t).status == keys.OutboxSent })
		op := w.noticeOutbox(t)
		require.Equal(t, "found at the destination after an uncertain attempt", op.lastError)
		msgs := mailpitNotices(t, mp)
		require.Len(t, msgs, 1, "found by its Message-ID: not sent again")
		require.Equal(t, outbound.StableID(op.key)+"@hookinbox.local", msgs[0].MessageID)
		require.Equal(t, 1, w.noticeCount(t))
		require.EqualValues(t, 1, relay.kills.Load())
	})
}

// noticeRow is the outbox row of the world's first notice.
type noticeRow struct {
	key, status, policy, lastError string
	attempts                       int
}

func (w *notifyWorld) noticeOutbox(t *testing.T) noticeRow {
	t.Helper()
	var r noticeRow
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, `
		SELECT operation_key, status, coalesce(policy, ''), coalesce(last_error, ''), attempts
		  FROM outbox WHERE class = 'notification' ORDER BY id LIMIT 1`).Scan(&r.key, &r.status, &r.policy, &r.lastError, &r.attempts))
	return r
}

func (w *notifyWorld) noticeCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, w.store.Pool.QueryRow(w.ctx, `SELECT count(*) FROM notifications`).Scan(&n))
	return n
}

// killingRelay is an SMTP relay in front of Mailpit. On the first message,
// once Mailpit has answered the end of its DATA (the message is queued), it
// calls onQueued instead of passing that answer on, and drops the
// connection: the mailer sent the message and never learned it. Later
// connections pass through.
type killingRelay struct {
	ln    net.Listener
	kills atomic.Int64
}

func newKillingRelay(t *testing.T, upstream string, onQueued func()) *killingRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	kr := &killingRelay{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go kr.relay(c, upstream, onQueued)
		}
	}()
	return kr
}

func (kr *killingRelay) addr() string { return kr.ln.Addr().String() }

func (kr *killingRelay) relay(c net.Conn, upstream string, onQueued func()) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	var dataEnded atomic.Bool
	go func() {
		// Client to Mailpit, watching for the end of DATA.
		var tail []byte
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				tail = append(tail, buf[:n]...)
				if bytes.Contains(tail, []byte("\r\n.\r\n")) {
					dataEnded.Store(true)
				}
				if len(tail) > 8 {
					tail = tail[len(tail)-8:]
				}
				if _, werr := u.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				_ = u.Close()
				return
			}
		}
	}()
	// Mailpit to the client, line by line.
	r := bufio.NewReader(u)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			if dataEnded.Load() && strings.HasPrefix(line, "250") && kr.kills.CompareAndSwap(0, 1) {
				onQueued()
				return
			}
			if _, werr := io.WriteString(c, line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
