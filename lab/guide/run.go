package guide

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure a Session.
type Options struct {
	// Dir is the working directory the first block starts in.
	Dir string
	// Env is the shell's whole environment (nil: os.Environ()).
	Env []string
	// Timeout is a block's limit when its marker gives none (default 5m).
	Timeout time.Duration
	// Ready is how long a background step may take to be up when its
	// marker gives no timeout (default 2m).
	Ready time.Duration
	// StopGrace is how long a background step has to stop after its
	// SIGINT before its process group is killed (default 30s).
	StopGrace time.Duration
	// Replace holds pairs old, new: every block's text has each old
	// replaced by new before it runs. They are the test's stand-ins for
	// what must differ in a test (a shared path), declared where the test
	// calls Start and logged; never a newline.
	Replace []string
}

// Session is one reader's terminal: a bash process whose state carries
// from block to block. Close it.
type Session struct {
	o     Options
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{} // closed when the shell has exited
	err   error         // the shell's exit, once done is closed
	work  string
	nonce string
	n     int

	mu   sync.Mutex
	jobs []*job
}

// job is a background step: a subshell in its own process group.
type job struct {
	block Block
	pgid  int
	log   string
}

// Start starts the session's shell.
func Start(ctx context.Context, o Options) (*Session, error) {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Ready == 0 {
		o.Ready = 2 * time.Minute
	}
	if o.StopGrace == 0 {
		o.StopGrace = 30 * time.Second
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if len(o.Replace)%2 != 0 {
		return nil, errors.New("guide: Replace holds pairs")
	}
	for _, r := range o.Replace {
		if strings.Contains(r, "\n") {
			return nil, errors.New("guide: a replacement holds a newline (it would move the lines a failure names)")
		}
	}
	work, err := os.MkdirTemp("", "hookinbox-guide-")
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	s := &Session{o: o, lines: make(chan string, 1024), done: make(chan struct{}), work: work,
		nonce: "guide-" + hex.EncodeToString(nonce)}

	pr, pw, err := os.Pipe()
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	// Not CommandContext: a block's timeout kills the process group.
	s.cmd = exec.Command("bash", "--noprofile", "--norc", "-s") //nolint:noctx // stopped by Close or a block's timeout
	s.cmd.Dir = o.Dir
	s.cmd.Env = o.Env
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		pr.Close()
		pw.Close()
		os.RemoveAll(work)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		os.RemoveAll(work)
		return nil, fmt.Errorf("guide: start bash: %w", err)
	}
	pw.Close()
	go func() {
		r := bufio.NewReaderSize(pr, 64<<10)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				s.lines <- l
			}
			if err != nil {
				pr.Close()
				close(s.lines)
				return
			}
		}
	}()
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	// The ERR trap names the failing command and its line in the block's
	// file (LINENO of a sourced file counts from its first line).
	setup := strings.ReplaceAll(`set -Eeuo pipefail
__guide_err() { printf '\nNONCE err %d %d %s\n' "$1" "$2" "${BASH_COMMAND%%$'\n'*}" >&2; }
trap '__guide_err "$?" "$LINENO"' ERR
`, "NONCE", s.nonce)
	if _, err := io.WriteString(s.stdin, setup); err != nil {
		_ = s.Close()
		return nil, err
	}
	if _, err := s.exec(ctx, "true\n", time.Minute); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("guide: the shell did not start: %w", err)
	}
	return s, nil
}

// Failure is a block that did not run to its end.
type Failure struct {
	Block  Block
	Line   int    // the markdown line of the command that failed, 0 when unknown
	Cmd    string // that command
	Status int    // its exit status
	Reason string // what happened, when not an exit status
	Output string
}

func (f *Failure) Error() string {
	var b strings.Builder
	if f.Line > 0 {
		fmt.Fprintf(&b, "%s:%d: `%s` exited %d", f.Block.File, f.Line, f.Cmd, f.Status)
	} else {
		fmt.Fprintf(&b, "%s: %s", f.Block.Where(), f.Reason)
	}
	fmt.Fprintf(&b, " (the block at %s", f.Block.Where())
	if s := f.Block.Section(); s != "" {
		fmt.Fprintf(&b, ", under %q", s)
	}
	b.WriteString(")\n--- output ---\n")
	b.WriteString(f.Output)
	return b.String()
}

// Run runs b as its marker says and returns its output: a block's whole
// output, or a background step's output until it was up. A skipped block
// returns "". A failure is a *Failure.
func (s *Session) Run(ctx context.Context, b Block) (string, error) {
	switch {
	case b.Marker.Kind == Skip:
		return "", nil
	case b.Marker.InBackground():
		return s.background(ctx, b)
	}
	timeout := s.o.Timeout
	if b.Marker.Timeout > 0 {
		timeout = b.Marker.Timeout
	}
	return s.source(ctx, b, "block", timeout)
}

