package main

import (
	"fmt"
	"net/mail"
	"net/url"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/providers"
)

func newWorkspacesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workspaces",
		Short: "Workspaces: credits balance, access, confirmation email and team destinations",
	}
	var id, email string
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
			return withStore(cmd, func(st *store.Store) error {
				if err := store.SetWorkspaceEmail(cmd.Context(), st.Pool, id, email); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "workspace %s: email %s\n", id, orDash(email))
				return nil
			})
		},
	}
	set.Flags().StringVar(&id, "id", "", "workspace id (required)")
	set.Flags().StringVar(&email, "email", "", "confirmation email address")
	_ = set.MarkFlagRequired("id")

	var ws, name, hook, to string
	add := &cobra.Command{
		Use:   "add-destination --workspace W --name N (--webhook URL (--secret-file F | --secret-env VAR | --secret-stdin | --secret whsec_…) | --email ADDRESS)",
		Short: "Add a team destination for feedback alerts (a Standard Webhooks-signed HTTP endpoint or an email)",
		Long: `Add or replace a team destination. Each new feedback item's initial alert gets one outbox intent
per enabled destination, the destination's name being part of its operation key. Webhook
destinations receive a JSON body signed with Standard Webhooks (webhook-id stable per operation);
the secret (whsec_ + base64 of at least 24 random bytes) is stored sealed.`,
		Args: cobra.NoArgs,
	}
	secretIn := addSecretFlags(add, "secret", "Standard Webhooks signing secret (whsec_…) for --webhook", false)
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		d := store.Destination{WorkspaceID: ws, Name: name, Enabled: true}
		secret, err := secretIn.one(cmd, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		switch {
		case hook != "" && to == "":
			u, err := url.Parse(hook)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return cli.Usagef("--webhook must be an http(s) URL")
			}
			if err := providers.ValidateSecret(keys.ProviderStandard, secret); err != nil {
				return cli.Usagef("--secret: %v", err)
			}
			d.Kind, d.Target, d.Secret = "webhook", hook, secret
		case to != "" && hook == "":
			if _, err := mail.ParseAddress(to); err != nil {
				return cli.Usagef("--email: %v", err)
			}
			d.Kind, d.Target = "email", to
		default:
			return cli.Usagef("give exactly one of --webhook or --email")
		}
		if !slugPattern.MatchString(name) {
			return cli.Usagef("--name must be 1-63 lowercase letters, digits, '-' or '_'")
		}
		return withStore(cmd, func(st *store.Store) error {
			if err := store.UpsertDestination(cmd.Context(), st.Pool, st.Keys, d); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "workspace %s: destination %s (%s) saved\n", ws, name, d.Kind)
			return nil
		})
	}
	add.Flags().StringVar(&ws, "workspace", "", "workspace id (required)")
	add.Flags().StringVar(&name, "name", "", "destination name (required)")
	add.Flags().StringVar(&hook, "webhook", "", "HTTP endpoint URL")
	add.Flags().StringVar(&to, "email", "", "email address")
	_ = add.MarkFlagRequired("workspace")
	_ = add.MarkFlagRequired("name")

	format := cli.OutputFormat("table")
	var lws string
	list := &cobra.Command{
		Use:   "destinations [--workspace W]",
		Short: "List team destinations (secrets are never shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				ds, err := store.ListDestinations(cmd.Context(), st.Pool, lws, false)
				if err != nil {
					return err
				}
				type view struct {
					ID        int64  `json:"id"`
					Workspace string `json:"workspace"`
					Name      string `json:"name"`
					Kind      string `json:"kind"`
					Target    string `json:"target"`
					Signed    bool   `json:"signed"`
					Enabled   bool   `json:"enabled"`
				}
				var views []view
				var rows [][]string
				for _, d := range ds {
					views = append(views, view{d.ID, d.WorkspaceID, d.Name, d.Kind, d.Target, d.Signed, d.Enabled})
					rows = append(rows, []string{strconv.FormatInt(d.ID, 10), d.WorkspaceID, d.Name, d.Kind, d.Target, strconv.FormatBool(d.Enabled)})
				}
				return cli.Render(cmd.OutOrStdout(), format, views, []string{"ID", "WORKSPACE", "NAME", "KIND", "TARGET", "ENABLED"}, rows)
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
			return withStore(cmd, func(st *store.Store) error {
				w, err := store.GetWorkspace(cmd.Context(), st.Pool, args[0])
				if err != nil {
					return err
				}
				access, err := store.WorkspaceHasAccess(cmd.Context(), st.Pool, w.ID)
				if err != nil {
					return err
				}
				v := map[string]any{"id": w.ID, "credits_balance": w.CreditsBalance, "email": w.Email, "has_access": access}
				return cli.Render(cmd.OutOrStdout(), wformat, v, []string{"ID", "CREDITS", "ACCESS", "EMAIL"},
					[][]string{{w.ID, strconv.FormatInt(w.CreditsBalance, 10), strconv.FormatBool(access), orDash(w.Email)}})
			})
		},
	}
	show.Flags().Var(&wformat, "output", "table or json")
	cmd.AddCommand(set, add, list, show)
	return cmd
}
