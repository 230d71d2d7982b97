package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/lab/devenv"
	"github.com/hookinbox/hookinbox/lab/release"
)

func newReleaseCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Serve this checkout as a released module (a module proxy on disk)",
	}
	cmd.AddCommand(newReleaseProxyCmd())
	return cmd
}

func newReleaseProxyCmd() *cobra.Command {
	var out, rev, root, version string
	cmd := &cobra.Command{
		Use:   "proxy --out DIR",
		Short: "Write a module proxy on disk serving github.com/hookinbox/hookinbox at VERSION",
		Long: `proxy writes DIR/github.com/hookinbox/hookinbox/@v/{list,VERSION.info,VERSION.mod,VERSION.zip},
the module zip made as the go command makes it from a git checkout (nested modules such
as tools/* and examples/*, vendor folders and symlinks left out). A module outside this
repository then requires the version with

  GOPROXY=file://DIR,https://proxy.golang.org,direct GONOSUMDB=github.com/hookinbox/hookinbox

By default the zip holds the work tree as a commit would (HEAD plus changes not ignored);
--rev picks a commit instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if root == "" {
				r, err := devenv.FindRoot()
				if err != nil {
					return err
				}
				root = r
			}
			p, err := release.BuildProxy(cmd.Context(), release.ProxyOptions{Root: root, Out: out, Rev: rev, Version: version})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s@%s from %s: %d files, %d bytes, %s\n", release.ModulePath, p.Version, p.Rev, len(p.Files), p.Size, p.Hash)
			for _, l := range p.LeftOut() {
				fmt.Fprintf(w, "  left out %s\n", l)
			}
			fmt.Fprintf(w, "zip: %s\n", p.Zip)
			fmt.Fprintf(w, "GOPROXY=%s\n", p.GOPROXY("https://proxy.golang.org,direct"))
			fmt.Fprintf(w, "GONOSUMDB=%s\n", release.ModulePath)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the proxy's folder (GOPROXY=file://DIR)")
	cmd.Flags().StringVar(&rev, "rev", "", "git revision to release (default: the work tree as a commit would have it)")
	cmd.Flags().StringVar(&root, "root", "", "the repository's work tree (default: found from the working directory)")
	cmd.Flags().StringVar(&version, "version", "", "the version to serve (default: VERSION, checked against CHANGELOG.md)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
