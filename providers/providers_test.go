package providers_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/providers"
)

// plain is a provider without RouteType.
type plain struct{}

func (plain) Name() string                                    { return "plain" }
func (plain) Verifier([]hookintype.Secret) providers.Verifier { return nil }
func (plain) Normalize(hookintype.EndpointSettings, http.Header, gjson.Result) (providers.Normalized, error) {
	return providers.Normalized{}, nil
}
func (plain) KeepHeader(string) bool   { return false }
func (plain) CheckSecret(string) error { return nil }

// prefixed routes "x.<type>" as "<type>".
type prefixed struct{ plain }

func (prefixed) RouteType(t string) string { return strings.TrimPrefix(t, "x.") }

func TestRouteType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    providers.Provider
		in   string
		want string
	}{
		{"a provider without RouteType routes by the type itself", plain{}, "x.invoice.paid", "x.invoice.paid"},
		{"an unregistered provider (nil) routes by the type itself", nil, "x.invoice.paid", "x.invoice.paid"},
		{"a RouteTyper maps its alias", prefixed{}, "x.invoice.paid", "invoice.paid"},
		{"a RouteTyper leaves other types alone", prefixed{}, "invoice.paid", "invoice.paid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, providers.RouteType(tt.p, tt.in))
		})
	}
}

func TestSignNeedsASigner(t *testing.T) {
	t.Parallel()
	err := providers.Sign(plain{}, "secret", http.Header{}, []byte("{}"), time.Now())
	require.ErrorIs(t, err, providers.ErrCannotSign)
	require.EqualError(t, err, "plain: provider cannot sign deliveries")
}
