package soak

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/lab/devenv"
)

// Process kinds: the hookinbox subcommand each runs.
const (
	KindIntake = "webhook"
	KindWorker = "worker"
)

// fleet supervises the intake and worker processes: each slot runs one
// `hookinbox webhook` or `hookinbox worker` at a time, restarted after a
// deliberate kill (once its downtime passed) or an unexpected exit.
type fleet struct {
	binary string
	env    []string                      // shared environment (configuration by variables only)
	dbURL  func(role, app string) string // role "": the schema owner
	logDir string
	relay  *Relay
	logf   func(format string, args ...any)
	slots  []*slot
	stop   atomic.Bool
	// held: no process is (re)started meanwhile (PostgreSQL is down: a
	// process manager would wait for the database it depends on).
	held    atomic.Bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	exits   []string // unexpected exits, described
	kills   map[string]int
	crashes map[string]int
}

// slot is one supervised process position.
type slot struct {
	kind  string
	index int // among its kind
	relay int // relay slot of an intake
	name  string

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	addr     string
	killed   bool          // the current process was killed on purpose
	downtime time.Duration // before the restart after a kill
	up       atomic.Bool
	starts   int
}

func newFleet(binary string, env []string, dbURL func(role, app string) string, logDir string, relay *Relay, logf func(string, ...any)) *fleet {
	return &fleet{binary: binary, env: env, dbURL: dbURL, logDir: logDir, relay: relay, logf: logf,
		kills: map[string]int{}, crashes: map[string]int{}}
}

func (f *fleet) add(kind string, n int) {
	for i := range n {
		s := &slot{kind: kind, index: i, name: fmt.Sprintf("%s-%d", map[string]string{KindIntake: "intake", KindWorker: "worker"}[kind], i+1)}
		if kind == KindIntake {
			s.relay = i
		}
		f.slots = append(f.slots, s)
	}
}

// run starts every slot's supervisor.
func (f *fleet) run(ctx context.Context) {
	for _, s := range f.slots {
		f.wg.Add(1)
		go f.supervise(ctx, s)
	}
}

