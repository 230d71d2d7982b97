package devenv

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The local stack (`make run`) is not a server: every socket PostgreSQL,
// the Temporal dev server (gRPC, UI, HTTP API, metrics) and Mailpit listen
// on is bound to loopback, and none answers on the machine's other
// addresses. The processes are started by the same functions runDev uses;
// their listening sockets are read from /proc.
func TestLocalStackListensOnLoopbackOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, Temporal and Mailpit")
	}
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("needs Linux /proc to list listening sockets")
	}
	t.Parallel()
	root, err := FindRoot()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	free := func() int {
		p, err := FreePort()
		require.NoError(t, err)
		return p
	}

	dir, err := os.MkdirTemp("", "hookinbox-loopback-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	pg, err := StartPostgres(ctx, PostgresOptions{Dir: dir, Port: free(), Ephemeral: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop() })
	require.True(t, pg.Started())
	procs := map[string]*proc{"postgres": pg.started}

	if bin, err := TemporalCLI.Path(root); err == nil && isExecutable(bin) {
		tp, err := StartTemporal(ctx, TemporalOptions{Binary: bin, Port: free(), UIPort: free(), Log: io.Discard})
		require.NoError(t, err)
		t.Cleanup(func() { _ = tp.Stop() })
		procs["temporal"] = tp.started
	} else {
		t.Log("temporal CLI not built (make tools): not checked")
	}
	if bin, err := MailpitTool.Path(root); err == nil && isExecutable(bin) {
		mp, err := StartMailpit(ctx, MailpitOptions{Binary: bin, SMTPPort: free(), HTTPPort: free(),
			DBFile: filepath.Join(t.TempDir(), "mailpit.db"), Log: io.Discard})
		require.NoError(t, err)
		t.Cleanup(func() { _ = mp.Stop() })
		procs["mailpit"] = mp.started
	} else {
		t.Log("mailpit not built (make tools): not checked")
	}

	others := nonLoopbackIPs(t)
	for name, p := range procs {
		addrs := listeningOn(t, p.cmd.Process.Pid)
		require.NotEmpty(t, addrs, "%s listens on nothing?", name)
		for _, a := range addrs {
			require.True(t, a.Addr().IsLoopback(), "%s listens on %s, not loopback", name, a)
			// The attack: reach the same port on another address of this machine.
			for _, ip := range others {
				c, err := net.DialTimeout("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(int(a.Port()))), time.Second)
				if err == nil {
					c.Close()
				}
				require.Error(t, err, "%s answers on %s:%d", name, ip, a.Port())
			}
		}
		t.Logf("%s listens on %v", name, addrs)
	}
}

// nonLoopbackIPs are this machine's other addresses (none: the dial half of
// the check has nothing to try).
func nonLoopbackIPs(t *testing.T) []net.IP {
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	var out []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			out = append(out, n.IP)
		}
	}
	return out
}

// listening returns the TCP addresses pid (a process group leader, and
// its children: PostgreSQL's postmaster holds the sockets) listens on.
func listeningOn(t *testing.T, pid int) []netip.AddrPort {
	t.Helper()
	inodes := map[string]bool{}
	for _, p := range append([]int{pid}, children(pid)...) {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", p))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] { // 0A: LISTEN
				continue
			}
			out = append(out, parseProcAddr(t, fields[1]))
		}
		f.Close()
	}
	return out
}

func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(s); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// parseProcAddr decodes "0100007F:1F90": the address in 32-bit words of
// host byte order (little-endian here), the port big-endian.
func parseProcAddr(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	hexIP, hexPort, ok := strings.Cut(s, ":")
	require.True(t, ok, s)
	raw, err := hex.DecodeString(hexIP)
	require.NoError(t, err)
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	require.NoError(t, err)
	ip, ok := netip.AddrFromSlice(raw)
	require.True(t, ok, s)
	return netip.AddrPortFrom(ip.Unmap(), uint16(port))
}
