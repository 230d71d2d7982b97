package simulator

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatsPlusSumsCountersAndMergesStatusCodes(t *testing.T) {
	a := Stats{Planned: 3, Acked: 2, Retries: 1, StatusCodes: map[int]int{200: 2, 503: 1},
		API: APIStats{Requests: 5, NotFound: 1}, Email: EmailStats{Posts: 4}}
	b := Stats{Planned: 2, Acked: 2, Dropped: 1, StatusCodes: map[int]int{200: 2},
		API: APIStats{Requests: 1, RateLimited: 1}, Email: EmailStats{Posts: 9}}
	got := a.Plus(b)
	require.Equal(t, 5, got.Planned)
	require.Equal(t, 4, got.Acked)
	require.Equal(t, 1, got.Dropped)
	require.Equal(t, map[int]int{200: 4, 503: 1}, got.StatusCodes)
	require.Equal(t, APIStats{Requests: 6, NotFound: 1, RateLimited: 1}, got.API)
	require.Equal(t, 4, got.Email.Posts, "the email counters are the first simulator's")
	require.Equal(t, map[int]int{200: 2, 503: 1}, a.StatusCodes, "the operands are left alone")
}
