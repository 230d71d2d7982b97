package activities_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/activities"
)

// TestActivityNamesPerQueue pins the activity type names (the exported
// method names, registered with default naming) of each task queue's
// struct: recorded histories and running workflows name them, so a rename
// or a method moved to another queue's struct breaks them.
func TestActivityNamesPerQueue(t *testing.T) {
	t.Parallel()
	methods := func(v any) []string {
		var out []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumMethod() {
			out = append(out, typ.Method(i).Name)
		}
		return out
	}
	tests := []struct {
		queue string
		acts  any
		names []string
	}{
		{"resource", &activities.ResourceActivities{}, []string{"FailOutbox", "HandleEvent", "LoadPending", "MarkUnhandled", "ReconcileResource", "SendOutbox"}},
		{"control", &activities.ControlActivities{}, []string{"BeginPass", "EvaluateNotifications", "ListScopes", "RetentionStep", "SweepInbox", "SweepOutbox"}},
		{"provider", &activities.ProviderActivities{}, []string{"BackfillPage", "ReconcilePage", "RecoverDeliveriesPage"}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.names, methods(tt.acts), tt.queue)
	}
}