// source writes b's script to a file named after kind and sources it in
// the session: its output, or the failure naming b's file and line.
func (s *Session) source(ctx context.Context, b Block, kind string, timeout time.Duration) (string, error) {
	path, err := s.write(b, kind)
	if err != nil {
		return "", err
	}
	out, err := s.exec(ctx, fmt.Sprintf("source %s </dev/null\n", shellQuote(path)), timeout)
	if err != nil {
		return out, s.failure(b, path, out, err)
	}
	return out, nil
}

// Exec runs script in the session, as the reader's own command between
// blocks (what the test adds: a poll of status until pending 0). where
// names it in a failure.
func (s *Session) Exec(ctx context.Context, where, script string, timeout time.Duration) (string, error) {
	return s.source(ctx, Block{File: where, Text: script, Marker: Marker{Kind: Run}}, "exec", timeout)
}

// Output is a background step's output so far.
func (s *Session) Output(b Block) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		if j.block.File == b.File && j.block.Line == b.Line {
			out, err := os.ReadFile(j.log)
			return string(out), err == nil
		}
	}
	return "", false
}

func (s *Session) write(b Block, kind string) (string, error) {
	s.n++
	text := b.Text
	for i := 0; i < len(s.o.Replace); i += 2 {
		text = strings.ReplaceAll(text, s.o.Replace[i], s.o.Replace[i+1])
	}
	path := filepath.Join(s.work, fmt.Sprintf("%s-%03d.sh", kind, s.n))
	return path, os.WriteFile(path, []byte(text), 0o600)
}

// errExit is the shell's exit, with the failing command the ERR trap named.
type errExit struct {
	status, line int
	cmd          string
	reason       string
}

func (e *errExit) Error() string { return e.reason }

// exec sends command to the shell, followed by the end marker, and
// collects the output until it. The shell exiting, the timeout or ctx end
// it with an *errExit.
func (s *Session) exec(ctx context.Context, command string, timeout time.Duration) (string, error) {
	select {
	case <-s.done:
		return "", &errExit{reason: "the session's shell has exited (an earlier block failed)"}
	default:
	}
	if _, err := io.WriteString(s.stdin, command+fmt.Sprintf("printf '\\n%s end\\n'\n", s.nonce)); err != nil {
		return "", &errExit{reason: fmt.Sprintf("write to the shell: %v", err)}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var out strings.Builder
	var trapped *errExit
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				<-s.done
				e := &errExit{reason: fmt.Sprintf("the shell exited: %v", s.err)}
				if trapped != nil {
					e = trapped
				}
				return out.String(), e
			}
			i := strings.Index(l, s.nonce)
			if i < 0 {
				out.WriteString(l)
				continue
			}
			// Each marker line starts with a \n of its own: drop it.
			before := strings.TrimSuffix(out.String()+l[:i], "\n")
			out.Reset()
			out.WriteString(before)
			f := strings.Fields(l[i+len(s.nonce):])
			if len(f) > 0 && f[0] == "end" {
				return out.String(), nil
			}
			if len(f) >= 3 && f[0] == "err" {
				st, _ := strconv.Atoi(f[1])
				ln, _ := strconv.Atoi(f[2])
				trapped = &errExit{status: st, line: ln, cmd: strings.Join(f[3:], " "), reason: "exited"}
			}
		case <-timer.C:
			s.kill()
			return out.String(), &errExit{reason: fmt.Sprintf("timed out after %s (the session is killed)", timeout)}
		case <-ctx.Done():
			s.kill()
			return out.String(), &errExit{reason: fmt.Sprintf("stopped: %v", ctx.Err())}
		}
	}
}

func (s *Session) failure(b Block, path, out string, err error) error {
	// bash names the block's file and line ("…/block-001.sh: line 3: x:
	// unbound variable"): name the guide's.
	re := regexp.MustCompile(regexp.QuoteMeta(path) + `: line (\d+):`)
	bashLine := 0
	out = re.ReplaceAllStringFunc(out, func(m string) string {
		n, _ := strconv.Atoi(re.FindStringSubmatch(m)[1])
		bashLine = n
		return fmt.Sprintf("%s:%d:", b.File, b.Line+n)
	})
	f := &Failure{Block: b, Output: out}
	var e *errExit
	if errors.As(err, &e) {
		if e.line == 0 && bashLine > 0 {
			f.Reason = fmt.Sprintf("line %d: %s", b.Line+bashLine, e.reason)
		}
		if e.line > 0 {
			f.Line = b.Line + e.line
			f.Cmd, f.Status = e.cmd, e.status
		} else if f.Reason == "" {
			f.Reason = e.reason
		}
	} else {
		f.Reason = err.Error()
	}
	return f
}

