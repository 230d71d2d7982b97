package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/ops"
)

func newEndpointsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "Register webhook endpoints, their secrets and account→workspace links",
		Long: `An endpoint is one intake URL, POST /webhooks/SLUG, for one provider and environment.
Secrets and API keys are never printed: listings show an id and a short fingerprint. Every
change is audited (who: --by, default $USER; why: --reason).`,
	}
	cmd.AddCommand(newEndpointsAddCmd(), newEndpointsUpdateCmd(), newEndpointsLinkCmd(), newEndpointsUnlinkCmd(),
		newEndpointsListCmd(), newEndpointsRemoveCmd(), newEndpointsSecretsCmd())
	return cmd
}

// withStore runs fn with a store opened from the environment's configuration.
func withStore(cmd *cobra.Command, fn func(st *store.Store) error) error {
	return withConfigStore(cmd, func(_ config.Config, st *store.Store) error { return fn(st) })
}

// withConfigStore runs fn with the configuration and a store opened on it.
func withConfigStore(cmd *cobra.Command, fn func(cfg config.Config, st *store.Store) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	st, err := openStore(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(cfg, st)
}

// quietLogger is the Temporal SDK's logger for operator commands: errors
// only, on stderr (failures are reported by the command itself).
func quietLogger(cmd *cobra.Command) *slog.Logger {
	return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
}

// auditFlags are who and why of an audited configuration change.
type auditFlags struct{ by, reason string }

func (a *auditFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.by, "by", defaultActor(), "who (recorded in the audit)")
	cmd.Flags().StringVar(&a.reason, "reason", "", "why (recorded in the audit)")
}

func (a *auditFlags) actor() ops.Actor { return ops.Actor{Name: a.by} }

