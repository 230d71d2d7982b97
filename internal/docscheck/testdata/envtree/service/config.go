// Package service is a configuration source for docscheck's own tests: the
// service's code, outside lab/.
package service

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
func Load() ([]string, error) {
	var p parser
	var documented, undocumented string
	p.str("HOOKINBOX_DOCUMENTED", &documented)
	p.str("HOOKINBOX_UNDOCUMENTED", &undocumented)
	if documented == "" {
		return nil, errors.New("HOOKINBOX_MENTIONED_ONLY cannot help: set HOOKINBOX_DOCUMENTED")
	}
	os.Setenv("HOOKINBOX_SET_ONLY", "1")
	return []string{documented, undocumented, os.Getenv(viaConst), os.Getenv("DATABASE_URL"),
		os.Getenv("TEMPORAL_FIXTURE_ADDRESS"), os.Getenv("HOOKINBOX_TEST_FIXTURE")}, nil
}
