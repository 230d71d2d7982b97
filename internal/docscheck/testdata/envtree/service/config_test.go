package service

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	t.Setenv("HOOKINBOX_SET_BY_A_TEST", "1")
	_, err := Load()
	require.ErrorContains(t, err, "HOOKINBOX_ASSERTED_ONLY")
	if os.Getenv("HOOKINBOX_FIXTURE_TEST_ONLY") != "" {
		t.Log("read by a test only")
	}
}
