package devenv

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TemporalOptions describe a Temporal dev server.
type TemporalOptions struct {
	// Binary is the temporal CLI (TemporalCLI.Ensure builds it).
	Binary string
	// DBFile persists workflows across restarts; empty keeps them in memory.
	DBFile string
	// Port of the gRPC frontend; UIPort of the Web UI (0 disables the UI).
	Port   int
	UIPort int
	// SearchAttributes to register at start: name → type (Keyword, Int, …).
	SearchAttributes map[string]string
	// Nice is the server's CPU niceness (0: the caller's; see
	// DefaultTemporalNice).
	Nice int
	// Log receives the server's output; Progress one-line status messages.
	Log      io.Writer
	Progress io.Writer
}

// DefaultTemporalNice is the niceness the local stack gives the dev server.
// On one machine the intake, the worker and the server share the cores; the
// intake's acknowledgement is what a provider waits for (and times out on),
// while what the server does with a doorbell can wait a few milliseconds.
// A positive niceness lets the kernel give the acknowledgements the CPU
// first, as production does by running Temporal on its own hosts; when the
// intake is idle the server still has every core (niceness is a weight, not
// a cap).
const DefaultTemporalNice = 10

// Temporal is a running Temporal server, started here or found running:
// the CLI's dev server (StartTemporal) or, with pg set, go.temporal.io/server
// on PostgreSQL (StartTemporalPostgres).
type Temporal struct {
	Address string
	UIURL   string
	opts    TemporalOptions
	pg      *TemporalPostgresOptions
	started *proc
}

// StartTemporal starts the dev server, or reuses whatever already listens on
// the port (the caller then registers search attributes through the API).
func StartTemporal(ctx context.Context, o TemporalOptions) (*Temporal, error) {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	t := &Temporal{Address: "127.0.0.1:" + strconv.Itoa(o.Port), opts: o}
	if o.UIPort > 0 {
		t.UIURL = fmt.Sprintf("http://127.0.0.1:%d", o.UIPort)
	}
	if listening(t.Address) {
		fmt.Fprintf(o.Progress, "temporal: reusing the server already on %s\n", t.Address)
		return t, nil
	}
	return t, t.start(ctx)
}

func (t *Temporal) start(ctx context.Context) error {
	if t.pg != nil {
		return t.startPostgres(ctx)
	}
	o := t.opts
	// Loopback only: gRPC, the UI, and the HTTP API and metrics ports the
	// dev server opens on --ip.
	args := []string{"server", "start-dev", "--ip", "127.0.0.1", "--port", strconv.Itoa(o.Port),
		"--log-level", "warn",
		// WAL and synchronous=normal: ~3× the throughput of the default
		// flush-per-commit on one SQLite connection (ARCHITECTURE.md).
		"--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
		// Eager activities: an activity scheduled by a workflow task is
		// handed to the worker in the answer to that task's completion
		// (fewer round trips through matching on a one-shard server).
		"--dynamic-config-value", "system.enableActivityEagerExecution=true",
	}
	if o.UIPort > 0 {
		// The UI follows --ip by default; said explicitly so that no
		// future default opens it wider.
		args = append(args, "--ui-ip", "127.0.0.1", "--ui-port", strconv.Itoa(o.UIPort))
	} else {
		args = append(args, "--headless")
	}
	if o.DBFile != "" {
		args = append(args, "--db-filename", o.DBFile)
	}
	args = append(args, searchAttributeArgs(o.SearchAttributes)...)
	if len(o.SearchAttributes) > 0 {
		// They exist before the first request, so the search attribute
		// cache can be trusted as a production server trusts it. The CLI
		// turns it off by default (so that an attribute created later is
		// usable at once) and then reads the cluster metadata from SQLite
		// on every start, visibility write and workflow task: 3-4% of the
		// dev server's CPU under load. An attribute created later with
		// `temporal operator search-attribute create` takes up to the
		// cache's refresh interval (a minute) to be usable.
		args = append(args, "--dynamic-config-value", "system.forceSearchAttributesCacheRefreshOnRead=false")
	}
	p, err := startProc("temporal", niced(o.Nice, o.Binary, args), o.Log, nil)
	if err != nil {
		return err
	}
	if err := waitTCP(ctx, t.Address, 90*time.Second, p); err != nil {
		p.kill()
		return fmt.Errorf("temporal dev server: %w", err)
	}
	// An open port is not a served frontend: for a moment the server
	// answers "Frontend is not healthy yet", which the SDK's dial does not
	// wait out (a soak's dial failed on it once in CI).
	if err := waitUntil(ctx, p, 90*time.Second, "serving on "+t.Address, func() bool { return frontendServing(ctx, t.Address) }); err != nil {
		p.kill()
		return fmt.Errorf("temporal dev server: %w", err)
	}
	t.started = p
	msg := "temporal: dev server started on " + t.Address
	if t.UIURL != "" {
		msg += ", UI " + t.UIURL
	}
	fmt.Fprintln(o.Progress, msg)
	return nil
}

// Started reports whether this process started the server.
func (t *Temporal) Started() bool { return t.started != nil }

// Stop shuts down a server this process started.
func (t *Temporal) Stop() error {
	if t == nil || t.started == nil {
		return nil
	}
	err := t.started.stop(syscall.SIGTERM, 20*time.Second)
	t.started = nil
	return err
}

// Kill ends a server this process started at once, as a crash would
// (tests of Temporal outages).
func (t *Temporal) Kill() {
	if t == nil || t.started == nil {
		return
	}
	t.started.kill()
	t.started = nil
}

// Restart starts a stopped or killed server again with the same options.
// With a DBFile (dev server) or on PostgreSQL, its workflows survive.
func (t *Temporal) Restart(ctx context.Context) error {
	if t.started != nil {
		return fmt.Errorf("temporal server is still running")
	}
	return t.start(ctx)
}

// niced runs bin with args at niceness n through nice(1), so that every
// thread of the process has it (setpriority on a running process changes
// one thread only). Without nice(1) on PATH, the command runs as is.
func niced(n int, bin string, args []string) *exec.Cmd {
	if n != 0 {
		if nice, err := exec.LookPath("nice"); err == nil {
			return exec.Command(nice, append([]string{"-n", strconv.Itoa(n), bin}, args...)...)
		}
	}
	return exec.Command(bin, args...)
}

// searchAttributeArgs are the --search-attribute flags both engines take,
// in name order.
func searchAttributeArgs(attrs map[string]string) []string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var args []string
	for _, n := range names {
		args = append(args, "--search-attribute", n+"="+attrs[n])
	}
	return args
}

// frontendServing reports whether the frontend at addr says, through the
// gRPC health service, that it serves the workflow service (what the SDK's
// dial checks before anything else).
func frontendServing(ctx context.Context, addr string) bool {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{Service: workflowService})
	return err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

// workflowService is the frontend's gRPC service, as its health check names it.
const workflowService = "temporal.api.workflowservice.v1.WorkflowService"
