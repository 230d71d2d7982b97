package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFullJitterStaysUnderTheExponentialCeilingAndTheCap(t *testing.T) {
	t.Parallel()
	base, cap := 100*time.Millisecond, 2*time.Second
	tests := []struct {
		attempt int
		ceiling time.Duration
	}{
		{0, base}, {1, base}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {5, 1600 * time.Millisecond},
		{6, cap}, {40, cap}, {100, cap},
	}
	for _, tt := range tests {
		var maxSeen time.Duration
		for range 2000 {
			d := fullJitter(tt.attempt, base, cap)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, tt.ceiling, "attempt %d", tt.attempt)
			maxSeen = max(maxSeen, d)
		}
		// Full jitter uses the whole range, not a narrow band near the ceiling.
		require.Greater(t, maxSeen, tt.ceiling/2, "attempt %d", tt.attempt)
	}
}
