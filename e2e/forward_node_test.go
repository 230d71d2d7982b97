package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/lab/simulator"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

// A service in another language: examples/forward-receiver/receiver.mjs,
// Node with no dependency, verifies the signature with its own HMAC (not
// our library) and applies each operation once by Idempotency-Key.
func TestForwardToANodeServiceThatVerifiesOnItsOwn(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node is required under CI (it also fetches the GitHub corpus): %v", err)
		}
		t.Skip("node is not installed")
	}
	w := forwardStack(t, simulator.Config{})
	cmd := exec.Command(node, filepath.Join(testenv.Root(t), "examples", "forward-receiver", "receiver.mjs")) //nolint:noctx // stopped at cleanup
	cmd.Env = append(os.Environ(), "FORWARD_SECRET="+receiverSecret, "PORT=0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	require.NoError(t, err)
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), line)

	var mu sync.Mutex
	var applied []map[string]any
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				mu.Lock()
				applied = append(applied, m)
				mu.Unlock()
			}
		}
	}()

	// It refuses what hookinbox did not sign.
	resp, err := http.Post(url+"/hooks", "application/json", strings.NewReader(`{"operation_key":"forged"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	w.addRoute(t, ops.RouteSpec{Name: "billing", Provider: "stripe", EventType: "invoice.paid", URL: url + "/hooks",
		OperationKeyPath: "data.object.id", ReplaceHandler: true, AllowPrivate: true})
	inv1, paid1, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	again, err := w.sim.InvoicePaidAgain(inv1.ID)
	require.NoError(t, err)
	inv2, paid2, err := w.sim.PayInvoice(simulator.InvoiceOptions{Account: w.account})
	require.NoError(t, err)
	w.send(t, paid1, again, paid2, paid1)
	w.allDone(t, 3)
	eventually(t, 10*time.Second, "two operations applied", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(applied) >= 2
	})
	time.Sleep(200 * time.Millisecond) // a third line would be a defect; give it the time to show
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, applied, 2, "two invoices, two operations, whatever was duplicated")
	got := []string{applied[0]["operation_key"].(string), applied[1]["operation_key"].(string)}
	require.ElementsMatch(t, []string{keys.Join("forward", "billing", "stripe", w.account, "test", inv1.ID),
		keys.Join("forward", "billing", "stripe", w.account, "test", inv2.ID)}, got)
	require.Equal(t, w.workspace, applied[0]["workspace"])
}
