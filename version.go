package hookinbox

import (
	_ "embed"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/hookinbox/hookinbox/internal/command"
)

// modulePath is hookinbox's module path.
const modulePath = "github.com/hookinbox/hookinbox"

//go:embed VERSION
var versionFile string

// Version is the version of the hookinbox module this program is built
// on: the module version Go recorded (a team's program requiring a
// release), else this module's VERSION file, marked with the replacement
// when a replace directive points elsewhere.
func Version() string {
	v := strings.TrimSpace(versionFile)
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, d := range bi.Deps {
		if d.Path != modulePath {
			continue
		}
		switch {
		case d.Replace == nil && d.Version != "" && d.Version != "(devel)":
			return d.Version
		case d.Replace != nil && d.Replace.Version != "":
			return d.Replace.Version
		case d.Replace != nil:
			return v + " (replaced by " + d.Replace.Path + ")"
		}
	}
	return v
}

// WithProgram names the team's program in its usage lines, its errors
// and `--version`, which prints version beside hookinbox's (Version). By
// default the name is the base name the program was started with
// (os.Args[0]; hookinbox for hookinbox's own binary) and the version the
// main module's (its module version, else its VCS revision, else "dev").
func WithProgram(name, version string) Option {
	return func(a *App) { a.program.Name, a.program.Version = name, version }
}

// programOf is the command tree's Program: WithProgram's, with defaults.
func (a *App) programOf() command.Program {
	p := a.program
	p.Hookinbox = Version()
	if p.Name == "" {
		p.Name = defaultProgramName()
	}
	return p
}

// defaultProgramName is hookinbox when the main module is hookinbox's (its
// binary, its tests), else the base name of os.Args[0].
func defaultProgramName() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Path == modulePath {
		return "hookinbox"
	}
	if len(os.Args) == 0 || os.Args[0] == "" {
		return "hookinbox"
	}
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
}
