package engine_test

import (
	"testing"

	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
