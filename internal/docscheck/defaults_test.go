package docscheck_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/docscheck"
)

// configDefaults returns, for every variable config.FromLookup reads, the
// default the code has, as text: it finds the field a variable sets by
// setting it alone and comparing with the defaults. A variable whose
// default is the zero value (none, or derived from another) is left out.
func configDefaults(t *testing.T) map[string]string {
	t.Helper()
	var asked []string
	base, err := config.FromLookup(func(name string) (string, bool) {
		asked = append(asked, name)
		return "", false
	})
	require.NoError(t, err)
	out := map[string]string{}
	bv := reflect.ValueOf(base)
	for _, name := range asked {
		field := -1
		for _, sentinel := range []string{"1234567", "7777s", "true", "false",
			// What the ones that take a word, a short duration, a long
			// one, a small number or a URL accept.
			"activity", "off", "text", "2s", "777h", "7", "http://sentinel.invalid:1"} {
			c, err := config.FromLookup(func(n string) (string, bool) {
				if n == name {
					return sentinel, true
				}
				return "", false
			})
			if err != nil {
				// Refused (the error may name the variable it pairs with,
				// as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL's names the base
				// one): a refused config is no field's default.
				continue
			}
			cv := reflect.ValueOf(c)
			for i := range cv.NumField() {
				if !reflect.DeepEqual(cv.Field(i).Interface(), bv.Field(i).Interface()) {
					field = i
					break
				}
			}
			if field >= 0 {
				break
			}
		}
		if field < 0 {
			// Set alone it is refused (TEMPORAL_TLS_CERT needs its key):
			// its default is none, which the table cannot get wrong.
			t.Logf("%s: not probed (refused when set alone)", name)
			continue
		}
		f := bv.Field(field)
		if f.IsZero() {
			continue
		}
		switch v := f.Interface().(type) {
		case time.Duration:
			out[name] = v.String()
		case []string:
			out[name] = strings.Join(v, ",")
		default:
			out[name] = fmt.Sprint(v)
		}
	}
	require.Greater(t, len(out), 30)
	return out
}

// sameDefault says whether a documented default is the code's: equal
// text, or the same duration (`1h` is 1h0m0s).
func sameDefault(doc, code string) bool {
	if doc == code {
		return true
	}
	d1, err1 := time.ParseDuration(doc)
	d2, err2 := time.ParseDuration(code)
	return err1 == nil && err2 == nil && d1 == d2
}

// checkDefaults returns one sentence per variable whose documented default
// is not the code's, or that has a default the table does not state.
func checkDefaults(code, documented map[string]string) []string {
	var problems []string
	for name, want := range code {
		got, ok := documented[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s defaults to %q, but the configuration table states no default", name, want))
		case !sameDefault(got, want):
			problems = append(problems, fmt.Sprintf("%s defaults to %q, but the configuration table says %q", name, want, got))
		}
	}
	slices.Sort(problems)
	return problems
}

// TestTheConfigurationTableStatesEachDefaultTheCodeHas: every variable
// internal/config reads with a default has that default in the README's
// table; a planted wrong default fails.
func TestTheConfigurationTableStatesEachDefaultTheCodeHas(t *testing.T) {
	t.Parallel()
	code := configDefaults(t)
	readme := readRepo(t, "README.md")
	documented, err := docscheck.ConfigTableDefaults(readme, "## Configuration")
	require.NoError(t, err)
	require.Empty(t, checkDefaults(code, documented))

	for _, plant := range []struct{ old, new, want string }{
		{"| `HOOKINBOX_RETRY_BUDGET` | `10` |", "| `HOOKINBOX_RETRY_BUDGET` | `12` |", `HOOKINBOX_RETRY_BUDGET defaults to "10", but the configuration table says "12"`},
		{"| `TEMPORAL_NAMESPACE` | `default` |", "| `TEMPORAL_NAMESPACE` | `prod` |", `TEMPORAL_NAMESPACE defaults to "default", but the configuration table says "prod"`},
	} {
		planted := strings.Replace(string(readme), plant.old, plant.new, 1)
		require.NotEqual(t, string(readme), planted, plant.old)
		documented, err = docscheck.ConfigTableDefaults([]byte(planted), "## Configuration")
		require.NoError(t, err)
		require.Equal(t, []string{plant.want}, checkDefaults(code, documented))
	}
}
