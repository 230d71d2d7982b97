package command

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/worker"
)

func newSchedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "List, apply, pause, unpause and trigger hookinbox's Temporal Schedules",
		Long: `hookinbox keeps four Temporal Schedules, with fixed ids (suffixed with HOOKINBOX_TASK_QUEUE
when it is not "hookinbox"), each skipping a run while the previous one is still going:

  sweeper                  re-signals inbox rows pending too long (HOOKINBOX_SWEEP_INTERVAL)
  reconcile-subscriptions  subscriptions reconciliation (HOOKINBOX_RECONCILE_INTERVAL, 1h)
  backfill-facts           facts backfill from the provider's events (HOOKINBOX_BACKFILL_INTERVAL, 15m)
  retention                payload redaction and deletions (HOOKINBOX_RETENTION_INTERVAL, 24h)

The worker applies them at start-up; 'apply' does the same by hand. An interval of 0 disables a
schedule (apply deletes it). NAME is one of the names above or a schedule id.`,
	}
	cmd.AddCommand(newSchedulesListCmd(), newSchedulesApplyCmd(), newSchedulesPauseCmd(true),
		newSchedulesPauseCmd(false), newSchedulesTriggerCmd())
	return cmd
}

// withTemporal loads configuration and connects to Temporal.
func withTemporal(cmd *cobra.Command, fn func(cfg config.Config, c client.Client) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
	c, err := app.DialTemporal(cmd.Context(), cfg, log)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(cfg, c)
}

// scheduleName resolves NAME (a schedule name or id) to its name and id.
func scheduleName(arg, taskQueue string) (name, id string, err error) {
	cfg := config.Default()
	cfg.TaskQueue = taskQueue
	name, id, err = (&ops.Service{Config: cfg}).ScheduleName(arg)
	return name, id, asUsage(err)
}

func newSchedulesListCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "list [NAME...]",
		Short: "Show each schedule: id, interval, paused, last and next run, running workflows",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTemporal(cmd, func(cfg config.Config, c client.Client) error {
				names := starter.ScheduleNames()
				if len(args) > 0 {
					names = nil
					for _, a := range args {
						n, _, err := scheduleName(a, cfg.TaskQueue)
						if err != nil {
							return err
						}
						names = append(names, n)
					}
				}
				var all []starter.ScheduleStatus
				var rows [][]string
				for _, n := range names {
					st, err := starter.DescribeSchedule(cmd.Context(), c, n, starter.ScheduleIDOf(cfg, n))
					if err != nil {
						return err
					}
					all = append(all, st)
					rows = append(rows, scheduleRow(st))
				}
				return cli.Render(cmd.OutOrStdout(), format, all,
					[]string{"NAME", "ID", "EVERY", "PAUSED", "LAST RUN", "NEXT RUN", "RUNNING", "NOTE"}, rows)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func scheduleRow(st starter.ScheduleStatus) []string {
	if !st.Exists {
		return []string{st.Name, st.ID, "-", "-", "-", "-", "-", "absent (disabled, or run 'schedules apply')"}
	}
	running := "no"
	if len(st.Running) > 0 {
		running = strings.Join(st.Running, ",")
	}
	return []string{st.Name, st.ID, st.Every.String(), fmt.Sprint(st.Paused), schedTime(st.LastRun), schedTime(st.NextRun),
		running, orDash(st.Note)}
}

func schedTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func newSchedulesApplyCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Create or update every schedule from the configuration (what the worker does at start-up)",
		Long: `Create each schedule, or update its interval, workflow and arguments in place (same fixed id,
pause state kept), from the configuration in the environment; delete those whose interval is 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withTemporal(cmd, func(cfg config.Config, c client.Client) error {
				changes, err := worker.ApplySchedules(cmd.Context(), c, cfg)
				rows := make([][]string, 0, len(changes))
				for _, ch := range changes {
					every := "-"
					if ch.Every > 0 {
						every = ch.Every.String()
					}
					rows = append(rows, []string{ch.ID, ch.Action, every})
				}
				if rerr := cli.Render(cmd.OutOrStdout(), format, changes, []string{"ID", "ACTION", "EVERY"}, rows); err == nil {
					err = rerr
				}
				return err
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newSchedulesPauseCmd(pause bool) *cobra.Command {
	verb, past := "pause", "paused"
	if !pause {
		verb, past = "unpause", "unpaused"
	}
	var note string
	cmd := &cobra.Command{
		Use:   verb + " NAME [--note TEXT]",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a schedule (the note says who and why; 'list' shows it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTemporal(cmd, func(cfg config.Config, c client.Client) error {
				svc := &ops.Service{Temporal: c, Config: cfg}
				id, n, err := svc.PauseSchedule(cmd.Context(), ops.Actor{Name: actorName()}, args[0], pause, note)
				if err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "schedule %s %s (%s)\n", id, past, n)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "who and why (default: your login and the time)")
	return cmd
}

func newSchedulesTriggerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "trigger NAME",
		Short: "Start a run of a schedule now (even while it is paused)",
		Long: `Start a run of the schedule now. While one of its runs is still going the trigger is refused
(the schedules skip overlapping runs); the running workflow is named.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTemporal(cmd, func(cfg config.Config, c client.Client) error {
				svc := &ops.Service{Temporal: c, Config: cfg}
				id, run, err := svc.TriggerSchedule(cmd.Context(), ops.Actor{Name: actorName()}, args[0], "")
				if err != nil {
					return asUsage(err)
				}
				// The trigger succeeded; naming its run is best effort.
				if run != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "schedule %s triggered: workflow %s\n", id, run)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "schedule %s triggered\n", id)
				}
				return nil
			})
		},
	}
}
