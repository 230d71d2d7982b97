package e2e

import (
	"testing"

	"github.com/hookinbox/hookinbox/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