// kill ends the shell (its process group) at once.
func (s *Session) kill() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
}

// background starts b in its own process group, with the shell's state,
// and waits until it is up.
func (s *Session) background(ctx context.Context, b Block) (string, error) {
	path, err := s.write(b, "background")
	if err != nil {
		return "", err
	}
	log := strings.TrimSuffix(path, ".sh") + ".log"
	pidFile := strings.TrimSuffix(path, ".sh") + ".pid"
	out, err := s.exec(ctx, fmt.Sprintf("set -m\n( source %s ) >%s 2>&1 </dev/null &\necho \"$!\" >%s\nset +m\n",
		shellQuote(path), shellQuote(log), shellQuote(pidFile)), time.Minute)
	if err != nil {
		return out, s.failure(b, path, out, err)
	}
	pid, _ := os.ReadFile(pidFile) //nolint:gosec // G304: the session's own file, in its temporary directory
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if pgid <= 0 {
		return out, &Failure{Block: b, Reason: "no process id for the background step", Output: out}
	}
	j := &job{block: b, pgid: pgid, log: log}
	s.mu.Lock()
	s.jobs = append(s.jobs, j)
	s.mu.Unlock()

	limit := s.o.Ready
	if b.Marker.Timeout > 0 {
		limit = b.Marker.Timeout
	}
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		text, _ := os.ReadFile(log) //nolint:gosec // G304: the session's own log, in its temporary directory
		up := b.Marker.Until == nil || b.Marker.Until.Match(text)
		if up {
			for _, u := range b.Marker.Ready {
				if !answers2xx(ctx, client, u) {
					up = false
					break
				}
			}
		}
		if up {
			return string(text), nil
		}
		if !groupAlive(pgid) {
			text, _ = os.ReadFile(log) //nolint:gosec // G304: the session's own log
			return string(text), &Failure{Block: b, Reason: "the background step ended before it was up" + s.waiting(b), Output: string(text)}
		}
		if time.Now().After(deadline) {
			return string(text), &Failure{Block: b, Reason: fmt.Sprintf("not up after %s%s", limit, s.waiting(b)), Output: string(text)}
		}
		select {
		case <-ctx.Done():
			return string(text), &Failure{Block: b, Reason: ctx.Err().Error(), Output: string(text)}
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *Session) waiting(b Block) string {
	var w []string
	if b.Marker.Until != nil {
		w = append(w, fmt.Sprintf("output matching %q", b.Marker.Until))
	}
	if len(b.Marker.Ready) > 0 {
		w = append(w, "2xx from "+strings.Join(b.Marker.Ready, " and "))
	}
	return " (waiting for " + strings.Join(w, ", then ") + ")"
}

func answers2xx(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// groupAlive reports whether a process of group pgid is running (not a
// zombie), from /proc.
func groupAlive(pgid int) bool {
	return len(groupMembers(pgid)) > 0
}

func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopJob sends SIGINT to the job's group, as Ctrl-C does, and SIGKILL
// after grace; it reports what it had to do.
func stopJob(j *job, grace time.Duration) error {
	if !groupAlive(j.pgid) {
		return nil
	}
	_ = syscall.Kill(-j.pgid, syscall.SIGINT)
	if waitGone(j.pgid, grace) {
		return nil
	}
	_ = syscall.Kill(-j.pgid, syscall.SIGKILL)
	if waitGone(j.pgid, 10*time.Second) {
		return fmt.Errorf("%s: the background step did not stop within %s of SIGINT; killed", j.block.Where(), grace)
	}
	return fmt.Errorf("%s: the background step's processes %v outlived SIGKILL", j.block.Where(), groupMembers(j.pgid))
}

func waitGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !groupAlive(pgid) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return !groupAlive(pgid)
}

// Close stops every background step, last started first, then the shell,
// and removes the session's files. It returns what did not stop on its
// SIGINT.
func (s *Session) Close() error {
	s.mu.Lock()
	jobs := s.jobs
	s.jobs = nil
	s.mu.Unlock()
	var errs []error
	for i := len(jobs) - 1; i >= 0; i-- {
		if err := stopJob(jobs[i], s.o.StopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	_ = s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.kill()
	}
	os.RemoveAll(s.work)
	return errors.Join(errs...)
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
