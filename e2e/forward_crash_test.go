package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/forward"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// hookinboxBinary builds cmd/hookinbox once for the package's tests.
func hookinboxBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hookinbox-e2e-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "hookinbox")
		cmd := exec.Command("go", "build", "-o", binaryPath, "./cmd/hookinbox")
		cmd.Dir = testenv.Root(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = err
			t.Logf("%s", out)
		}
	})
	require.NoError(t, binaryErr, "go build ./cmd/hookinbox")
	return binaryPath
}

// workerProcess is `hookinbox worker` as its own process, on the stack's
// database (as the worker's role), Temporal and task queue.
type workerProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startWorkerProcess starts one, with extra environment variables (NAME=value)
// after the defaults, which they override.
func startWorkerProcess(t *testing.T, s *stack, extra ...string) *workerProcess {
	t.Helper()
	cmd := exec.Command(hookinboxBinary(t), "worker") //nolint:noctx // the test kills it with SIGKILL on purpose
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+s.cfg.DatabaseURL,
		"HOOKINBOX_WORKER_DATABASE_URL="+s.cfg.WorkerDatabaseURL,
		"HOOKINBOX_SECRETS_KEY="+testenv.SecretsKey(),
		"TEMPORAL_ADDRESS="+s.cfg.TemporalAddress,
		"HOOKINBOX_TASK_QUEUE="+s.cfg.TaskQueue,
		"HOOKINBOX_WORKER_ADDR=127.0.0.1:0",
		"HOOKINBOX_ACTIVITY_TIMEOUT=3s",
		"HOOKINBOX_RETRY_INITIAL=50ms",
		"HOOKINBOX_RETRY_MAX=500ms",
		"HOOKINBOX_SWEEP_INTERVAL=2s",
		"HOOKINBOX_SWEEP_AFTER=1s",
		"HOOKINBOX_ENDPOINT_CACHE_TTL=200ms",
		"HOOKINBOX_OUTBOUND_ALLOW_PRIVATE=false",
		"HOOKINBOX_RECONCILE_INTERVAL=0", "HOOKINBOX_BACKFILL_INTERVAL=0", "HOOKINBOX_RETENTION_INTERVAL=0",
		"HOOKINBOX_LOG_LEVEL=warn",
	)
	cmd.Env = append(cmd.Env, extra...)
	log, err := os.Create(filepath.Join(t.TempDir(), "worker.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	p := &workerProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("worker log:\n%s", b)
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *workerProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func TestForwardResentAfterAWorkerKilledBetweenTheAnswerAndTheCompletion(t *testing.T) {
	t.Parallel()
	s := newStack(t, stackOptions{noWorker: true, configure: func(c *config.Config) {
		c.OutboundAllowPrivate, c.EndpointCacheTTL = false, 200*time.Millisecond
	}})
	w := newSimWorld(t, s, simulator.Config{})
	var mu sync.Mutex
	var current *workerProcess
	killed := make(chan struct{})
	rcv := newReceiver(t)
	rcv.beforeAnswer = func(forward.Document) {
		// The service applied the operation; its 2xx is about to leave.
		// The worker dies first: the row cannot have been completed.
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-killed:
		default:
			current.kill()
			close(killed)
		}
	}
	w.addRoute(t, ops.RouteSpec{Name: "billing", Provider: "stripe", EventType: "invoice.paid", URL: rcv.srv.URL,
		OperationKeyPath: "data.object.id", ReplaceHandler: true, AllowPrivate: true})
	mu.Lock()
	current = startWorkerProcess(t, s)
	mu.Unlock()

	inv, paid, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid)
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("the worker never forwarded the event")
	}
	k := w.key(paid.ID)
	require.Equal(t, keys.StatusPending, w.statusOf(k), "killed between the service's 2xx and the row's completion")
	require.Empty(t, w.attempts(t, k), "no attempt was recorded: its transaction never ran")

	mu.Lock()
	current = startWorkerProcess(t, s) // the restarted worker
	mu.Unlock()
	eventually(t, 90*time.Second, "the event done after the restart", func() bool { return w.statusOf(k) == keys.StatusDone })

	got := rcv.requests()
	require.Len(t, got, 2, "sent again: the outcome was unknown to hookinbox")
	opKey := keys.Join("forward", "billing", "stripe", w.account, "test", inv.ID)
	for _, r := range got {
		require.Equal(t, opKey, r.idem, "the resend carries the same Idempotency-Key")
		require.Equal(t, opKey, r.wid, "and the same webhook-id")
	}
	require.Zero(t, rcv.unverified, "both signed")
	rcv.mu.Lock()
	require.Equal(t, map[string]int{opKey: 1}, rcv.applied, "the service, deduping on Idempotency-Key, applied it once")
	rcv.mu.Unlock()
	as := w.attempts(t, k)
	require.Len(t, as, 1, "the crashed send left no record; the resend's is the one")
	require.Equal(t, forwards.OutcomeDone, as[0].Outcome)
}
