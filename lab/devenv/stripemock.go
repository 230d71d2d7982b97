package devenv

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StripeMock is stripe-mock (github.com/stripe/stripe-mock), Stripe's mock of
// its API built from its OpenAPI specification and fixtures: the Stripe
// client's tests read Stripe's own fixtures through it. It is stateless: it
// answers every valid request with the fixture of its resource type (the id
// of the path reflected), never an object's real state.
var StripeMock = Tool{Name: "stripe-mock", Module: "github.com/stripe/stripe-mock", Package: "github.com/stripe/stripe-mock", Pin: StripeMockVersion}

// StripeMockServer is a running stripe-mock.
type StripeMockServer struct {
	// URL is its HTTP base URL on loopback, e.g. http://127.0.0.1:40123.
	URL string
	p   *proc
}

// StartStripeMock starts the stripe-mock binary on loopback ports the
// kernel picks (HTTP for the tests, HTTPS beside it because stripe-mock
// always opens one) and waits until it listens. Log receives its output.
func StartStripeMock(ctx context.Context, binary string, log io.Writer) (*StripeMockServer, error) {
	if log == nil {
		log = io.Discard
	}
	addr := &listenLine{prefix: "Listening for HTTP at address: ", found: make(chan string, 1), log: log}
	p, err := startProc("stripe-mock", exec.Command(binary, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0"), addr, nil)
	if err != nil {
		return nil, err
	}
	var a string
	select {
	case a = <-addr.found:
	case <-p.done:
		return nil, fmt.Errorf("stripe-mock exited before listening: %v", p.err)
	case <-time.After(30 * time.Second):
		p.kill()
		return nil, fmt.Errorf("stripe-mock: no listening address after 30s")
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
	if err := waitTCP(ctx, a, 30*time.Second, p); err != nil {
		p.kill()
		return nil, fmt.Errorf("stripe-mock: %w", err)
	}
	return &StripeMockServer{URL: "http://" + a, p: p}, nil
}

// Stop ends stripe-mock.
func (s *StripeMockServer) Stop() error {
	if s == nil {
		return nil
	}
	return s.p.stop(syscall.SIGTERM, 10*time.Second)
}

// listenLine passes output on to log and reports the address of the first
// line that starts with prefix.
type listenLine struct {
	prefix string
	found  chan string
	log    io.Writer

	mu   sync.Mutex
	buf  []byte
	sent bool
}

// Write scans complete lines for the prefix.
func (l *listenLine) Write(b []byte) (int, error) {
	_, _ = l.log.Write(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent {
		return len(b), nil
	}
	l.buf = append(l.buf, b...)
	end := strings.LastIndexByte(string(l.buf), '\n')
	if end < 0 {
		return len(b), nil
	}
	sc := bufio.NewScanner(strings.NewReader(string(l.buf[:end])))
	for sc.Scan() {
		if a, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), l.prefix); ok {
			l.sent = true
			l.buf = nil
			l.found <- a
			break
		}
	}
	if len(l.buf) > 64<<10 {
		l.buf = l.buf[len(l.buf)-4<<10:]
	}
	return len(b), nil
}
