package command

import (
	"fmt"
	"net/mail"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/ops"
)

func newWorkspacesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workspaces",
		Short: "Workspaces: credits balance and corrections, access, email, team destinations, erasure",
	}
	var id, email string
	var saf auditFlags
	set := &cobra.Command{
		Use:   "set --id WORKSPACE --email ADDRESS",
		Short: "Set where a workspace's credit confirmations go (empty to stop them)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if email != "" {
				if _, err := mail.ParseAddress(email); err != nil {
					return cli.Usagef("--email: %v", err)
				}
			}
			return withOps(cmd, func(env opsEnv) error {
				if err := env.svc.SetWorkspaceEmail(cmd.Context(), saf.actor(), id, email, saf.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "workspace %s: email %s\n", id, orDash(email))
				return nil
			})
		},
	}
	set.Flags().StringVar(&id, "id", "", "workspace id (required)")
	set.Flags().StringVar(&email, "email", "", "confirmation email address")
	saf.register(set)
	_ = set.MarkFlagRequired("id")

	var d ops.NewDestination
	var daf auditFlags
	add := &cobra.Command{
		Use:   "add-destination --workspace W --name N (--webhook URL (--secret-file F | --secret-env VAR | --secret-stdin | --secret whsec_…) | --email ADDRESS)",
		Short: "Add a team destination for feedback alerts (a Standard Webhooks-signed HTTP endpoint or an email)",
		Long: `Add or replace a team destination. Each new feedback item's initial alert gets one outbox intent
per enabled destination, the destination's name being part of its operation key. Webhook
destinations receive a JSON body signed with Standard Webhooks (webhook-id stable per operation);
the secret (whsec_ + base64 of at least 24 random bytes) is read from a file, an environment
variable or standard input (or, visible in the process list, --secret) and stored sealed.`,
		Args: cobra.NoArgs,
	}
	secretIn := addSecretFlags(add, "secret", "Standard Webhooks signing secret (whsec_…) for --webhook", false)
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		secret, err := secretIn.one(cmd, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		d.Secret = secret
		return withOps(cmd, func(env opsEnv) error {
			v, err := env.svc.UpsertDestination(cmd.Context(), daf.actor(), d, daf.reason)
			if err != nil {
				return asUsage(err)
			}
			fmt.Fprintf(env.out, "workspace %s: destination %s (%s) saved\n", v.Workspace, v.Name, v.Kind)
			return nil
		})
	}
	add.Flags().StringVar(&d.Workspace, "workspace", "", "workspace id (required)")
	add.Flags().StringVar(&d.Name, "name", "", "destination name (required)")
	add.Flags().StringVar(&d.Webhook, "webhook", "", "HTTP endpoint URL")
	add.Flags().StringVar(&d.Email, "email", "", "email address")
	daf.register(add)
	_ = add.MarkFlagRequired("workspace")
	_ = add.MarkFlagRequired("name")

	format := cli.OutputFormat("table")
	var lws string
	list := &cobra.Command{
		Use:   "destinations [--workspace W]",
		Short: "List team destinations (secrets are never shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				views, err := env.svc.ListDestinations(cmd.Context(), lws)
				if err != nil {
					return err
				}
				var rows [][]string
				for _, d := range views {
					rows = append(rows, []string{strconv.FormatInt(d.ID, 10), d.Workspace, d.Name, d.Kind, d.Target, strconv.FormatBool(d.Enabled)})
				}
				return cli.Render(env.out, format, views, []string{"ID", "WORKSPACE", "NAME", "KIND", "TARGET", "ENABLED"}, rows)
			})
		},
	}
	list.Flags().StringVar(&lws, "workspace", "", "only this workspace")
	list.Flags().Var(&format, "output", "table or json")

	wformat := cli.OutputFormat("table")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a workspace: credits balance, access, email",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withOps(cmd, func(env opsEnv) error {
				w, err := env.svc.ShowWorkspace(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				v := map[string]any{"id": w.ID, "credits_balance": w.CreditsBalance, "email": w.Email, "has_access": w.HasAccess}
				return cli.Render(env.out, wformat, v, []string{"ID", "CREDITS", "ACCESS", "EMAIL"},
					[][]string{{w.ID, strconv.FormatInt(w.CreditsBalance, 10), strconv.FormatBool(w.HasAccess), orDash(w.Email)}})
			})
		},
	}
	show.Flags().Var(&wformat, "output", "table or json")

	lformat := cli.OutputFormat("table")
	var limit int
	ls := &cobra.Command{
		Use:   "list",
		Short: "List workspaces: credits, access, linked accounts, destinations",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				ws, err := env.svc.ListWorkspaces(cmd.Context(), limit)
				if err != nil {
					return asUsage(err)
				}
				var rows [][]string
				for _, w := range ws {
					rows = append(rows, []string{w.ID, strconv.FormatInt(w.CreditsBalance, 10), strconv.FormatBool(w.HasAccess),
						orDash(w.Email), strconv.Itoa(w.Accounts), strconv.Itoa(w.Destinations)})
				}
				return cli.Render(env.out, lformat, ws, []string{"ID", "CREDITS", "ACCESS", "EMAIL", "ACCOUNTS", "DESTINATIONS"}, rows)
			})
		},
	}
	ls.Flags().IntVar(&limit, "limit", 200, "at most this many workspaces")
	ls.Flags().Var(&lformat, "output", "table or json")
	cmd.AddCommand(set, add, list, show, ls, newAdjustCmd(), newEraseCmd())
	return cmd
}
