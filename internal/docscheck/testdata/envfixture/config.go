// Package envfixture is a configuration source for docscheck's own tests:
// it reads three variables, mentions a fourth without reading it, and its
// test file reads a fifth.
package envfixture

import (
	"errors"
	"os"
)

// viaConst is read through a constant.
const viaConst = "HOOKINBOX_VIA_CONST"

type parser struct{}

func (parser) str(name string, dst *string) { *dst = os.Getenv(name) }

// Load reads the fixture's configuration. HOOKINBOX_MENTIONED_ONLY is only
// mentioned here.
func Load() (string, string, string, error) {
	var p parser
	var documented, undocumented string
	p.str("HOOKINBOX_DOCUMENTED", &documented)
	p.str("HOOKINBOX_UNDOCUMENTED", &undocumented)
	if documented == "" {
		return "", "", "", errors.New("HOOKINBOX_MENTIONED_ONLY cannot help: set HOOKINBOX_DOCUMENTED")
	}
	return documented, undocumented, os.Getenv(viaConst), nil
}
