package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/ops"
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
			if err := ops.ValidateOutboxStatus(status); err != nil {
				return asUsage(err)
			}
			if limit < 1 || limit > ops.MaxListLimit {
				return cli.Usagef("--limit must be between 1 and %d", ops.MaxListLimit)
			}
			return withReadOps(cmd, func(env opsEnv) error {
				rows, err := env.svc.ListOutbox(cmd.Context(), status, limit)
				if err != nil {
					return asUsage(err)
				}
				table := make([][]string, 0, len(rows))
				for _, o := range rows {
					table = append(table, []string{strconv.FormatInt(o.ID, 10), o.Status, o.Class, o.Kind, o.Destination,
						orDash(o.Policy), strconv.Itoa(o.Attempts), o.OperationKey, orDash(truncate(o.LastError, 60))})
				}
				return cli.Render(env.out, format, rows,
					[]string{"ID", "STATUS", "CLASS", "KIND", "DESTINATION", "POLICY", "ATTEMPTS", "OPERATION KEY", "LAST ERROR"}, table)
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", strings.Join(ops.OutboxStatuses, ", "))
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many rows")
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func parseOutboxID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "outbox:"), 10, 64)
	if err != nil || id < 1 {
		return 0, cli.Usagef("ID must be an outbox row id as listed by 'outbox list' (got %q)", s)
	}
	return id, nil
}

func newOutboxShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one outbox row (JSON), its workflow and the operator actions on it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseOutboxID(args[0])
			if err != nil {
				return err
			}
			return withReadOps(cmd, func(env opsEnv) error {
				o, err := env.svc.ShowOutbox(cmd.Context(), id, true)
				if err != nil {
					return err
				}
				return cli.Render(env.out, "json", o, nil, nil)
			})
		},
	}
}

func newOutboxReleaseCmd() *cobra.Command {
	var reason, by string
	cmd := &cobra.Command{
		Use:   "release ID --reason TEXT [--by WHO]",
		Short: "Send a held_for_review or failed row again (after checking the destination; audited)",
		Long: `Put a held_for_review or failed row back to pending and ring its resource's workflow, which sends
it through the same activity and operation key. Use it after checking at the destination that the
earlier, uncertain attempt did not land (or that a duplicate is acceptable).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseOutboxID(args[0])
			if err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return cli.Usagef("--reason is required")
			}
			return withOps(cmd, func(env opsEnv) error {
				res, err := env.svc.ReleaseOutbox(cmd.Context(), ops.Actor{Name: by}, id, reason)
				if err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "outbox #%d (%s) released: %s (audit #%d)\n", res.ID, res.OperationKey, reason, res.AuditID)
				if res.SignalErr != "" {
					fmt.Fprintf(env.errOut, "warning: Temporal unreachable (%s); the sweeper will send it\n", res.SignalErr)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why it is safe to send again (required)")
	cmd.Flags().StringVar(&by, "by", defaultActor(), "who (recorded in the audit)")
	return cmd
}
