package command

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/starter"
)

func newStatusCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "status",
		Short: "One screen: pending, oldest pending age, exhausted, quarantined, outbox backlog, schedule health",
		Long: `Show the state of the work at a glance, from the database and Temporal: the numbers to look at
first at 3 a.m. Exit status is 0 when healthy, 3 when something needs attention (exhausted or
failed events, held outbox rows, an oldest pending event older than HOOKINBOX_SWEEP_AFTER plus
HOOKINBOX_SWEEP_INTERVAL, a paused or missing schedule, a service down).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			svc := &ops.Service{Config: cfg}
			if st, err := app.OpenStore(ctx, cfg, app.OperatorDB(cfg)); err == nil {
				defer st.Close()
				svc.Store = st
			} else {
				svc.StoreErr = err
			}
			tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if c, err := dialTemporalOnce(tctx, cfg); err == nil {
				defer c.Close()
				svc.Temporal = c
			} else {
				svc.TemporalErr = err
			}
			v := svc.Status(ctx)
			if format == "json" {
				if err := cli.Render(cmd.OutOrStdout(), format, v, nil, nil); err != nil {
					return err
				}
			} else {
				printStatus(cmd.OutOrStdout(), v)
			}
			if len(v.Warnings) > 0 {
				return cli.ExitCode{Code: 3}
			}
			return nil
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

// dialTemporalOnce connects without waiting for Temporal to come up.
func dialTemporalOnce(ctx context.Context, cfg config.Config) (client.Client, error) {
	return starter.Dial(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func printStatus(out io.Writer, v ops.StatusView) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "database\t%s\n", v.Database)
	fmt.Fprintf(tw, "temporal\t%s\n", v.Temporal)
	if b := v.Backlog; b != nil {
		age := "-"
		if b.Pending > 0 {
			age = b.OldestPendingAge.Round(time.Second).String()
		}
		fmt.Fprintf(tw, "inbox pending\t%d (oldest %s)\n", b.Pending, age)
		fmt.Fprintf(tw, "inbox exhausted / failed\t%d / %d\n", b.Exhausted, b.Failed)
		fmt.Fprintf(tw, "quarantine open\t%d\n", b.QuarantineOpen)
		fmt.Fprintf(tw, "outbox\tpending %d, uncertain %d, held %d, failed %d, sent %d\n", b.Outbox["pending"], b.Outbox["uncertain"],
			b.Outbox["held_for_review"], b.Outbox["failed"], b.Outbox["sent"])
		same := ""
		if b.SameVersionDivergences24h > 0 {
			same = fmt.Sprintf(" (%d at the same provider version: investigate)", b.SameVersionDivergences24h)
		}
		fmt.Fprintf(tw, "divergences (24h)\t%d%s\n", b.Divergences24h, same)
	}
	for _, r := range v.Routes {
		age := "-"
		if r.Pending > 0 {
			age = (time.Duration(r.OldestPendingSeconds) * time.Second).String()
		}
		fmt.Fprintf(tw, "route %s\tpending %d (oldest %s)\n", r.Route, r.Pending, age)
	}
	for _, s := range v.Schedules {
		state := "active"
		if s.Paused {
			state = "PAUSED"
		}
		fmt.Fprintf(tw, "schedule %s\t%s, last %s, next %s\n", s.ID, state, fmtRun(s.LastRun), fmtRun(s.NextRun))
	}
	tw.Flush()
	if len(v.Warnings) == 0 {
		fmt.Fprintln(out, "\nhealthy")
		return
	}
	fmt.Fprintln(out, "\nneeds attention:")
	for _, w := range v.Warnings {
		fmt.Fprintln(out, "  - "+w)
	}
}

func fmtRun(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
