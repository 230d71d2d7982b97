package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/worker"
)

// statusView is what `hookinbox status` shows.
type statusView struct {
	Database  string         `json:"database"`
	Temporal  string         `json:"temporal"`
	Backlog   *store.Backlog `json:"backlog,omitempty"`
	Schedules []scheduleView `json:"schedules,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
}

type scheduleView struct {
	ID      string     `json:"id"`
	Paused  bool       `json:"paused"`
	LastRun *time.Time `json:"last_run,omitempty"`
	NextRun *time.Time `json:"next_run,omitempty"`
	Running int        `json:"running"`
}

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
			v := statusView{Database: "ok", Temporal: "ok"}
			if st, err := openStore(ctx, operatorDB(cfg)); err != nil {
				v.Database = "unavailable: " + err.Error()
			} else {
				defer st.Close()
				b, err := store.ReadBacklog(ctx, st.Pool)
				if err != nil {
					v.Database = "error: " + err.Error()
				} else {
					v.Backlog = &b
				}
			}
			tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if c, err := dialTemporalOnce(tctx, cfg); err != nil {
				v.Temporal = "unavailable: " + err.Error()
			} else {
				defer c.Close()
				v.Schedules, err = scheduleStates(tctx, c)
				if err != nil {
					v.Temporal = "error listing schedules: " + err.Error()
				}
			}
			v.Warnings = statusWarnings(cfg, v)
			if format == "json" {
				if err := cli.Render(cmd.OutOrStdout(), format, v, nil, nil); err != nil {
					return err
				}
			} else {
				printStatus(cmd, v)
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

// expectedSchedules are the schedule ids a worker keeps applied.
func expectedSchedules(cfg config.Config) []string {
	var ids []string
	for _, s := range worker.Schedules(cfg) {
		ids = append(ids, s.ID)
	}
	return ids
}

func scheduleStates(ctx context.Context, c client.Client) ([]scheduleView, error) {
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, err
	}
	var out []scheduleView
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return out, err
		}
		if !strings.HasPrefix(e.ID, "hookinbox-") {
			continue
		}
		sv := scheduleView{ID: e.ID, Paused: e.Paused}
		if n := len(e.RecentActions); n > 0 {
			t := e.RecentActions[n-1].ActualTime
			sv.LastRun = &t
		}
		if len(e.NextActionTimes) > 0 {
			t := e.NextActionTimes[0]
			sv.NextRun = &t
		}
		out = append(out, sv)
	}
	return out, nil
}

func statusWarnings(cfg config.Config, v statusView) []string {
	var w []string
	if v.Database != "ok" {
		w = append(w, "database: "+v.Database)
	}
	if v.Temporal != "ok" {
		w = append(w, "temporal: "+v.Temporal+" (the intake still accepts; hand-offs wait for the sweeper)")
	}
	if b := v.Backlog; b != nil {
		if b.Exhausted > 0 {
			w = append(w, fmt.Sprintf("%d exhausted event(s): hookinbox inbox list --status exhausted, then replay", b.Exhausted))
		}
		if b.Failed > 0 {
			w = append(w, fmt.Sprintf("%d failed event(s): hookinbox inbox list --status failed", b.Failed))
		}
		if n := b.Outbox["held_for_review"]; n > 0 {
			w = append(w, fmt.Sprintf("%d outbox row(s) held for review: hookinbox outbox list --status held_for_review", n))
		}
		if n := b.Outbox["failed"]; n > 0 {
			w = append(w, fmt.Sprintf("%d outbox row(s) failed: hookinbox outbox list --status failed", n))
		}
		if n := b.SameVersionDivergences24h; n > 0 {
			w = append(w, fmt.Sprintf("%d same-version divergence(s) in 24h: the provider sent other content under a version "+
				"the projection already has; it was not overwritten. Find them in reconcile_divergences WHERE same_version "+
				"(detected_by is the event key: hookinbox inbox show KEY), then ask the provider", n))
		}
		if limit := cfg.SweepAfter + cfg.SweepInterval; b.Pending > 0 && b.OldestPendingAge > limit {
			w = append(w, fmt.Sprintf("oldest pending event is %s old (> %s): is the worker running?", b.OldestPendingAge.Round(time.Second), limit))
		}
	}
	if v.Temporal == "ok" {
		seen := map[string]bool{}
		for _, s := range v.Schedules {
			seen[s.ID] = true
			if s.Paused {
				w = append(w, "schedule "+s.ID+" is paused")
			}
		}
		for _, s := range expectedSchedules(cfg) {
			if !seen[s] {
				w = append(w, "schedule "+s+" does not exist: start a worker or run 'hookinbox schedules apply'")
			}
		}
	}
	return w
}

func printStatus(cmd *cobra.Command, v statusView) {
	out := cmd.OutOrStdout()
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
