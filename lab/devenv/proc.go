package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// proc is a child process of the local stack. It runs in its own process
// group (so a terminal's Ctrl-C reaches us, not it, and we stop things in
// order) and dies with us (Pdeathsig) if we crash.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProc(name string, cmd *exec.Cmd, logTo io.Writer, cred *syscall.Credential) (*proc, error) {
	cmd.Stdout = logTo
	cmd.Stderr = logTo
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the group, then SIGKILL after grace.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) error {
	if p == nil || p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("%s did not stop within %s; killed", p.name, grace)
}

// kill ends the process at once, as a crash would.
func (p *proc) kill() {
	if p == nil || p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// waitTCP waits until addr accepts connections, the process ends, or ctx/timeout.
func waitTCP(ctx context.Context, addr string, timeout time.Duration, p *proc) error {
	return waitUntil(ctx, p, timeout, "listening on "+addr, func() bool { return listening(addr) })
}

// waitUntil polls ready every 100 ms until it holds, p (when not nil)
// exits, timeout passes or ctx ends; what names the state waited for.
func waitUntil(ctx context.Context, p *proc, timeout time.Duration, what string, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited before %s: %v", p.name, what, p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not %s after %s", what, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func listening(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// unprivileged returns the credential to run PostgreSQL with: nil when we are
// not root, else the "postgres" user's (initdb and postgres refuse root).
func unprivileged() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New(`running as root needs an unprivileged "postgres" user for PostgreSQL (the Debian postgresql package creates it)`)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// chownTree gives dir to cred (no-op when cred is nil).
func chownTree(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return os.Chown(dir, int(cred.Uid), int(cred.Gid))
}
