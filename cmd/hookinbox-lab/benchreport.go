package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/docscheck"
	"github.com/hookinbox/hookinbox/lab/bench"
	"github.com/hookinbox/hookinbox/lab/devenv"
)

// benchTableDocs are the documents whose marked tables --write-docs
// rewrites and the docs check compares (relative to the repository root).
var benchTableDocs = []string{"README.md", "docs/benchmarks.md"}

// renderBenchTable prints a table of a kind of bench.Tables.
func renderBenchTable(kind string, files []string) (string, error) {
	render, ok := bench.Tables[kind]
	if !ok {
		return "", fmt.Errorf("no table kind %q (kinds: %s)", kind, strings.Join(bench.TableKinds(), ", "))
	}
	return render(files)
}

func newBenchReportCmd() *cobra.Command {
	var writeDocs bool
	cmd := &cobra.Command{
		Use:   "report KIND FILE…",
		Short: "Print a Markdown table of saved bench reports, or rewrite the docs' generated tables",
		Long: `Print the Markdown table of a KIND from saved JSON reports (--save, bench-results/):

  e2e           two designs on the same end-to-end loads: the mean of each one's runs, the
                ratio to the first design, every run, history events, server CPU and cores
  scale-pair    the same for the scaling runs, one row per resource count
  scale         every scaling run, one row each, with its memory
  intake-split  the raw insert, the inbox statement alone and the intake, per report and level
  e2e-ab        reports in pairs (baseline first: A1 B1 A2 B2 …), one event per resource
  intake-ab     intake reports in pairs (baseline first), one level each
  e2e-sides     end-to-end reports from two sides (the part of their names that is not a number:
                …-1-before, …-1-after, …-2-before …): each side's runs, means and ratio
  memory        every scaling run's peak and settled memory, open files, rate and server CPU
  intake        each intake level: raw insert, paced and unpaced intake (p99), ratios, every round
  e2e-runs      one row per report (named by what sets its file name apart), its rate per load

docs/benchmarks.md and README.md mark each table made this way with the command's arguments,
between "<!-- bench report KIND FILE… -->" and "<!-- end bench report -->" (FILE relative to
the repository root). --write-docs (make docs) rewrites every marked table in place; the docs
check in make test fails when one differs from what this prints.`,
		Example: `  hookinbox-lab bench report e2e bench-results/20261201-forward-e2e.json
  hookinbox-lab bench report --write-docs`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if writeDocs {
				if len(args) > 0 {
					return cli.Usagef("--write-docs takes no arguments")
				}
				return writeBenchDocs(cmd)
			}
			if len(args) < 2 {
				return cli.Usagef("give a KIND (%s) and at least one report FILE", strings.Join(bench.TableKinds(), ", "))
			}
			out, err := renderBenchTable(args[0], args[1:])
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().BoolVar(&writeDocs, "write-docs", false, "rewrite every marked table of README.md and docs/benchmarks.md from its reports (make docs)")
	return cmd
}

// writeBenchDocs regenerates the marked tables of benchTableDocs in place.
func writeBenchDocs(cmd *cobra.Command) error {
	root, err := devenv.FindRoot()
	if err != nil {
		return err
	}
	for _, rel := range benchTableDocs {
		path := filepath.Join(root, rel)
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, n, err := docscheck.BenchTables(doc, root, renderBenchTable)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if bytes.Equal(doc, out) {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d tables, unchanged\n", rel, n)
			continue
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %d tables, rewritten\n", rel, n)
	}
	return nil
}