func newEndpointsAddCmd() *cobra.Command {
	var e store.NewEndpoint
	var af auditFlags
	cmd := &cobra.Command{
		Use:   "add --slug S --provider stripe|github|standard|shopify --environment live|test --secret SECRET [--secret SECRET2]",
		Short: "Register an endpoint",
		Long: `Register an endpoint. Give --secret once per active signing secret (two while rotating).

Source accounts: Stripe Connect events name theirs (the event's "account"); for other events the
account is --account, or, when --account is not given, the endpoint's single linked account.
Standard Webhooks endpoints locate fields with gjson paths: --type-path (default "type"),
--resource-path (default "data.id"), --account-path (e.g. "data.project_id"), --resource-kind
(default: the type before its first dot). --version-path names a monotonic per-resource version
when the provider sends one (e.g. "data.object.version").`,
		Example: `  hookinbox endpoints add --slug stripe-live --provider stripe --environment live --secret whsec_…
  hookinbox endpoints add --slug sinalio --provider standard --environment live --secret whsec_… \
      --account-path data.project_id --resource-path data.id`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ops.ValidateNewEndpoint(e); err != nil {
				return asUsage(err)
			}
			return withOps(cmd, func(env opsEnv) error {
				if err := env.svc.AddEndpoint(cmd.Context(), af.actor(), e, af.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "endpoint %s registered: POST /webhooks/%s (%s, %s, %d secret(s))\n",
					e.Slug, e.Slug, e.Provider, e.Environment, len(e.Secrets))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&e.Slug, "slug", "", "endpoint slug, the last part of its URL (required)")
	f.StringVar(&e.Provider, "provider", "", "stripe, github, standard or shopify (required)")
	f.StringVar(&e.Environment, "environment", "", "live or test (required)")
	f.StringArrayVar(&e.Secrets, "secret", nil, "signing secret; repeat for several (required)")
	f.StringVar(&e.Account, "account", "", "the endpoint's own source account (default: its single linked account)")
	f.StringVar(&e.APIBaseURL, "api-base-url", "", "provider API base URL for fetches and reconciliation")
	f.StringVar(&e.APIKey, "api-key", "", "provider API key (stored, never printed)")
	f.StringVar(&e.Settings.TypePath, "type-path", "", "JSON path of the event type (standard)")
	f.StringVar(&e.Settings.ResourcePath, "resource-path", "", "JSON path of the resource id (standard)")
	f.StringVar(&e.Settings.ResourceKind, "resource-kind", "", "resource kind (standard; default from the type)")
	f.StringVar(&e.Settings.AccountPath, "account-path", "", "JSON path of the source account (standard)")
	f.StringVar(&e.Settings.VersionPath, "version-path", "", "JSON path of a monotonic per-resource version")
	af.register(cmd)
	for _, n := range []string{"slug", "provider", "environment", "secret"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

func newEndpointsUpdateCmd() *cobra.Command {
	var slug string
	var af auditFlags
	vals := map[string]*string{}
	names := []struct{ flag, help string }{
		{"account", "the endpoint's own source account (\"\" clears it)"},
		{"api-base-url", "provider API base URL (\"\" clears it)"},
		{"api-key", "provider API key (stored, never printed; \"\" clears it)"},
		{"type-path", "JSON path of the event type (standard)"},
		{"resource-path", "JSON path of the resource id (standard)"},
		{"resource-kind", "resource kind (standard)"},
		{"account-path", "JSON path of the source account (standard)"},
		{"version-path", "JSON path of a monotonic per-resource version"},
	}
	cmd := &cobra.Command{
		Use:   "update --slug S [--account A] [--api-base-url URL] [--api-key KEY] [--type-path P] [--resource-path P] [--resource-kind K] [--account-path P] [--version-path P]",
		Short: "Change an endpoint's account, provider API settings or extraction paths (audited)",
		Long: `Change only the fields given; an empty value clears an optional one (--account "", --api-key "").
Secrets are rotated with 'endpoints secrets add' and 'endpoints secrets remove'. The intake
picks the change up within HOOKINBOX_ENDPOINT_CACHE_TTL.`,
		Example: `  hookinbox endpoints update --slug stripe-live --api-key sk_live_… --reason "key rotated (SEC-12)"
  hookinbox endpoints update --slug sinalio --resource-path data.item.id`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var c ops.EndpointChange
			set := func(flag string) *string {
				if !cmd.Flags().Changed(flag) {
					return nil
				}
				return vals[flag]
			}
			c.Account, c.APIBaseURL, c.APIKey = set("account"), set("api-base-url"), set("api-key")
			c.TypePath, c.ResourcePath, c.ResourceKind = set("type-path"), set("resource-path"), set("resource-kind")
			c.AccountPath, c.VersionPath = set("account-path"), set("version-path")
			if c.Empty() {
				return cli.Usagef("nothing to change: give at least one of --%s", strings.Join(flagNames(names), ", --"))
			}
			return withOps(cmd, func(env opsEnv) error {
				v, err := env.svc.UpdateEndpoint(cmd.Context(), af.actor(), slug, c, af.reason)
				if err != nil {
					return asUsage(err)
				}
				var changed []string
				for _, n := range names {
					if cmd.Flags().Changed(n.flag) {
						changed = append(changed, n.flag)
					}
				}
				fmt.Fprintf(env.out, "endpoint %s updated: %s\n", v.Slug, strings.Join(changed, ", "))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	for _, n := range names {
		v := new(string)
		vals[n.flag] = v
		cmd.Flags().StringVar(v, n.flag, "", n.help)
	}
	af.register(cmd)
	_ = cmd.MarkFlagRequired("slug")
	return cmd
}

func flagNames(names []struct{ flag, help string }) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, n.flag)
	}
	return out
}

func newEndpointsLinkCmd() *cobra.Command {
	var slug, account, workspace string
	var af auditFlags
	cmd := &cobra.Command{
		Use:   "link --slug S --account ACCOUNT --workspace WORKSPACE",
		Short: "Map a verified source account of an endpoint to a workspace",
		Long: `Map a source account to the workspace its events belong to (created if new). The tenant of an
event always comes from this mapping, never from an id in the payload. Linking again moves the account.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(account) == "" || strings.TrimSpace(workspace) == "" {
				return cli.Usagef("--account and --workspace must not be empty")
			}
			return withOps(cmd, func(env opsEnv) error {
				if err := env.svc.LinkAccount(cmd.Context(), af.actor(), slug, account, workspace, af.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "endpoint %s: account %s → workspace %s\n", slug, account, workspace)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	cmd.Flags().StringVar(&account, "account", "", "source account, e.g. acct_… (required)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace id (required)")
	af.register(cmd)
	for _, n := range []string{"slug", "account", "workspace"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

func newEndpointsUnlinkCmd() *cobra.Command {
	var slug, account string
	var af auditFlags
	cmd := &cobra.Command{
		Use:   "unlink --slug S --account ACCOUNT",
		Short: "Remove an account mapping (its new events are quarantined as unknown_account)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				if err := env.svc.UnlinkAccount(cmd.Context(), af.actor(), slug, account, af.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "endpoint %s: account %s unlinked\n", slug, account)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	cmd.Flags().StringVar(&account, "account", "", "source account (required)")
	af.register(cmd)
	_ = cmd.MarkFlagRequired("slug")
	_ = cmd.MarkFlagRequired("account")
	return cmd
}

func newEndpointsListCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List endpoints, secret fingerprints and links (never the secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				views, err := env.svc.ListEndpoints(cmd.Context())
				if err != nil {
					return err
				}
				var rows [][]string
				for _, v := range views {
					var secs []string
					for _, s := range v.Secrets {
						secs = append(secs, "#"+strconv.FormatInt(s.ID, 10)+":"+s.Fingerprint)
					}
					rows = append(rows, []string{v.Slug, v.Provider, v.Environment, orDash(v.Account),
						strings.Join(secs, " "), orDash(strings.Join(v.SortedLinks(), " ")), orDash(v.APIBaseURL)})
				}
				return cli.Render(env.out, format, views,
					[]string{"SLUG", "PROVIDER", "ENV", "ACCOUNT", "SECRETS", "LINKS", "API"}, rows)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newEndpointsRemoveCmd() *cobra.Command {
	var slug string
	var af auditFlags
	cmd := &cobra.Command{
		Use:   "remove --slug S",
		Short: "Remove an endpoint, its secrets and links (its inbox rows stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				if err := env.svc.RemoveEndpoint(cmd.Context(), af.actor(), slug, af.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "endpoint %s removed\n", slug)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	af.register(cmd)
	_ = cmd.MarkFlagRequired("slug")
	return cmd
}

func newEndpointsSecretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Rotate signing secrets: add the new one, let the sender switch, remove the old one",
	}
	var slug, secret string
	var retire bool
	var af auditFlags
	add := &cobra.Command{
		Use:   "add --slug S --secret SECRET [--retire-others]",
		Short: "Add a signing secret (both old and new are accepted until the old one is removed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				res, err := env.svc.AddSecret(cmd.Context(), af.actor(), slug, secret, retire, af.reason)
				if err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "endpoint %s: secret #%d (%s) added\n", slug, res.ID, res.Fingerprint)
				for _, id := range res.Retired {
					fmt.Fprintf(env.out, "endpoint %s: secret #%d removed\n", slug, id)
				}
				return nil
			})
		},
	}
	add.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	add.Flags().StringVar(&secret, "secret", "", "the new secret (required)")
	add.Flags().BoolVar(&retire, "retire-others", false, "remove every other secret at once (the sender already switched)")
	af.register(add)
	_ = add.MarkFlagRequired("slug")
	_ = add.MarkFlagRequired("secret")

	var rslug string
	var id int64
	var raf auditFlags
	remove := &cobra.Command{
		Use:   "remove --slug S --id N",
		Short: "Remove a signing secret by id (see 'endpoints list'); the last one cannot be removed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withOps(cmd, func(env opsEnv) error {
				if err := env.svc.RemoveSecret(cmd.Context(), raf.actor(), rslug, id, raf.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "endpoint %s: secret #%d removed\n", rslug, id)
				return nil
			})
		},
	}
	remove.Flags().StringVar(&rslug, "slug", "", "endpoint slug (required)")
	remove.Flags().Int64Var(&id, "id", 0, "secret id (required)")
	raf.register(remove)
	_ = remove.MarkFlagRequired("slug")
	_ = remove.MarkFlagRequired("id")
	cmd.AddCommand(add, remove)
	return cmd
}
