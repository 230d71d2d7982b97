package envfixture

import (
	"os"
	"testing"
)

func TestFixture(t *testing.T) { _ = os.Getenv("HOOKINBOX_TEST_ONLY") }
