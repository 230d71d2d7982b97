package guide_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/guide"
)

// The guide tests run a guide's blocks as written against the local stack
// of `make run`, on its fixed ports, in a copy of the tree (so the
// developer's .data/ and .tools/bin are never touched). One at a time: the
// ports are the same.

// root is the checkout this package is in.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return r
}

// localStackTree is a copy of the checkout's files (tracked, and untracked
// but not ignored: the working tree as the developer has it), outside the
// tree, with a .tools of its own whose entries link to the checkout's pinned
// tools but whose bin/ is empty: what the guide's make builds goes there.
// It skips the test (fails it under CI=true) when the stack cannot run here:
// -short, the pinned tools not built, a fixed port taken.
func localStackTree(t *testing.T, extraPorts ...int) string {
	t.Helper()
	if testing.Short() {
		t.Skip("a guide test runs the local stack (not under -short)")
	}
	src := root(t)
	need := func(ok bool, msg string) {
		t.Helper()
		if ok {
			return
		}
		if devenv.CI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	_, err := os.Stat(filepath.Join(src, ".tools", "temporal-v1.5.1", "temporal"))
	need(err == nil, "the pinned Temporal CLI is not built (.tools/temporal-v1.5.1/temporal): make tools")
	_, err = exec.LookPath("make")
	need(err == nil, "no make on PATH")
	guide.RequireFreePorts(t, append(append([]int(nil), guide.LocalStackPorts...), extraPorts...)...)

	// Under the temporary directory, traversable: as root the stack's
	// PostgreSQL runs as the postgres user and must reach .data/.
	dst := t.TempDir()
	require.NoError(t, os.Chmod(dst, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dst), 0o755))
	ls := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var out, errb bytes.Buffer
	ls.Stdout, ls.Stderr = &out, &errb
	if err := ls.Run(); err != nil {
		need(false, "the guide tests copy the tree with git ls-files: "+err.Error()+": "+errb.String())
	}
	files := 0
	for _, name := range strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00") {
		top, _, _ := strings.Cut(name, "/")
		if name == "" || top == ".tools" || top == ".data" {
			continue
		}
		from := filepath.Join(src, name)
		fi, err := os.Lstat(from)
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		require.NoError(t, err)
		to := filepath.Join(dst, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(from)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(target, to))
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(from)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(to, b, fi.Mode().Perm()))
		default:
			continue
		}
		files++
	}
	ents, err := os.ReadDir(filepath.Join(src, ".tools"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dst, ".tools", "bin"), 0o755))
	for _, e := range ents {
		if e.Name() == "bin" {
			continue
		}
		require.NoError(t, os.Symlink(filepath.Join(src, ".tools", e.Name()), filepath.Join(dst, ".tools", e.Name())))
	}
	t.Logf("guide: the tree copied to %s (%d files; .tools links to the checkout's pinned tools, its bin/ is the copy's own)", dst, files)
	return dst
}

// readerEnv is a reader's terminal: nothing pointing the CLI at another
// stack, and -trimpath so that the copy's builds share the build cache
// with every other copy (they change nothing else).
func readerEnv() []string {
	return append(guide.ReaderEnv(os.Environ()), "GOFLAGS=-trimpath")
}

func parseGuide(t *testing.T, name string) *guide.Guide {
	t.Helper()
	g, err := guide.ParseFile(filepath.Join(root(t), name), name)
	require.NoError(t, err)
	return g
}

// statusSettled polls status (the reader's "when $B status says inbox
// pending 0") until nothing is pending, and returns its output.
func statusSettled(gt *guide.Test, bin string, timeout time.Duration) string {
	pending0 := regexp.MustCompile(`(?m)^inbox pending\s+0 `)
	return gt.Eventually("status until inbox pending 0", bin+" status || true\n", timeout, func(out string) bool {
		return pending0.MatchString(out)
	})
}

