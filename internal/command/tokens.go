package command

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/ops"
)

func newTokensCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "API tokens for the operator console and API: create (printed once), list, revoke",
		Long: `A token authenticates an operator to the console and API (HOOKINBOX_INTERNAL_ADDR) with one role:

  viewer    reads everything but payloads
  operator  also replays, resolves quarantine, releases outbox rows, reads payloads, manages schedules
  admin     also manages endpoints (paths, API key, account, base URL, secrets) and workspaces

Only the token's SHA-256 is stored; the token is printed once by 'create'. Every change an
operator makes through the API is audited under the token's name.`,
	}
	cmd.AddCommand(newTokensCreateCmd(), newTokensListCmd(), newTokensRevokeCmd())
	return cmd
}

func newTokensCreateCmd() *cobra.Command {
	var role, name, by string
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:     "create --role viewer|operator|admin --name NAME",
		Short:   "Create a token and print it once (it is not stored, only its hash)",
		Example: `  hookinbox tokens create --role operator --name alice`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !ops.RoleAtLeast(role, "viewer") {
				return cli.Usagef("--role must be one of %s (got %q)", strings.Join(ops.Roles, ", "), role)
			}
			return withOps(cmd, func(env opsEnv) error {
				t, err := env.svc.CreateToken(cmd.Context(), ops.Actor{Name: by}, name, role)
				if err != nil {
					return asUsage(err)
				}
				if format == "json" {
					return cli.Render(env.out, format, t, nil, nil)
				}
				fmt.Fprintf(env.out, "%s\n", t.Token)
				fmt.Fprintf(env.errOut, "token %q (%s) created; it is shown only now: keep it in a secret store\n", t.Name, t.Role)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "viewer, operator or admin (required)")
	cmd.Flags().StringVar(&name, "name", "", "who or what uses it; operator acts are audited under it (required)")
	cmd.Flags().StringVar(&by, "by", defaultActor(), "who creates it (recorded in the audit)")
	cmd.Flags().Var(&format, "output", "table (the token alone on stdout) or json")
	_ = cmd.MarkFlagRequired("role")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

func newTokensListCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens: name, role, created, last used, revoked (never the tokens)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				ts, err := env.svc.ListTokens(cmd.Context())
				if err != nil {
					return err
				}
				rows := make([][]string, 0, len(ts))
				for _, t := range ts {
					rows = append(rows, []string{t.Name, t.Role, t.CreatedBy, fmtTime(t.CreatedAt), fmtTimePtr(t.LastUsedAt), fmtTimePtr(t.RevokedAt)})
				}
				return cli.Render(env.out, format, ts, []string{"NAME", "ROLE", "CREATED BY", "CREATED (UTC)", "LAST USED", "REVOKED"}, rows)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newTokensRevokeCmd() *cobra.Command {
	var by string
	cmd := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a token at once (its name stays taken, so the audit stays unambiguous)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withOps(cmd, func(env opsEnv) error {
				t, err := env.svc.RevokeToken(cmd.Context(), ops.Actor{Name: by}, args[0])
				if err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "token %s (%s) revoked\n", t.Name, t.Role)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&by, "by", defaultActor(), "who revokes it (recorded in the audit)")
	return cmd
}
