package guide

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func session(t *testing.T, o Options) *Session {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	s, err := Start(t.Context(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func parse(t *testing.T, md string) *Guide {
	t.Helper()
	g, err := Parse("guide.md", md)
	require.NoError(t, err)
	return g
}

// The terminal's state carries from line to line and block to block:
// variables, exports, the working directory.
func TestASessionKeepsTheShellsStateAcrossBlocks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	g := parse(t, "```sh\nB=hello\nexport X=world\ncd sub\n```\n\ntext\n\n```bash\necho \"$B $X $(basename \"$PWD\")\"\nprintf 'no newline'\n```\n")
	s := session(t, Options{Dir: dir})
	out, err := s.Run(t.Context(), g.Blocks[0])
	require.NoError(t, err)
	require.Empty(t, out)
	out, err = s.Run(t.Context(), g.Blocks[1])
	require.NoError(t, err)
	require.Equal(t, "hello world sub\nno newline", out)
}

// A planted failing line fails its block with the markdown line of the
// command, and the session ends there, as set -e ends a script.
func TestAFailingLineFailsItsBlockAtItsLine(t *testing.T) {
	md := "# G\n\n## Step\n\n```sh\necho one\nfalse   # the planted failure\necho never\n```\n\n```sh\necho after\n```\n"
	g := parse(t, md)
	s := session(t, Options{})
	out, err := s.Run(t.Context(), g.Blocks[0])
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, 7, f.Line, "line 7 of guide.md is the false")
	require.Equal(t, 1, f.Status)
	require.Contains(t, f.Cmd, "false")
	require.Contains(t, out, "one")
	require.NotContains(t, out, "never")
	require.Contains(t, err.Error(), "guide.md:7: `false")
	require.Contains(t, err.Error(), `under "Step"`)
	t.Log(err)

	_, err = s.Run(t.Context(), g.Blocks[1])
	require.ErrorAs(t, err, &f)
	require.Contains(t, f.Reason, "has exited")
}

func TestAFailureInAPipeOrAnUnsetVariableFails(t *testing.T) {
	for name, body := range map[string]string{
		"pipe":    "false | cat\n",
		"unset":   "echo \"$NOT_SET_ANYWHERE\"\n",
		"command": "no-such-command-here\n",
	} {
		t.Run(name, func(t *testing.T) {
			g := parse(t, "```sh\n"+body+"```\n")
			s := session(t, Options{})
			_, err := s.Run(t.Context(), g.Blocks[0])
			var f *Failure
			require.ErrorAs(t, err, &f)
			t.Log(err)
		})
	}
}

func TestABlockThatOutlivesItsTimeoutFails(t *testing.T) {
	g := parse(t, "<!-- guide: run timeout=500ms -->\n```sh\necho started\nsleep 30\n```\n")
	s := session(t, Options{})
	began := time.Now()
	out, err := s.Run(t.Context(), g.Blocks[0])
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.Contains(t, f.Reason, "timed out after 500ms")
	require.Contains(t, out, "started")
	require.Less(t, time.Since(began), 10*time.Second)
}

// A background step starts with the terminal's state, the guide goes on
// once its output says it is up, and Close stops its process group.
func TestABackgroundStepIsWaitedForAndKilled(t *testing.T) {
	md := "```sh\nB=state\n```\n\n" +
		"<!-- guide: background until=\"^serving\" timeout=20s reason=\"runs until Ctrl-C\" -->\n" +
		"```sh\necho \"B is $B\"\nsleep 0.3\necho serving\nsh -c 'sleep 300; true'\n```\n\n" +
		"```sh\necho next\n```\n"
	g := parse(t, md)
	s := session(t, Options{StopGrace: 5 * time.Second})
	for _, b := range g.Blocks {
		_, err := s.Run(t.Context(), b)
		require.NoError(t, err)
	}
	out, ok := s.Output(g.Blocks[1])
	require.True(t, ok)
	require.Contains(t, out, "B is state\nserving")
	require.Len(t, s.jobs, 1)
	pgid := s.jobs[0].pgid
	require.GreaterOrEqual(t, len(groupMembers(pgid)), 2, "the subshell, its sh and the sleep")
	require.NoError(t, s.Close())
	require.Empty(t, groupMembers(pgid), "every process of the background step is gone")
}

// One that ignores Ctrl-C is killed, and Close says so.
func TestABackgroundStepThatIgnoresSIGINTIsKilled(t *testing.T) {
	g := parse(t, "<!-- guide: another-terminal until=\"up\" reason=\"x\" -->\n```sh\ntrap '' INT\necho up\nwhile :; do sleep 0.1; done\n```\n")
	s := session(t, Options{StopGrace: 500 * time.Millisecond})
	_, err := s.Run(t.Context(), g.Blocks[0])
	require.NoError(t, err)
	pgid := s.jobs[0].pgid
	err = s.Close()
	require.Error(t, err)
	require.Contains(t, err.Error(), "did not stop within 500ms of SIGINT; killed")
	require.Empty(t, groupMembers(pgid))
}

func TestABackgroundStepWaitsForItsReadyURL(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	g := parse(t, "<!-- guide: background ready=\""+srv.URL+"/readyz\" timeout=20s reason=\"x\" -->\n```sh\nsleep 300\n```\n")
	s := session(t, Options{StopGrace: 5 * time.Second})
	_, err := s.Run(t.Context(), g.Blocks[0])
	require.NoError(t, err)
	require.GreaterOrEqual(t, calls.Load(), int32(3))
}

func TestABackgroundStepThatEndsOrNeverComesUpFails(t *testing.T) {
	g := parse(t, "<!-- guide: background until=\"never printed\" timeout=20s reason=\"x\" -->\n```sh\necho exiting\nexit 4\n```\n\n"+
		"<!-- guide: background until=\"never printed\" timeout=1s reason=\"x\" -->\n```sh\nsleep 300\n```\n")
	s := session(t, Options{StopGrace: 5 * time.Second})
	_, err := s.Run(t.Context(), g.Blocks[0])
	var f *Failure
	require.ErrorAs(t, err, &f)
	require.Contains(t, f.Reason, "ended before it was up")
	require.Contains(t, f.Output, "exiting")
	_, err = s.Run(t.Context(), g.Blocks[1])
	require.ErrorAs(t, err, &f)
	require.Contains(t, f.Reason, "not up after 1s")
}

func TestReplaceStandsInForAPath(t *testing.T) {
	g := parse(t, "```sh\necho file:///tmp/shared-proxy,direct\n```\n")
	s := session(t, Options{Replace: []string{"/tmp/shared-proxy", "/tmp/mine"}})
	out, err := s.Run(t.Context(), g.Blocks[0])
	require.NoError(t, err)
	require.Equal(t, "file:///tmp/mine,direct\n", out)

	_, err = Start(t.Context(), Options{Replace: []string{"a"}})
	require.Error(t, err)
	_, err = Start(t.Context(), Options{Replace: []string{"a", "b\nc"}})
	require.Error(t, err)
}

func TestASkippedBlockDoesNotRun(t *testing.T) {
	dir := t.TempDir()
	g := parse(t, "<!-- guide: skip reason=\"production-only host\" -->\n```sh\ntouch ran\n```\n")
	s := session(t, Options{Dir: dir})
	_, err := s.Run(t.Context(), g.Blocks[0])
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "ran"))
	require.True(t, errors.Is(err, os.ErrNotExist))
}

// The error a test prints names the failing line and shows the output.
func TestAFailureReadsWell(t *testing.T) {
	g := parse(t, "## Try it\n\n```sh\necho building\nexit 3\n```\n")
	s := session(t, Options{})
	_, err := s.Run(t.Context(), g.Blocks[0])
	require.Error(t, err)
	msg := err.Error()
	require.True(t, strings.HasPrefix(msg, "guide.md:"), msg)
	require.Contains(t, msg, "--- output ---\nbuilding")
	t.Log(msg)
}
