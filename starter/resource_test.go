package starter

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
)

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