// TestReadmeTryIt runs README.md's "Try it" as written: make run (another
// terminal: in the background, until it is up), the endpoints, make lab,
// the simulator (in the background until every delivery is sent), then
// status, workspaces show and inbox list, and checks that they say what
// the README says: nothing pending, healthy, 100 credits granted once per
// paid invoice of the simulator's ground truth.
func TestReadmeTryIt(t *testing.T) {
	dir := localStackTree(t, 12111)
	g := parseGuide(t, "README.md")
	blocks := g.Under("Try it")
	require.Len(t, blocks, 4, "README.md's Try it: make run, the endpoints and make lab, the simulator, what converged")
	require.Equal(t, guide.AnotherTerminal, blocks[0].Marker.Kind, "make run runs in a terminal of its own")
	require.Equal(t, guide.Background, blocks[2].Marker.Kind, "the simulator runs until Ctrl-C")

	gt := guide.StartTest(t, guide.Options{Dir: dir, Env: readerEnv(), Timeout: 10 * time.Minute, StopGrace: time.Minute})
	outs := gt.Run(blocks[:3]...)
	sim := outs[2]
	m := regexp.MustCompile(`(?m)^truth: (\d+) paid invoices`).FindStringSubmatch(sim)
	require.NotNil(t, m, "the simulator prints its ground truth:\n%s", sim)
	paid, _ := strconv.Atoi(m[1])
	require.Positive(t, paid)
	dup := regexp.MustCompile(`(?m)faults: (\d+) duplicates`).FindStringSubmatch(sim)
	require.NotNil(t, dup, "the simulator prints its faults:\n%s", sim)
	t.Logf("the simulator: %d paid invoices, %s duplicates", paid, dup[1])

	statusSettled(gt, ".tools/bin/hookinbox", 3*time.Minute)
	outs = gt.Run(blocks[3])
	out := outs[0]
	require.Regexp(t, `(?m)^inbox pending\s+0 `, out, "status: pending 0")
	require.Regexp(t, `(?m)^inbox exhausted / failed\s+0 / 0$`, out)
	require.Regexp(t, `(?m)^outbox\s+pending 0, uncertain 0, held 0, failed 0, sent [1-9]`, out, "status: outbox sent …")
	require.Contains(t, out, "\nhealthy\n", "status: healthy")
	ws := regexp.MustCompile(`(?m)^ws_sim\s+(\d+)\s+true\s`).FindStringSubmatch(out)
	require.NotNil(t, ws, "workspaces show ws_sim: its credits and access:\n%s", out)
	require.Equal(t, strconv.Itoa(100*paid), ws[1], "100 credits per paid invoice of the simulator's truth, once, whatever was duplicated")
	require.Regexp(t, `granted 100 credits for in_|already granted by stripe/`, out, "inbox list: what each event did")

	// Past the README's first page: every paid invoice granted once, every
	// second event of one found it granted.
	second := regexp.MustCompile(`paid invoices \((\d+) second events\)`).FindStringSubmatch(sim)
	require.NotNil(t, second)
	all := gt.Exec("the test's inbox list --limit 200", ".tools/bin/hookinbox inbox list --limit 200\n", time.Minute)
	require.Equal(t, paid, strings.Count(all, "granted 100 credits for in_"), "one grant per paid invoice:\n%s", all)
	require.Equal(t, second[1], strconv.Itoa(strings.Count(all, "already granted by stripe/")), "each second event finds its invoice granted:\n%s", all)
}

// TestForwardRoutesTryItLocally runs docs/forward-routes.md's "Try it
// locally" as written beside make run: the route's secret and a GitHub
// endpoint, examples/forward-receiver (another terminal: in the background
// until it listens), the route, three pushes sent (one twice), and the
// inbox and explain; it checks that the service applied each push once
// under the route, and that the inbox and explain say the forward was done.
// The section's Add a route block (a production host) is skipped by its
// marker.
func TestForwardRoutesTryItLocally(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if devenv.CI() {
			t.Fatal("docs/forward-routes.md's Try it locally needs node (Node 18 or later) on PATH")
		}
		t.Skip("no node on PATH: docs/forward-routes.md's Try it locally runs examples/forward-receiver")
	}
	dir := localStackTree(t, 9300)
	g := parseGuide(t, "docs/forward-routes.md")
	add := g.Under("Add a route")
	require.Len(t, add, 1)
	require.Equal(t, guide.Skip, add[0].Marker.Kind, "the production host's block is not run")
	blocks := g.Under("Try it locally")
	require.Len(t, blocks, 4, "the secret and endpoint, the service, the route and send, the inbox and explain")
	require.Equal(t, guide.AnotherTerminal, blocks[1].Marker.Kind)

	// make run, as README.md's Try it starts it: the same block.
	readme := parseGuide(t, "README.md").Under("Try it")
	require.Equal(t, guide.AnotherTerminal, readme[0].Marker.Kind)
	require.Equal(t, "make run\n", readme[0].Text)

	gt := guide.StartTest(t, guide.Options{Dir: dir, Env: readerEnv(), Timeout: 10 * time.Minute, StopGrace: time.Minute})
	gt.Run(readme[0])
	outs := gt.Run(blocks[:3]...)
	require.Contains(t, outs[2], "local-push", "routes list shows the route")

	// The service applies each push once, the duplicate delivery included.
	applied := regexp.MustCompile(`(?m)^\{"operation_key":.*"route":"local-push".*"event_key":"(github/octo-org/test/[^"]+)"|^\{"operation_key":.*"event_key":"(github/octo-org/test/[^"]+)".*"route":"local-push"`)
	var lines [][]string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, ok := gt.Output(blocks[1])
		require.True(t, ok)
		lines = applied.FindAllStringSubmatch(out, -1)
		if len(lines) >= 3 || time.Now().After(deadline) {
			require.Len(t, lines, 3, "three pushes, each applied once by the service:\n%s", out)
			break
		}
		time.Sleep(time.Second)
	}
	keys := map[string]bool{}
	for _, l := range lines {
		keys[l[1]+l[2]] = true
	}
	require.Len(t, keys, 3, "three distinct events: %v", keys)

	gt.Eventually("inbox list until every push is done", ".tools/bin/hookinbox inbox list --endpoint gh-forward --status pending,ignored --limit 5\n",
		time.Minute, func(out string) bool { return !strings.Contains(out, "github/octo-org/") })
	outs = gt.Run(blocks[3])
	out := outs[0]
	for k := range keys {
		require.Contains(t, out, k, "inbox list shows each push")
	}
	require.Len(t, regexp.MustCompile(`(?m)^\S+ \S+\s+\S+\s+github/octo-org/test/\S+\s+push\s.*\sdone\s+1\s+forwarded to http://127\.0\.0\.1:9300: HTTP 200 `).FindAllString(out, -1), 3,
		"inbox list: each push done, forwarded once:\n%s", out)
	require.Len(t, regexp.MustCompile(`(?m)^local-push\s+\S+\s+1\s+done\s+200\s`).FindAllString(out, -1), 3,
		"explain event: the resource's three forward attempts, each the first and done:\n%s", out)
}
