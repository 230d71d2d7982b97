package e2e

import (
	"testing"

	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
