package devenv

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNicedRunsEveryThreadAtTheNiceness: the process nice(1) starts has
// the niceness (threads it creates inherit it), and 0 runs the binary as is.
func TestNicedRunsEveryThreadAtTheNiceness(t *testing.T) {
	if _, err := exec.LookPath("nice"); err != nil {
		t.Skip("no nice(1) on PATH")
	}
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	require.Equal(t, []string{sleep, "5"}, niced(0, sleep, []string{"5"}).Args)

	cmd := niced(7, sleep, []string{"5"})
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { return niceness(t, cmd.Process.Pid) == 7 }, 5*time.Second, 20*time.Millisecond,
		"the exec'd binary runs at niceness 7")
}

// niceness reads field 19 of /proc/pid/stat (after the command name).
func niceness(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -100
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(f[16])
	require.NoError(t, err)
	return n
}
