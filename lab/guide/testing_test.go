package guide

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A port something listens on is taken, one nothing listens on is not, and
// the message names it.
func TestTakenPortsFindsAListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	freePort := free.Addr().(*net.TCPAddr).Port
	require.NoError(t, free.Close())

	require.Equal(t, []int{port}, TakenPorts(freePort, port))
	require.NoError(t, ln.Close())
	require.Empty(t, TakenPorts(port))
	require.Contains(t, PortsMessage([]int{port, 7233}), "127.0.0.1:"+strconv.Itoa(port)+", 7233 is taken")
}

// A reader's terminal points nowhere but the local stack: no DATABASE_URL,
// TEMPORAL_*, OTEL_* or HOOKINBOX_* but the pinned tools', no GOFLAGS.
func TestReaderEnvDropsWhatPointsElsewhere(t *testing.T) {
	env := ReaderEnv([]string{"PATH=/bin", "HOME=/root", "DATABASE_URL=postgres://x", "GOFLAGS=-mod=mod",
		"HOOKINBOX_TEST_DATABASE_URL=postgres://y", "HOOKINBOX_TEMPORAL_BIN=/t", "HOOKINBOX_CACHE_DIR=/c",
		"TEMPORAL_ADDRESS=x:7233", "OTEL_EXPORTER_OTLP_ENDPOINT=http://z", "CI=true"})
	require.Equal(t, "PATH=/bin HOME=/root HOOKINBOX_TEMPORAL_BIN=/t HOOKINBOX_CACHE_DIR=/c CI=true", strings.Join(env, " "))
}
