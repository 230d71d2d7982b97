package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrForbiddenAddress is returned when a destination resolves to an address
// outbound traffic may not reach (loopback, private, link-local…).
var ErrForbiddenAddress = errors.New("destination address not allowed")

// Guard decides which addresses outbound connections may reach. The zero
// Guard refuses loopback, private (RFC 1918, unique-local), link-local
// (including cloud metadata at 169.254.169.254), CGNAT, multicast and
// unspecified addresses, so a team destination URL cannot be pointed at the
// worker's own network (SSRF). AllowPrivate lifts that for local development
// and tests, where every destination is on loopback.
type Guard struct {
	AllowPrivate bool
}

// Allowed reports whether a connection to addr may be made.
func (g Guard) Allowed(addr netip.Addr) bool {
	if g.AllowPrivate {
		return true
	}
	addr = addr.Unmap()
	if addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() {
		return false
	}
	return !cgnat.Contains(addr)
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// control checks the address a dialer is about to connect to: after name
// resolution, so a hostname that resolves to a private address (or is
// re-bound to one between two lookups) is refused too.
func (g Guard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if !g.Allowed(ip) {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ip)
	}
	return nil
}

// Dialer returns a dialer that refuses addresses the guard does not allow.
func (g Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control}
}

// Client returns an HTTP client that dials through the guard and never
// follows redirects (a redirect could lead anywhere the guard would refuse,
// or replay the request's headers to another host). A 3xx answer is
// returned as is and treated as a rejection by the senders.
func (g Guard) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a proxy would dial for us, past the guard
	tr.DialContext = g.Dialer(timeout).DialContext
	return &http.Client{
		Timeout:       timeout,
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// dial connects through the guard.
func (g Guard) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	return g.Dialer(timeout).DialContext(ctx, "tcp", addr)
}

// origin is what an error may say about a destination: scheme and host,
// never the path or query (webhook URLs often carry their token there).
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparseable URL)"
	}
	return u.Scheme + "://" + u.Host
}

// transportError strips the request URL that net/http puts in its errors,
// keeping the cause.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Origin is a URL's scheme and host, never its path or query (which may
// carry the receiver's tokens): what notes, logs and the audit name.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host
}
