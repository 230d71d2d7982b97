package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// newAdjustCmd is `hookinbox workspaces adjust`: an operator's correction
// of a balance, through the same path as credit-note reversals.
func newAdjustCmd() *cobra.Command {
	var ws, opID, reason, by, policy string
	var credits int64
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "adjust --workspace W --credits ±N --operation-id ID --reason TEXT [--by WHO]",
		Short: "Correct a workspace's credits balance, once per operation id (audited)",
		Long: `Add (+N) or take back (-N) credits. The correction is keyed by the operation id you give: a
repeated id changes nothing (and says so), so a command retried after a lost answer is safe. It
goes through the same path as credit-note reversals: taking back more than the balance follows
HOOKINBOX_NEGATIVE_BALANCE_POLICY (allow, clamp, hold; --policy overrides it for this act), and
the decision is recorded. Every correction is audited in operator_actions (who, why, before, after).`,
		Example: `  hookinbox workspaces adjust --workspace ws_acme --credits -30 --operation-id TICKET-412 --reason "duplicate top-up"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case credits == 0:
				return cli.Usagef("--credits must be a non-zero whole number (+N adds, -N takes back)")
			case strings.TrimSpace(opID) == "":
				return cli.Usagef("--operation-id must not be empty")
			case strings.TrimSpace(reason) == "":
				return cli.Usagef("--reason must not be empty")
			case strings.TrimSpace(by) == "":
				return cli.Usagef("--by must not be empty")
			}
			return withStoreOps(cmd, func(env opsEnv) error {
				a, err := env.svc.AdjustWorkspace(cmd.Context(), ops.Actor{Name: by}, ws,
					ops.WorkspaceAdjustment{Credits: credits, OperationID: opID, Reason: reason, Policy: policy})
				if err != nil {
					return asUsage(err)
				}
				outcome := "adjusted"
				if !a.Adjusted {
					outcome = "already applied (nothing changed)"
				}
				v := map[string]any{"workspace": a.Workspace, "operation_id": a.OperationID, "outcome": outcome,
					"requested": a.Requested, "applied": a.Applied, "shortfall": a.Shortfall, "policy": a.Policy,
					"decision": a.Decision, "balance_before": a.BalanceBefore, "balance_after": a.BalanceAfter}
				return cli.Render(env.out, format, v,
					[]string{"WORKSPACE", "OPERATION", "OUTCOME", "REQUESTED", "APPLIED", "DECISION", "BALANCE"},
					[][]string{{a.Workspace, a.OperationID, outcome, fmt.Sprintf("%+d", a.Requested), fmt.Sprintf("%+d", a.Applied),
						a.Decision, strconv.FormatInt(a.BalanceBefore, 10) + " → " + strconv.FormatInt(a.BalanceAfter, 10)}})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&ws, "workspace", "", "workspace id (required)")
	f.Int64Var(&credits, "credits", 0, "credits to add (+N) or take back (-N) (required)")
	f.StringVar(&opID, "operation-id", "", "your id for this correction: a repeat changes nothing (required)")
	f.StringVar(&reason, "reason", "", "why (recorded in the audit; required)")
	f.StringVar(&by, "by", defaultActor(), "who (recorded in the audit)")
	f.StringVar(&policy, "policy", "", "negative-balance policy for this act: allow, clamp or hold (default HOOKINBOX_NEGATIVE_BALANCE_POLICY)")
	f.Var(&format, "output", "table or json")
	_ = cmd.MarkFlagRequired("workspace")
	_ = cmd.MarkFlagRequired("credits")
	_ = cmd.MarkFlagRequired("operation-id")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

// newEraseCmd is `hookinbox workspaces erase`: per-tenant erasure.
func newEraseCmd() *cobra.Command {
	var ws, reason, by string
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "erase --workspace W --reason TEXT [--by WHO]",
		Short: "Redact every stored payload and email address of a workspace (audited); keys, records and balances stay",
		Long: `Redact, in one transaction, what the workspace's events and effects carried: inbox bodies,
quarantine bodies (of its linked accounts), outbox payloads (unsent ones are stopped), the feedback
texts they held, and its email addresses (the workspace's, its email destinations', the outbox's).
Event keys and body hashes stay, so a later redelivery of an erased event is still a duplicate and
changes nothing; business records, balances and the lineage (which event made which effect,
statuses, operator actions) stay too. The act and its counts are audited in operator_actions.`,
		Example: `  hookinbox workspaces erase --workspace ws_acme --reason "GDPR request #881"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(reason) == "" {
				return cli.Usagef("--reason must not be empty")
			}
			if strings.TrimSpace(by) == "" {
				return cli.Usagef("--by must not be empty")
			}
			return withStoreOps(cmd, func(env opsEnv) error {
				res, err := env.svc.EraseWorkspace(cmd.Context(), ops.Actor{Name: by}, ws, reason)
				if err != nil {
					return asUsage(err)
				}
				c := res.Counts
				v := map[string]any{"workspace": ws, "counts": c, "operator_action": res.ActionID}
				n := func(v int64) string { return strconv.FormatInt(v, 10) }
				return cli.Render(env.out, format, v,
					[]string{"WORKSPACE", "INBOX", "QUARANTINE", "OUTBOX", "ALERT TEXTS", "OUTBOX STOPPED", "EMAILS"},
					[][]string{{ws, n(c.InboxPayloads), n(c.QuarantinePayloads), n(c.OutboxPayloads), n(c.FeedbackAlertTexts),
						n(c.OutboxStopped), n(c.EmailAddresses)}})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&ws, "workspace", "", "workspace id (required)")
	f.StringVar(&reason, "reason", "", "why (recorded in the audit; required)")
	f.StringVar(&by, "by", defaultActor(), "who (recorded in the audit)")
	f.Var(&format, "output", "table or json")
	_ = cmd.MarkFlagRequired("workspace")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}
