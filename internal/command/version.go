package command

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is set at link time: -ldflags "-X main.buildVersion=v1.2.3".
var buildVersion = ""

// version is the binary's version: the linked one, else the module's, else
// the VCS revision the build recorded, else "dev".
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	v := "dev"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if m := info.Main.Version; m != "" && m != "(devel)" {
		v = m
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" && v == "dev" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v = "dev-" + rev + modified
	}
	return v
}

func newVersionCmd(p Program) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version (also --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, %s/%s)\n", p.Name, p.VersionLine(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
