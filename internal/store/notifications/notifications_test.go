package notifications_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/secretbox"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/internal/store/endpoints"
	"github.com/hookinbox/hookinbox/internal/store/notifications"
	"github.com/hookinbox/hookinbox/lab/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func open(t *testing.T, url, role string) *store.Store {
	t.Helper()
	if role != "" {
		url = testenv.RoleURL(t, url, role)
	}
	s, err := store.Open(context.Background(), url, 4)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	s.Keys = testenv.Keys(t)
	return s
}

// A rule's secret is sealed at rest and bound to its rule; the worker opens
// it, the operator lists rules without it (and cannot read the sealed
// column at all), the intake cannot read rules.
func TestRuleSecretsAreSealedAndOnlyTheWorkerOpensThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	owner := open(t, url, "")
	r := notifications.Rule{Name: "hook", Triggers: []string{notify.TriggerEventFailed}, Channel: notify.ChannelWebhook,
		Target: "https://hooks.example.com/in", Secret: secret, Window: time.Minute, PendingAge: time.Minute, Enabled: true}
	require.NoError(t, notifications.Insert(ctx, owner.Pool, owner.Keys, r))
	require.ErrorIs(t, notifications.Insert(ctx, owner.Pool, owner.Keys, r), store.ErrConflict)
	var sealed []byte
	require.NoError(t, owner.Pool.QueryRow(ctx, `SELECT secret_sealed FROM notification_rules`).Scan(&sealed))
	require.False(t, bytes.Contains(sealed, []byte("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")), "sealed at rest")

	worker := open(t, url, store.RoleWorker)
	got, err := notifications.Open(ctx, worker, "hook")
	require.NoError(t, err)
	require.Equal(t, secret, got.Secret)
	require.Equal(t, time.Minute, got.Window)

	// Copied to another rule, the sealed value does not open there.
	require.NoError(t, notifications.Insert(ctx, owner.Pool, owner.Keys, notifications.Rule{Name: "other", Triggers: r.Triggers,
		Channel: notify.ChannelWebhook, Target: r.Target, Secret: "whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC0xMjM0", Window: time.Minute,
		PendingAge: time.Minute, Enabled: true}))
	_, err = owner.Pool.Exec(ctx, `UPDATE notification_rules SET secret_sealed = $1 WHERE name = 'other'`, sealed)
	require.NoError(t, err)
	_, err = notifications.Open(ctx, worker, "other")
	require.Error(t, err)

	operator := open(t, url, store.RoleOperator)
	rules, err := notifications.List(ctx, operator.Pool, false)
	require.NoError(t, err)
	require.Len(t, rules, 2)
	require.Empty(t, rules[0].Secret)
	_, err = notifications.RecentNotices(ctx, operator.Pool, "", 10)
	require.NoError(t, err)
	_, err = notifications.ListFiring(ctx, operator.Pool, "")
	require.NoError(t, err)
	_, err = notifications.Open(ctx, operator, "hook")
	require.True(t, store.IsPermissionDenied(err), "%v", err)
	require.Error(t, notifications.Delete(ctx, operator.Pool, "hook"), "read-only")

	intake := open(t, url, store.RoleIntake)
	_, err = notifications.List(ctx, intake.Pool, false)
	require.True(t, store.IsPermissionDenied(err), "%v", err)

	require.NoError(t, notifications.Delete(ctx, owner.Pool, "hook"))
	require.ErrorIs(t, notifications.Delete(ctx, owner.Pool, "hook"), fault.ErrNotFound)
	_, err = notifications.Get(ctx, owner.Pool, "hook")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

// 'secrets rotate-key' re-encrypts a rule's secret under the new key, and
// it still opens to the same value.
func TestRuleSecretsAreRekeyedWithTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner := open(t, testenv.DatabaseURL(t), "")
	require.NoError(t, notifications.Insert(ctx, owner.Pool, owner.Keys, notifications.Rule{Name: "chat", Triggers: []string{notify.TriggerQuarantine},
		Channel: notify.ChannelSlack, Target: "https://hooks.slack.com", Secret: "https://hooks.slack.com/services/T/B/TOKEN",
		Window: time.Minute, PendingAge: time.Minute, Enabled: true}))
	require.NoError(t, notifications.Insert(ctx, owner.Pool, owner.Keys, notifications.Rule{Name: "mail", Triggers: []string{notify.TriggerQuarantine},
		Channel: notify.ChannelEmail, Target: "a@example.com", Window: time.Minute, PendingAge: time.Minute, Enabled: true}))
	rotated, err := secretbox.ParseKeyFile([]byte(secretbox.GenerateKeyLine("k2") + "\n" + owner.Keys.CurrentID() + ":" + testenv.SecretsKey() + "\n"))
	require.NoError(t, err)
	moved := &store.Store{Pool: owner.Pool, Keys: rotated}
	counts, err := endpoints.Reseal(ctx, moved)
	require.NoError(t, err)
	got := map[string]int{}
	for _, c := range counts {
		got[c.Column] = c.Rekeyed
	}
	require.Equal(t, 1, got["notification_rules.secret"], "the Slack rule's; the email rule has none")
	r, err := notifications.Open(ctx, moved, "chat")
	require.NoError(t, err)
	require.Equal(t, rotated.CurrentID(), r.SecretKeyID)
	require.Equal(t, "https://hooks.slack.com/services/T/B/TOKEN", r.Secret)
	status, err := endpoints.SecretStatus(ctx, moved)
	require.NoError(t, err)
	require.Contains(t, status, endpoints.SecretKeyCount{Column: "notification_rules.secret", KeyID: rotated.CurrentID(), Count: 1})
}
