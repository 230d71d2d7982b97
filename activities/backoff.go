package activities

import (
	"math/rand/v2"
	"time"
)

// fullJitter is the "full jitter" exponential backoff: a uniform delay in
// [0, min(cap, base·2^(attempt-1))], so retries from many resources spread
// out instead of arriving together. attempt starts at 1.
func fullJitter(attempt int, base, cap time.Duration) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	ceiling := cap
	if shift := attempt - 1; shift < 62 {
		if d := base << shift; d > 0 && d < cap {
			ceiling = d
		}
	}
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}
