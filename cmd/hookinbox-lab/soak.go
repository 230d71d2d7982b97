package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/lab/soak"
	"github.com/hookinbox/hookinbox/lab/verify"
)

func newSoakCmd() *cobra.Command {
	var o soak.Options
	var jsonOut, binary string
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Chaos soak: real intake and worker processes killed at random, then every invariant against the ground truth",
		Long: `soak proves hookinbox under chaos. It starts its own PostgreSQL cluster and Temporal dev server
(the stack 'make run' uses is left alone), runs the service binary's 'webhook' and 'worker' as
separate processes configured only by environment variables (several of each, behind a relay that
loses some answers; --binary, by default the hookinbox-soak beside this hookinbox-lab: the shipped
app plus a team's handler on its own table, as 'make lab' builds them), and drives them with two
provider simulators: Stripe subscription snapshots with versions on one endpoint and without on
another, paid invoices (some announced twice) and credit notes, feedback items with a signed team
destination, their comments through a forward route to a receiver that dedups on the operation key
(and dies and answers 5xx), their votes to the team's handler, duplicates, reordering, delays, same
id with another body, dropped deliveries, provider API errors and lost email API answers.

While the events flow it kills intake and worker processes with SIGKILL at random (they come back
after a moment), restarts the Temporal dev server once on its database file and terminates the
application's database connections periodically and right after some accepted email sends
(--drop-after-send-rate), and stops PostgreSQL for 30-60 s (--outages, --outage-min, --outage-max). The simulators retry every non-2xx answer and
timeout (their retry schedule, time-compressed) until each event is acknowledged.

At the end it waits for the backlog to drain (rows that wait for a dropped event's fact aside),
runs the facts backfill for the dropped deliveries, waits for everything to drain, checks the
invariants against the simulators' ground truth and prints them as a table with a summary (events,
deliveries, kills, restarts, connection drops, the forward receiver, the team's table, elapsed,
throughput). The exit status is 1 on any violation or if the backlog did not drain. To reproduce a
failing run, run it again with its --seed (and --events): the scenario, its faults and the order of
the chaos repeat; the timing does not.

Run it from inside the repository: the Temporal CLI is built into .tools/ on first use.`,
		Example: `  hookinbox-lab soak                     # 20,000 events (make soak)
  hookinbox-lab soak --events 2000 --kill-every 5s --keep
  hookinbox-lab soak --seed 42 --json soak.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			bin, err := serviceBinary(binary)
			if err != nil {
				return err
			}
			o.Binary, o.Progress = bin, out
			res, err := soak.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintln(out)
			if err := res.Report.WriteTable(out); err != nil {
				return err
			}
			fmt.Fprintln(out)
			res.Summary.Write(out)
			if res.Kept {
				fmt.Fprintf(out, "  logs         %s\n", res.Dir)
			}
			if jsonOut != "" {
				if err := writeSoakJSON(jsonOut, res); err != nil {
					return err
				}
			}
			if !res.Converged {
				fmt.Fprintln(out, "\nthe backlog did not drain within --converge-timeout (see the pending rows above)")
			}
			if !res.Report.OK || !res.Converged {
				return cli.ExitCode{Code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the scenario, its faults and the chaos (the timing never repeats)")
	f.IntVar(&o.Events, "events", 20000, "about how many distinct events to generate")
	f.IntVar(&o.Intakes, "intakes", 2, "intake processes behind the relay")
	f.IntVar(&o.Workers, "workers", 2, "worker processes")
	f.IntVar(&o.Concurrency, "concurrency", 4, "concurrent senders of each simulator")
	f.DurationVar(&o.SendOver, "send-over", 0, "spread the first attempts over at least this long (0: as fast as acknowledged)")
	f.DurationVar(&o.KillEvery, "kill-every", 10*time.Second, "mean time between two process kills")
	f.IntVar(&o.MinKills, "min-kills", 2, "kills of each process kind before the chaos may stop")
	f.DurationVar(&o.DropConnsEvery, "drop-conns-every", 7*time.Second, "how often the application's database connections are terminated")
	f.IntVar(&o.MinConnDrops, "min-conn-drops", 3, "connection drop rounds before the chaos may stop")
	f.BoolVar(&o.NoTemporalRestart, "no-temporal-restart", false, "do not restart the Temporal dev server")
	f.BoolVar(&o.Coalesce, "coalesce", false, "the GitHub issues route coalesces (--fetch-current --coalesce): one document per run of an issue's pending events, holding the issue fetched from the simulator")
	f.IntVar(&o.Outages, "outages", 1, "times PostgreSQL is stopped while the events flow (0: never)")
	f.DurationVar(&o.OutageMin, "outage-min", 30*time.Second, "shortest PostgreSQL outage")
	f.DurationVar(&o.OutageMax, "outage-max", 60*time.Second, "longest PostgreSQL outage")
	f.Float64Var(&o.DropAfterSendRate, "drop-after-send-rate", 0.05, "share of accepted email sends after which the workers' database connections are cut before the answer (0: never)")
	f.Float64Var(&o.LoseAnswerRate, "lose-answer-rate", 0.02, "share of the intake's 2xx answers the relay loses (negative: none)")
	f.DurationVar(&o.ConvergeTimeout, "converge-timeout", 30*time.Minute, "longest wait for the backlog to drain")
	f.DurationVar(&o.ChaosLimit, "chaos-limit", 0, "stop the chaos after this long even if the backlog has not drained (default half of --converge-timeout)")
	f.DurationVar(&o.ProgressEvery, "progress-every", 5*time.Second, "interval of the progress lines")
	f.StringVar(&o.Dir, "dir", "", "folder for the Temporal database and the process logs (default: a temporary one)")
	f.BoolVar(&o.Keep, "keep", false, "keep the folder (it is kept anyway on a violation)")
	f.BoolVar(&o.TemporalUI, "temporal-ui", false, "serve the soak's Temporal UI on a free port (printed at start)")
	f.StringVar(&jsonOut, "json", "", "also write the invariants and the summary as JSON to this file")
	f.StringVar(&binary, "binary", "", "the service binary whose webhook and worker run (default: hookinbox-soak beside this binary; the shipped hookinbox lacks the team's handler)")
	return cmd
}

// serviceBinary is the binary the soak runs as intake and worker
// processes: the given path, or hookinbox-soak (cmd/hookinbox-soak) in this
// binary's folder.
func serviceBinary(given string) (string, error) {
	if given == "" {
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find this binary: %w", err)
		}
		given = filepath.Join(filepath.Dir(self), "hookinbox-soak")
	}
	info, err := os.Stat(given)
	if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		return "", cli.Usagef("no service binary at %s: build it (make lab builds hookinbox-soak beside hookinbox-lab) or give --binary", given)
	}
	return filepath.Abs(given)
}

func writeSoakJSON(path string, res *soak.Result) error {
	b, err := json.MarshalIndent(struct {
		Invariants *verify.Report `json:"invariants"`
		Summary    soak.Summary   `json:"summary"`
		Converged  bool           `json:"converged"`
	}{res.Report, res.Summary, res.Converged}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}
