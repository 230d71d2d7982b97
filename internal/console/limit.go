package console

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Credential attempts per client. Every token, session or login form a
// client presents takes one (a database lookup); a good one gives it back.
// A client guessing tokens gets a burst of attemptBurst, then one attempt
// every attemptEvery, and its refused attempts cost no query.
const (
	attemptBurst = 10
	attemptEvery = 6 * time.Second
	// maxClients bounds the clients remembered; idle ones (a full bucket)
	// are forgotten first.
	maxClients = 10000
)

// attempts limits credential attempts per client address.
type attempts struct {
	mu      sync.Mutex
	clients map[string]*clientAttempts
	now     func() time.Time
}

// clientAttempts is one client's token bucket.
type clientAttempts struct {
	tokens float64
	at     time.Time // when tokens was computed
}

func newAttempts() *attempts {
	return &attempts{clients: map[string]*clientAttempts{}, now: time.Now}
}

// clientOf is the address a request comes from (the host of RemoteAddr; a
// proxy in front of the console makes every client one, which the limit
// then shares).
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// refill brings c's bucket to now (a.mu is held).
func (c *clientAttempts) refill(now time.Time) {
	c.tokens = min(attemptBurst, c.tokens+float64(now.Sub(c.at))/float64(attemptEvery))
	c.at = now
}

// take takes one attempt for r's client. It returns false when the client
// has none left; otherwise give, called when the credential was good,
// hands the attempt back.
func (a *attempts) take(r *http.Request) (give func(), ok bool) {
	client := clientOf(r)
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	c, found := a.clients[client]
	if !found {
		if len(a.clients) >= maxClients {
			a.forget(now)
		}
		c = &clientAttempts{tokens: attemptBurst, at: now}
		a.clients[client] = c
	}
	c.refill(now)
	if c.tokens < 1 {
		return nil, false
	}
	c.tokens--
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		c.tokens = min(attemptBurst, c.tokens+1)
	}, true
}

// forget drops the clients whose bucket has refilled (a.mu is held), or
// every client when none has.
func (a *attempts) forget(now time.Time) {
	for k, c := range a.clients {
		if c.refill(now); c.tokens >= attemptBurst {
			delete(a.clients, k)
		}
	}
	if len(a.clients) >= maxClients {
		clear(a.clients)
	}
}

// retryAfter is what a limited client is told to wait, in seconds.
func retryAfter() string { return "6" }