func (f *fleet) supervise(ctx context.Context, s *slot) {
	defer f.wg.Done()
	for !f.stop.Load() && ctx.Err() == nil {
		for f.held.Load() && !f.stop.Load() && ctx.Err() == nil {
			sleep(ctx, 200*time.Millisecond)
		}
		if err := f.start(ctx, s); err != nil {
			f.logf("%s: could not start: %v (retrying)", s.name, err)
			sleep(ctx, time.Second)
			continue
		}
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		go f.awaitReady(ctx, s, done)
		<-done
		s.up.Store(false)
		if s.kind == KindIntake {
			f.relay.SetBackend(s.relay, "")
		}
		if f.stop.Load() {
			return
		}
		s.mu.Lock()
		killed, down, state := s.killed, s.downtime, s.cmd.ProcessState
		s.killed = false
		s.mu.Unlock()
		if killed {
			sleep(ctx, down)
			continue
		}
		f.mu.Lock()
		f.crashes[s.kind]++
		msg := fmt.Sprintf("%s exited on its own (%v); log %s", s.name, state, filepath.Join(f.logDir, s.name+".log"))
		f.exits = append(f.exits, msg)
		f.mu.Unlock()
		f.logf("%s; restarting it", msg)
		sleep(ctx, time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// start launches the slot's process on a fresh port.
func (f *fleet) start(ctx context.Context, s *slot) error {
	port, err := devenv.FreePort()
	if err != nil {
		return err
	}
	mport, err := devenv.FreePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := append(append([]string(nil), f.env...),
		"DATABASE_URL="+f.dbURL("", "hookinbox-soak-app-"+s.name),
		// Each process as its own role, as a deployment runs them (without
		// its URL a process refuses to start): handlers run as the worker.
		"HOOKINBOX_INTAKE_DATABASE_URL="+f.dbURL(store.RoleIntake, "hookinbox-soak-app-"+s.name),
		"HOOKINBOX_WORKER_DATABASE_URL="+f.dbURL(store.RoleWorker, "hookinbox-soak-app-"+s.name),
		"HOOKINBOX_HTTP_ADDR="+addr,
		"HOOKINBOX_WORKER_ADDR=127.0.0.1:"+strconv.Itoa(mport),
		// An intake's internal listener (/metrics, /readyz) on the same
		// spare port: each process runs one of the two.
		"HOOKINBOX_INTERNAL_ADDR=127.0.0.1:"+strconv.Itoa(mport),
	)
	if s.kind == KindWorker {
		addr = "127.0.0.1:" + strconv.Itoa(mport)
	}
	logFile, err := os.OpenFile(filepath.Join(f.logDir, s.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	f.mu.Lock()
	bin := f.binary
	f.mu.Unlock()
	cmd := exec.Command(bin, s.kind) //nolint:noctx // the soak kills and restarts it on its own schedule, not on a context
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group (a terminal's Ctrl-C reaches the soak, which
	// stops things in order) and killed with the soak if it dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Under f.mu, so shutdown either sees this process or it never starts.
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stop.Load() {
		logFile.Close()
		return fmt.Errorf("%s: shutting down", s.name)
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done, s.addr = cmd, done, addr
	s.starts++
	s.mu.Unlock()
	return nil
}

// awaitReady marks the slot up once its /healthz answers; an intake then
// joins the relay.
func (f *fleet) awaitReady(ctx context.Context, s *slot, done chan struct{}) {
	s.mu.Lock()
	addr := s.addr
	s.mu.Unlock()
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			s.up.Store(true)
			if s.kind == KindIntake {
				f.relay.SetBackend(s.relay, addr)
			}
			return
		}
	}
}

// kill ends the slot's process with SIGKILL, as a crash would; it comes
// back after downtime. It returns the pid killed, or false when the process
// was not up.
func (f *fleet) kill(s *slot, downtime time.Duration) (int, bool) {
	s.mu.Lock()
	if s.cmd == nil || s.cmd.Process == nil || s.killed || !s.up.Load() {
		s.mu.Unlock()
		return 0, false
	}
	s.killed, s.downtime = true, downtime
	pid, done := s.cmd.Process.Pid, s.done
	s.mu.Unlock()
	_ = syscall.Kill(pid, syscall.SIGKILL)
	<-done
	f.mu.Lock()
	f.kills[s.kind]++
	f.mu.Unlock()
	return pid, true
}

// replace kills every process (SIGKILL, as a crash or a node's loss
// would, whatever it was doing), runs between while none may start, and
// has the slots come back on binary: an upgrade with work in flight.
func (f *fleet) replace(binary string, between func() error) error {
	f.held.Store(true)
	defer f.held.Store(false)
	for _, s := range f.slots {
		s.mu.Lock()
		if s.cmd != nil && s.cmd.Process != nil && s.cmd.ProcessState == nil {
			s.killed, s.downtime = true, 0
			pid, done := s.cmd.Process.Pid, s.done
			s.mu.Unlock()
			_ = syscall.Kill(pid, syscall.SIGKILL)
			<-done
			continue
		}
		s.mu.Unlock()
	}
	f.mu.Lock()
	f.binary = binary
	f.mu.Unlock()
	return between()
}

// allUp reports whether every slot's process answers its health check.
func (f *fleet) allUp() bool {
	for _, s := range f.slots {
		if !s.up.Load() {
			return false
		}
	}
	return true
}

// waitAllUp waits until every process is up.
func (f *fleet) waitAllUp(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !f.allUp() {
		if time.Now().After(deadline) {
			var down []string
			for _, s := range f.slots {
				if !s.up.Load() {
					down = append(down, s.name)
				}
			}
			return fmt.Errorf("processes not up after %s: %v (logs in %s)", timeout, down, f.logDir)
		}
		sleep(ctx, 200*time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// shutdown stops every process: SIGTERM, then SIGKILL after grace.
func (f *fleet) shutdown(grace time.Duration) {
	f.mu.Lock()
	f.stop.Store(true)
	f.mu.Unlock()
	var dones []chan struct{}
	for _, s := range f.slots {
		s.mu.Lock()
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			dones = append(dones, s.done)
		}
		s.mu.Unlock()
	}
	deadline := time.After(grace)
	for _, d := range dones {
		select {
		case <-d:
		case <-deadline:
		}
	}
	for _, s := range f.slots {
		s.mu.Lock()
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGKILL)
		}
		s.mu.Unlock()
	}
	f.wg.Wait()
}

// counts returns deliberate kills and unexpected exits by kind.
func (f *fleet) counts() (kills, crashes map[string]int, exits []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kills, crashes = map[string]int{}, map[string]int{}
	for k, v := range f.kills {
		kills[k] = v
	}
	for k, v := range f.crashes {
		crashes[k] = v
	}
	return kills, crashes, append([]string(nil), f.exits...)
}
