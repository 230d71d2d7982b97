package workflows

import (
	"testing"

	"go.temporal.io/sdk/converter"
)

func converterFrom(t *testing.T) converter.DataConverter {
	t.Helper()
	return converter.GetDefaultDataConverter()
}
