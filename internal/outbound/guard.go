package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// ErrForbiddenAddress is returned when a destination resolves to an address
// outbound traffic may not reach (loopback, private, link-local…).
var ErrForbiddenAddress = errors.New("destination address not allowed")

// Guard decides which addresses outbound connections may reach. The zero
// Guard allows global unicast addresses only, so a team destination URL
// cannot be pointed at the worker's own network (SSRF): it refuses
// loopback, private (RFC 1918, unique-local), link-local (including cloud
// metadata at 169.254.169.254), CGNAT, multicast, unspecified and every
// other special-purpose block (0.0.0.0/8, 192.0.0.0/24, the benchmarking
// 198.18.0.0/15, the reserved 240.0.0.0/4, site-local fec0::/10,
// IPv4-compatible ::/96, documentation, discard-only…). An IPv6 address
// that carries an IPv4 address (NAT64 64:ff9b::/96, 6to4 2002::/16,
// IPv4-mapped) is judged by the IPv4 address it carries; local-use NAT64
// (64:ff9b:1::/48) and Teredo, whose embedding depends on the site, are
// refused. AllowPrivate lifts all of it for local development and tests,
// where every destination is on loopback.
type Guard struct {
	AllowPrivate bool
}

// Allowed reports whether a connection to addr may be made.
func (g Guard) Allowed(addr netip.Addr) bool {
	if g.AllowPrivate {
		return true
	}
	return globalUnicast(addr)
}

// globalUnicast reports whether addr is a global unicast address: one the
// public Internet routes, never one of the worker's own networks.
func globalUnicast(addr netip.Addr) bool {
	addr = addr.WithZone("").Unmap()
	if addr.Is6() {
		if v4, ok := embeddedIPv4(addr); ok {
			return globalUnicast(v4)
		}
		if !ipv6Global.Contains(addr) {
			return false // ::/8 (IPv4-compatible ::/96 too), 100::/64, fc00::/7, fe80::/10, fec0::/10, ff00::/8…
		}
	}
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return false
	}
	for _, p := range specialPurpose {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// embeddedIPv4 is the IPv4 address an IPv6 address of the well-known NAT64
// prefix (64:ff9b::/96, RFC 6052) or of 6to4 (2002::/16, RFC 3056)
// carries.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	ipv6Global = netip.MustParsePrefix("2000::/3")
	// specialPurpose are the blocks of the IANA special-purpose registries
	// that IsGlobalUnicast and IsPrivate let through.
	specialPurpose = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),       // "this network" (0.x reaches the host itself on Linux)
		netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
		netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
		netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64: the embedding is the site's
		netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ORCHID…)
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
	}
)

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
//
// Clients are shared, one per guard and timeout, so their connections are
// reused from one send to the next: a client made per send would pay a new
// connection (and TLS handshake) for every email, notice and forward, and
// leave each one idle for the transport's 90 s, thousands of open sockets
// at a few dozen sends a second. A connection kept for reuse was dialed
// through the guard, to an address it allowed.
func (g Guard) Client(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	key := clientKey{g, timeout}
	if c, ok := clients.Load(key); ok {
		return c.(*http.Client)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a proxy would dial for us, past the guard
	tr.DialContext = g.Dialer(timeout).DialContext
	// Sends run concurrently (one per resource workflow's activity), most
	// to one host (the email API, a team's service): keep enough idle
	// connections to it for them (net/http keeps 2 per host by default).
	tr.MaxIdleConnsPerHost = idleConnsPerHost
	c, _ := clients.LoadOrStore(key, &http.Client{
		Timeout:       timeout,
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	})
	return c.(*http.Client)
}

// idleConnsPerHost is how many idle connections a guarded client keeps to
// one host.
const idleConnsPerHost = 16

type clientKey struct {
	guard   Guard
	timeout time.Duration
}

// clients holds the guarded clients, by clientKey: a handful (the guards
// configured, the timeouts of the senders and of the forward routes).
var clients sync.Map

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
