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

func TestSettingsForSetsTheIdlePolicyOfTheKind(t *testing.T) {
	t.Parallel()
	inv := keys.Resource{Provider: "stripe", Account: "acct_1", Environment: "test", Kind: "invoice", ID: "in_1"}
	sub := inv
	sub.Kind, sub.ID = "subscription", "sub_1"
	base := keys.Settings{IdleTimeout: 1, Send: keys.SendLocalFirst}

	s := &Resources{Settings: base, CompleteKinds: []string{"invoice"}}
	require.Equal(t, keys.IdleComplete, s.SettingsFor(inv).Idle)
	require.Equal(t, keys.IdleLinger, s.SettingsFor(sub).Idle)
	require.Equal(t, keys.SendLocalFirst, s.SettingsFor(inv).Send)
	require.Empty(t, s.Settings.Idle, "the base settings are not changed")

	// No kinds: every input is as before the policy existed.
	old := &Resources{Settings: keys.Settings{IdleTimeout: 1}}
	require.Empty(t, old.SettingsFor(inv).Idle)
	require.Empty(t, old.SettingsFor(sub).Idle)
}
