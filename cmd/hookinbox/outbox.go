package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/app"
	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
)

func newOutboxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outbox",
		Short: "Inspect outbound effects (emails, team alerts) and release held ones",
		Long: `Outbox rows are outbound effects written in the business transaction and sent after it by the
resource's workflow, keyed by their operation key. Statuses: pending, sent, uncertain (a previous
attempt's outcome is unknown; the uncertain-outcome policy decides), held_for_review, failed.`,
	}
	cmd.AddCommand(newOutboxListCmd(), newOutboxShowCmd(), newOutboxReleaseCmd())
	return cmd
}

func newOutboxListCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	var status string
	var limit int
	cmd := &cobra.Command{
		Use:   "list [--status pending|sent|uncertain|held_for_review|failed]",
		Short: "List outbox rows, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOperatorStore(cmd, func(st *store.Store) error {
				rows, err := store.ListOutbox(cmd.Context(), st.Pool, status, limit)
				if err != nil {
					return err
				}
				var table [][]string
				for _, o := range rows {
					table = append(table, []string{strconv.FormatInt(o.ID, 10), o.Status, o.Class, o.Kind, o.Destination,
						orDash(o.Policy), strconv.Itoa(o.Attempts), o.OperationKey, orDash(truncate(o.LastError, 60))})
				}
				return cli.Render(cmd.OutOrStdout(), format, rows,
					[]string{"ID", "STATUS", "CLASS", "KIND", "DESTINATION", "POLICY", "ATTEMPTS", "OPERATION KEY", "LAST ERROR"}, table)
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only rows with this status")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many rows")
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newOutboxShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one outbox row (JSON)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return cli.Usagef("ID must be a number")
			}
			return withOperatorStore(cmd, func(st *store.Store) error {
				o, err := store.GetOutbox(cmd.Context(), st.Pool, id)
				if err != nil {
					return err
				}
				return cli.Render(cmd.OutOrStdout(), "json", o, nil, nil)
			})
		},
	}
}

func newOutboxReleaseCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "release ID --reason TEXT",
		Short: "Send a held_for_review or failed row again (after checking the destination)",
		Long: `Put a held_for_review or failed row back to pending and ring its resource's workflow, which sends
it through the same activity and operation key. Use it after checking at the destination that the
earlier, uncertain attempt did not land (or that a duplicate is acceptable).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return cli.Usagef("ID must be a number")
			}
			if strings.TrimSpace(reason) == "" {
				return cli.Usagef("--reason is required")
			}
			cfg, err := config.FromEnv()
			if err != nil {
				return err
			}
			return withStore(cmd, func(st *store.Store) error {
				o, err := store.ReleaseOutbox(cmd.Context(), st.Pool, id)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "outbox #%d (%s) released: %s\n", o.ID, o.OperationKey, reason)
				r, err := keys.ParseResource(o.ResourceKey)
				if err != nil {
					return err
				}
				log := app.NewLogger(cfg)
				c, err := dialTemporal(cmd.Context(), cfg, log)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: Temporal unreachable (%v); the sweeper will send it\n", err)
					return nil
				}
				defer c.Close()
				return app.Resources(cfg, c).Ring(cmd.Context(), r, keys.SignalEvent, "outbox release: "+reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why it is safe to send again (required)")
	return cmd
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
