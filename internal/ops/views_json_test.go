package ops_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
)

var (
	durationType  = reflect.TypeFor[time.Duration]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// customJSON are the view types that write their own JSON, each for its
// durations; TestDurationsInJSONAreSecondsWithTheUnitInTheName checks
// what each writes. A new one must be added there.
var customJSON = map[reflect.Type]bool{
	reflect.TypeFor[keys.Backlog]():     true,
	reflect.TypeFor[forwards.Attempt](): true,
	reflect.TypeFor[time.Time]():        true, // RFC 3339
	reflect.TypeFor[json.RawMessage]():  true,
}

// durationFields lists the JSON paths of t (reached from path) whose value
// is a time.Duration that encoding/json would write as nanoseconds.
func durationFields(t reflect.Type, path string, seen map[reflect.Type]bool, found *[]string, custom *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t == durationType {
		*found = append(*found, path)
		return
	}
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		if !customJSON[t] {
			*custom = append(*custom, path+" ("+t.String()+")")
		}
		return
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if f.Anonymous && f.Tag.Get("json") == "" {
			name = path // embedded: its fields are promoted
		} else {
			name = path + "." + name
		}
		durationFields(f.Type, name, seen, found, custom)
	}
}

// Every view an operator act returns (what the API answers and the CLI's
// --output json prints) gives a duration in seconds with the unit in its
// name, or as text: no time.Duration reaches JSON as nanoseconds. The
// views are every result of every method of ops.Service.
func TestNoViewWritesADurationAsNanoseconds(t *testing.T) {
	t.Parallel()
	st := reflect.TypeFor[*ops.Service]()
	var found, custom []string
	results := 0
	for i := range st.NumMethod() {
		m := st.Method(i)
		for j := range m.Type.NumOut() {
			out := m.Type.Out(j)
			if out == reflect.TypeFor[error]() {
				continue
			}
			results++
			durationFields(out, m.Name, map[reflect.Type]bool{}, &found, &custom)
		}
	}
	require.Greater(t, results, 40, "the walk reached the views")
	require.Empty(t, found, "durations marshalled as nanoseconds")
	require.Empty(t, custom, "views with their own MarshalJSON: check what each writes in TestDurationsInJSONAreSecondsWithTheUnitInTheName")
}

// The walk above finds a duration where one is, so its silence means
// something.
func TestTheDurationWalkFindsNanoseconds(t *testing.T) {
	t.Parallel()
	type inner struct {
		Wait time.Duration `json:"wait"`
		Hid  time.Duration `json:"-"`
	}
	type view struct {
		Items []inner          `json:"items"`
		Ptr   *time.Duration   `json:"ptr,omitempty"`
		ByKey map[string]inner `json:"by_key"`
	}
	var found, custom []string
	durationFields(reflect.TypeFor[view](), "V", map[reflect.Type]bool{}, &found, &custom)
	require.ElementsMatch(t, []string{"V.items.wait", "V.ptr"}, found)
	require.Empty(t, custom)
}

// GET /api/status's backlog gives the oldest pending age in seconds and,
// deprecated for one release, the nanoseconds it gave before; a forward
// attempt's latency is in seconds (forward routes are not released yet,
// so there is no old field).
func TestDurationsInJSONAreSecondsWithTheUnitInTheName(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(ops.StatusView{Database: "ok", Temporal: "ok",
		Backlog: &keys.Backlog{Pending: 3, OldestPendingAge: 92263783 * time.Microsecond, Outbox: map[string]int64{"pending": 1}}})
	require.NoError(t, err)
	var got struct {
		Backlog map[string]any `json:"backlog"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, 92.263783, got.Backlog["oldest_pending_age_seconds"])
	require.Equal(t, float64(92263783000), got.Backlog["oldest_pending_age"], "the deprecated field, unchanged")
	require.Equal(t, float64(3), got.Backlog["pending"])
	require.Equal(t, map[string]any{"pending": float64(1)}, got.Backlog["outbox"])
	require.Len(t, got.Backlog, 9, "every field of the backlog, once: %s", raw)

	raw, err = json.Marshal(forwards.Attempt{ID: 7, Route: "r", Outcome: forwards.OutcomeDone, Latency: 34 * time.Millisecond,
		At: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	var a map[string]any
	require.NoError(t, json.Unmarshal(raw, &a))
	require.Equal(t, 0.034, a["latency_seconds"])
	require.NotContains(t, a, "latency")
	require.Equal(t, "2026-12-01T10:00:00Z", a["at"])
	require.Equal(t, float64(7), a["id"])
}
