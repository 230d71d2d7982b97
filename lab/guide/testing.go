package guide

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/lab/devenv"
)

// Test is a Session for a test: it logs each block as it runs, fails the
// test on the first block that fails (with its file:line and output), and
// stops the session at the test's cleanup, logging the background steps'
// output when the test failed.
type Test struct {
	*Session
	t       testing.TB
	ran     []string
	outputs map[string]string
}

// StartTest starts a session for t, closed at t's cleanup.
func StartTest(t testing.TB, o Options) *Test {
	t.Helper()
	for i := 0; i+1 < len(o.Replace); i += 2 {
		t.Logf("guide: the test stands in %q for %q in every block", o.Replace[i+1], o.Replace[i])
	}
	s, err := Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	gt := &Test{Session: s, t: t, outputs: map[string]string{}}
	t.Cleanup(func() {
		if t.Failed() {
			s.mu.Lock()
			jobs := append([]*job(nil), s.jobs...)
			s.mu.Unlock()
			for _, j := range jobs {
				out, _ := s.Output(j.block)
				t.Logf("background step %s's output:\n%s", j.block.Where(), out)
			}
		}
		if err := s.Close(); err != nil {
			t.Errorf("guide: %v", err)
		}
		t.Logf("guide: what ran\n  %s", strings.Join(gt.ran, "\n  "))
	})
	return gt
}

// Run runs each block as its marker says, in order, and returns their
// outputs; it fails the test on the first that fails.
func (g *Test) Run(blocks ...Block) []string {
	g.t.Helper()
	outs := make([]string, len(blocks))
	for i, b := range blocks {
		began := time.Now()
		var status string
		switch b.Marker.Kind {
		case Skip:
			g.ran = append(g.ran, fmt.Sprintf("skipped %s: %s", b.Where(), b.Marker.Reason))
			g.t.Logf("guide: skip %s (%s)", b.Where(), b.Marker.Reason)
			continue
		case Background, AnotherTerminal:
			status = fmt.Sprintf("%s %s: up after", b.Marker.Kind, b.Where())
		default:
			status = fmt.Sprintf("ran %s in", b.Where())
		}
		g.t.Logf("guide: %s (under %q)\n%s", b.Where(), b.Section(), indent(b.Text))
		out, err := g.Session.Run(g.t.Context(), b)
		if err != nil {
			g.t.Fatalf("guide: %v", err)
		}
		took := time.Since(began).Round(100 * time.Millisecond)
		g.ran = append(g.ran, fmt.Sprintf("%s %s", status, took))
		g.t.Logf("guide: %s %s\n%s", status, took, out)
		g.outputs[b.Where()] = out
		outs[i] = out
	}
	return outs
}

// Exec runs the test's own script in the session (see Session.Exec),
// failing the test if it fails.
func (g *Test) Exec(where, script string, timeout time.Duration) string {
	g.t.Helper()
	out, err := g.Session.Exec(g.t.Context(), where, script, timeout)
	if err != nil {
		g.t.Fatalf("guide: %v", err)
	}
	return out
}

// Eventually runs script every second until ok holds of its output, or
// fails the test after timeout with the last output.
func (g *Test) Eventually(where, script string, timeout time.Duration, ok func(out string) bool) string {
	g.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := g.Exec(where, script, time.Minute)
		if ok(out) {
			g.ran = append(g.ran, fmt.Sprintf("the test's own %s: held", where))
			return out
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("guide: %s did not hold within %s; last output:\n%s", where, timeout, out)
		}
		select {
		case <-g.t.Context().Done():
			g.t.Fatal(g.t.Context().Err())
		case <-time.After(time.Second):
		}
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ")
}

// LocalStackPorts are the fixed ports of `make run` (hookinbox dev): the
// intake 8080, its internal listener 9090, the worker 9091, the console
// 9092, Temporal 7233 and its UI 8233, PostgreSQL 55432, Mailpit 1025 and
// 8025.
var LocalStackPorts = []int{8080, 9090, 9091, 9092, 7233, 8233, 55432, 1025, 8025}

// RequireFreePorts stops the test when one of ports is taken: `make run`
// reuses a service already on its port, so a guide run beside a
// developer's stack would write into it. Under CI=true that fails the
// test; otherwise it is skipped.
func RequireFreePorts(t testing.TB, ports ...int) {
	t.Helper()
	taken := TakenPorts(ports...)
	if len(taken) == 0 {
		return
	}
	msg := PortsMessage(taken)
	if devenv.CI() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func listening(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	return dial(ctx, addr) == nil
}

func dial(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// ReaderEnv is base (os.Environ()) as a reader's terminal has it: less
// what would point a guide's commands at other servers than the local
// stack's (DATABASE_URL, TEMPORAL_*, OTEL_*, and HOOKINBOX_* but the
// pinned tools' HOOKINBOX_CACHE_DIR, HOOKINBOX_TEMPORAL_BIN,
// HOOKINBOX_MAILPIT_BIN and HOOKINBOX_PG_BIN), and less CI's GOFLAGS.
func ReaderEnv(base []string) []string {
	keep := map[string]bool{"HOOKINBOX_CACHE_DIR": true, "HOOKINBOX_TEMPORAL_BIN": true, "HOOKINBOX_MAILPIT_BIN": true, "HOOKINBOX_PG_BIN": true}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case keep[k]:
		case k == "DATABASE_URL", k == "GOFLAGS", strings.HasPrefix(k, "HOOKINBOX_"), strings.HasPrefix(k, "TEMPORAL_"), strings.HasPrefix(k, "OTEL_"):
			continue
		}
		env = append(env, kv)
	}
	return env
}

// TakenPorts are those of ports something listens on, on 127.0.0.1.
func TakenPorts(ports ...int) []int {
	var taken []int
	for _, p := range ports {
		if listening(fmt.Sprintf("127.0.0.1:%d", p)) {
			taken = append(taken, p)
		}
	}
	return taken
}

// PortsMessage says why a guide does not run beside what holds taken.
func PortsMessage(taken []int) string {
	ps := make([]string, len(taken))
	for i, p := range taken {
		ps[i] = fmt.Sprint(p)
	}
	return fmt.Sprintf("the guide runs the local stack on its fixed ports, and 127.0.0.1:%s is taken "+
		"(is make run going? it would reuse those services): stop it and run again", strings.Join(ps, ", "))
}
