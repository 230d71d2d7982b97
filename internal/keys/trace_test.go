package keys

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTraceIDOfATraceparent(t *testing.T) {
	t.Parallel()
	for tp, want := range map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "", // invalid: all zeros
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "", // another version
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": "", // upper case is not W3C
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01":  "",
		"": "",
	} {
		require.Equal(t, want, TraceID(tp), tp)
	}
	require.Equal(t, "http://j:16686/trace/abc", TraceURL("http://j:16686/trace/{trace_id}", "abc"))
	require.Empty(t, TraceURL("", "abc"))
	require.Empty(t, TraceURL("http://j/{trace_id}", ""))
}
