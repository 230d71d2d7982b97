package starter

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// A resource workflow's static details link back to its console page, so
// an operator in the Temporal UI reaches the events, effects and acts.
func TestStartOptionsLinkTheWorkflowBackToTheConsole(t *testing.T) {
	t.Parallel()
	r := keys.Resource{Provider: "github", Account: "42", Environment: "live", Kind: "repository", ID: "octo/hello"}
	o := (&Resources{TaskQueue: "q", ConsoleURL: "https://ops.example.com/"}).StartOptions(r)
	require.Equal(t, "resource/github/42/live/repository/octo%2Fhello", o.ID)
	require.Contains(t, o.StaticDetails, "https://ops.example.com/resources/github%2F42%2Flive%2Frepository%2Focto%252Fhello")
	require.Empty(t, (&Resources{TaskQueue: "q"}).StartOptions(r).StaticDetails, "no console URL, no link")
}
