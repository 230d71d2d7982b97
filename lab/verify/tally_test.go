package verify_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/lab/verify"
)

func TestTallyRunCountsOneRunsRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, err := verify.TallyRun(b.ctx, b.st.Pool, acct, proj, ws)
	require.NoError(t, err)
	require.Equal(t, verify.Tally{Grants: 2, Reversals: 2, Voids: 1, Alerts: 1, Quarantined: 1, Backfilled: 1, InboxRows: 15, InboxDone: 15, Balance: 150}, got)

	b.exec(t, `UPDATE webhook_inbox SET status = 'pending', processed_at = NULL WHERE event_id = 'evt_a2'`)
	other, err := verify.TallyRun(b.ctx, b.st.Pool, "acct_other", "proj_other", ws)
	require.NoError(t, err)
	require.Equal(t, verify.Tally{Balance: 150}, other, "another run's accounts count none of these rows")
	got, err = verify.TallyRun(b.ctx, b.st.Pool, acct, proj, ws)
	require.NoError(t, err)
	require.Equal(t, int64(14), got.InboxDone)
}
