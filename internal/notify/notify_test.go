package notify_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/outbound"
)

// clock is a fake clock: the tests move it, nothing sleeps.
type clock struct{ now time.Time }

func (c *clock) advance(d time.Duration) time.Time { c.now = c.now.Add(d); return c.now }

// evaluator runs Decide over a sequence of observations as the store would:
// the state each call returns is the next call's, and the notices are kept.
type evaluator struct {
	t       *testing.T
	window  time.Duration
	state   notify.State
	notices []notify.Notice
}

func (e *evaluator) observe(now time.Time, o notify.Observation) *notify.Notice {
	e.t.Helper()
	n, ok, next := notify.Decide(e.state, o, now, e.window)
	e.state = next
	if !ok {
		return nil
	}
	e.notices = append(e.notices, n)
	return &n
}

func active(count, mark int64) notify.Observation {
	return notify.Observation{Active: true, Count: count, Mark: mark}
}

var cleared = notify.Observation{}

func setup(t *testing.T, window time.Duration) (*evaluator, *clock) {
	return &evaluator{t: t, window: window}, &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

func TestAConditionFiresOnceAndRecoversOnce(t *testing.T) {
	t.Parallel()
	e, c := setup(t, 15*time.Minute)
	start := c.now
	n := e.observe(c.now, active(2, 10))
	require.NotNil(t, n)
	require.Equal(t, notify.PhaseFiring, n.Phase)
	require.Equal(t, start, n.WindowStart, "a firing notice opens its window at its time")
	require.EqualValues(t, 2, n.Count)
	require.Equal(t, start, n.Since)

	// Within the window, however it grows: nothing more.
	for i := range 10 {
		require.Nil(t, e.observe(c.advance(time.Minute), active(int64(3+i), int64(11+i))))
	}
	// It clears (after the window here): one recovery notice, of the
	// firing notice's window, with the count at that notice.
	r := e.observe(c.advance(10*time.Minute), cleared)
	require.NotNil(t, r)
	require.Equal(t, notify.PhaseRecovered, r.Phase)
	require.Equal(t, start, r.WindowStart)
	require.EqualValues(t, 2, r.Count)
	require.Equal(t, start, r.Since)
	// Still clear: nothing.
	require.Nil(t, e.observe(c.advance(time.Minute), cleared))
	require.Nil(t, e.observe(c.advance(time.Hour), cleared))
	require.Len(t, e.notices, 2)
}

func TestNothingWhileNothingHolds(t *testing.T) {
	t.Parallel()
	e, c := setup(t, time.Minute)
	for range 5 {
		require.Nil(t, e.observe(c.advance(time.Minute), cleared))
	}
	require.False(t, e.state.Firing)
	require.True(t, e.state.WindowStart.IsZero())
}

// A flapping condition sends at most one firing and one recovery notice
// per window: a re-fire within the window waits for its end, and goes only
// if it still holds then.
func TestFlappingWithinAWindowIsGrouped(t *testing.T) {
	t.Parallel()
	e, c := setup(t, 15*time.Minute)
	w1 := c.now
	require.NotNil(t, e.observe(c.now, active(1, 1)))
	require.Equal(t, notify.PhaseRecovered, e.observe(c.advance(time.Minute), cleared).Phase)
	// Back within the window: held back.
	require.Nil(t, e.observe(c.advance(time.Minute), active(1, 2)))
	require.True(t, e.state.Firing)
	require.False(t, e.state.Announced)
	// Clears again within it: nothing was announced, nothing to recover.
	require.Nil(t, e.observe(c.advance(time.Minute), cleared))
	require.Nil(t, e.observe(c.advance(time.Minute), active(1, 3)))
	require.Len(t, e.notices, 2, "one firing and one recovery in the first window")

	// Past the window and still holding: the held-back notice goes, and
	// opens the next window.
	n := e.observe(c.advance(12*time.Minute), active(4, 5))
	require.NotNil(t, n)
	require.Equal(t, notify.PhaseFiring, n.Phase)
	require.Equal(t, c.now, n.WindowStart)
	require.True(t, n.WindowStart.Sub(w1) >= 15*time.Minute, "a window apart")
	require.Equal(t, c.now.Add(-12*time.Minute), n.Since, "firing since it came back")
	r := e.observe(c.advance(time.Minute), cleared)
	require.Equal(t, n.WindowStart, r.WindowStart, "its recovery is of the new window")

	// One notice key per (window, phase): never two alike.
	seen := map[string]bool{}
	for _, x := range e.notices {
		k := notify.OperationKey("oncall", notify.TriggerEventFailed, "stripe", x.WindowStart, x.Phase)
		require.False(t, seen[k], "notice %s decided twice", k)
		seen[k] = true
	}
	require.Len(t, seen, 4)
}

// Still firing past the window notifies again only when it grew (a newer
// item than at the last notice), with both counts; unchanged, it stays
// quiet until it clears.
func TestStillFiringNotifiesAgainOnlyWhenItGrew(t *testing.T) {
	t.Parallel()
	e, c := setup(t, 10*time.Minute)
	require.NotNil(t, e.observe(c.now, active(2, 7)))
	require.Nil(t, e.observe(c.advance(11*time.Minute), active(2, 7)), "same items: quiet")
	require.Nil(t, e.observe(c.advance(30*time.Minute), active(1, 7)), "fewer: quiet")
	n := e.observe(c.advance(time.Minute), active(3, 9))
	require.NotNil(t, n, "a newer item, past the window")
	require.Equal(t, notify.PhaseFiring, n.Phase)
	require.EqualValues(t, 3, n.Count)
	require.EqualValues(t, 2, n.Previous)
	require.Nil(t, e.observe(c.advance(time.Minute), active(5, 12)), "within the new window: quiet")
	r := e.observe(c.advance(time.Minute), cleared)
	require.Equal(t, n.WindowStart, r.WindowStart)
	require.EqualValues(t, 3, r.Count, "the count at the last notice")
}

// A decision repeated on the same stored state (an evaluation retried, or
// a second worker racing: the store serializes them on the state's lock,
// so the second sees the first's state) decides nothing more.
func TestDecidingAgainOnTheStoredStateDecidesNothing(t *testing.T) {
	t.Parallel()
	window := 15 * time.Minute
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	_, ok, s := notify.Decide(notify.State{}, active(1, 1), now, window)
	require.True(t, ok)
	_, ok, _ = notify.Decide(s, active(1, 1), now, window)
	require.False(t, ok)
	_, ok, s = notify.Decide(s, cleared, now.Add(time.Second), window)
	require.True(t, ok)
	_, ok, _ = notify.Decide(s, cleared, now.Add(2*time.Second), window)
	require.False(t, ok)
}

func TestOperationKeysAreStablePerWindowAndPhase(t *testing.T) {
	t.Parallel()
	w := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	k := notify.OperationKey("oncall", notify.TriggerQuarantine, "stripe-sim", w, notify.PhaseFiring)
	require.Equal(t, "notification/oncall/quarantine_opened/stripe-sim/2026-12-01T11:00:00.123456Z/firing", k,
		"UTC, to the database's microsecond")
	require.Equal(t, k, notify.OperationKey("oncall", notify.TriggerQuarantine, "stripe-sim", w.Add(200*time.Nanosecond), notify.PhaseFiring))
	require.NotEqual(t, k, notify.OperationKey("oncall", notify.TriggerQuarantine, "stripe-sim", w, notify.PhaseRecovered))
	require.NotEqual(t, k, notify.OperationKey("oncall", notify.TriggerQuarantine, "stripe-sim", w.Add(time.Second), notify.PhaseFiring))
	// A subject with a '/' cannot forge another key.
	require.NotEqual(t, notify.OperationKey("a", "b", "c/d", w, "firing"), notify.OperationKey("a", "b/c", "d", w, "firing"))
	r := notify.Resource("hookinbox", "oncall")
	require.True(t, r.Valid())
	require.NotEqual(t, r, notify.Resource("staging", "oncall"), "another deployment's rule of the same name has its own workflow")
	back, err := keys.ParseResource(r.String())
	require.NoError(t, err)
	require.Equal(t, r, back, "the outbox sweeper parses it back")
}

func TestParseTriggers(t *testing.T) {
	t.Parallel()
	got, err := notify.ParseTriggers([]string{"pending_age, event_failed", "event_failed"})
	require.NoError(t, err)
	require.Equal(t, []string{notify.TriggerEventFailed, notify.TriggerPendingAge}, got, "each once, in order")
	got, err = notify.ParseTriggers([]string{"all"})
	require.NoError(t, err)
	require.Equal(t, notify.Triggers, got)
	_, err = notify.ParseTriggers([]string{"event_failed,disk_full"})
	require.ErrorContains(t, err, `unknown trigger "disk_full"`)
	require.ErrorContains(t, err, "quarantine_opened", "the error names the known ones")
	_, err = notify.ParseTriggers([]string{" , "})
	require.ErrorContains(t, err, "at least one trigger")
	_, err = notify.ParseTriggers(nil)
	require.Error(t, err)
}

func TestRenderedNoticesCarryCountsLinksAndTheirKey(t *testing.T) {
	t.Parallel()
	r := notify.Rule{Name: "oncall", Channel: notify.ChannelWebhook, Workspace: "ws_1", Window: 15 * time.Minute, PendingAge: 10 * time.Minute}
	w := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	links := notify.ConsoleLinks("http://console.example/", r, notify.TriggerEventFailed, "stripe-sim")
	require.Equal(t, []notify.Link{{Name: "Failed and exhausted events",
		URL: "http://console.example/inbox?endpoint=stripe-sim&status=exhausted%2Cfailed&workspace=ws_1"}}, links)
	d := notify.Render(r, notify.TriggerEventFailed, "stripe-sim", notify.Notice{Phase: notify.PhaseFiring, WindowStart: w, Count: 3, Previous: 1, Since: w},
		"", links)
	require.Equal(t, notify.TypeFiring, d.Type)
	require.Equal(t, "[hookinbox] FIRING: 3 events ended failed or exhausted (endpoint stripe-sim)", d.Title)
	require.Contains(t, d.Text, "Still firing: 3 now, 1 at the last notice.")
	require.Contains(t, d.Text, links[0].URL)
	require.Contains(t, d.Text, "Workspace ws_1 only.")
	require.Equal(t, w.Add(15*time.Minute), d.WindowEnd)
	require.Equal(t, notify.OperationKey("oncall", notify.TriggerEventFailed, "stripe-sim", w, notify.PhaseFiring), d.OperationKey)
	require.Equal(t, "ntf_"+outbound.StableID(d.OperationKey), d.Ref)
	require.Equal(t, outbound.WebhookID(d.OperationKey), "msg_"+strings.TrimPrefix(d.Ref, "ntf_"), "the ref is the webhook-id's")
	require.Contains(t, d.Text, "ref "+d.Ref)

	rec := notify.Render(r, notify.TriggerEventFailed, "stripe-sim", notify.Notice{Phase: notify.PhaseRecovered, WindowStart: w, Count: 3, Since: w}, "", nil)
	require.Equal(t, notify.TypeRecovered, rec.Type)
	require.Equal(t, "[hookinbox] RECOVERED: no failed or exhausted event left (endpoint stripe-sim)", rec.Title)
	require.Contains(t, rec.Text, "It was 3 at the last notice; firing since 2026-12-01T12:00:00Z.")
	require.NotEqual(t, d.OperationKey, rec.OperationKey)

	// The document's field names are a contract for receivers.
	b, err := json.Marshal(d)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, f := range []string{"type", "ref", "rule", "trigger", "phase", "subject_kind", "subject", "workspace", "channel", "count",
		"previous", "window_start", "window_end", "firing_since", "links", "subject_line", "text", "operation_key"} {
		require.Contains(t, m, f)
	}
	require.Equal(t, "endpoint", m["subject_kind"])
	require.Equal(t, "workspace", notify.SubjectKind(notify.TriggerOutbox))
	require.Equal(t, "schedule", notify.SubjectKind(notify.TriggerScheduleFailed))
	require.Nil(t, notify.ConsoleLinks("", r, notify.TriggerEventFailed, "x"), "no console URL, no links")
}
