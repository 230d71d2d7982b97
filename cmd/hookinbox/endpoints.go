package main

import (
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/cmd/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store"
	"github.com/hookinbox/hookinbox/providers"
	_ "github.com/hookinbox/hookinbox/providers/all" // the providers an endpoint may name
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func newEndpointsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "Register webhook endpoints, their secrets and account→workspace links",
		Long: `An endpoint is one intake URL, POST /webhooks/SLUG, for one provider and environment.
Secrets are never printed: listings show an id and a short fingerprint.`,
	}
	cmd.AddCommand(newEndpointsAddCmd(), newEndpointsLinkCmd(), newEndpointsUnlinkCmd(),
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

func newEndpointsAddCmd() *cobra.Command {
	var e store.NewEndpoint
	var secretAccounts string
	cmd := &cobra.Command{
		Use: "add --slug S --provider " + strings.Join(providers.Names(), "|") + " --environment live|test " +
			"(--secret-file F | --secret-env VAR | --secret-stdin | --secret SECRET)… [--secret-accounts A,B]",
		Short: "Register an endpoint",
		Long: `Register an endpoint. Give one signing secret per active secret (two while rotating), from a file
(--secret-file), an environment variable (--secret-env), standard input (--secret-stdin, one per
line) or, visible in the process list and shell history, the command line (--secret). Each flag
may be repeated. Secrets are checked against the provider's format (at least 24 random bytes)
and stored sealed (HOOKINBOX_SECRETS_KEY); the API key likewise (--api-key-file, --api-key-env,
--api-key-stdin or --api-key).

--secret-accounts binds the secrets to the source accounts they may sign for: a delivery they
verify that claims another account is quarantined (account_mismatch), so one tenant holding a
secret cannot sign events into another tenant's workspace. Without it a secret may sign for any
linked account.

Source accounts: Stripe Connect events name theirs (the event's "account"); for other events the
account is --account, or, when --account is not given, the endpoint's single linked account.
Shopify's shop header is not signed: bind the shop with --account (or --secret-accounts), else
deliveries are only accepted while the endpoint links exactly one shop.
Standard Webhooks endpoints locate fields with gjson paths: --type-path (default "type"),
--resource-path (default "data.id"), --account-path (e.g. "data.project_id"), --resource-kind
(default: the type before its first dot). --version-path names a monotonic per-resource version
when the provider sends one (e.g. "data.object.version").`,
		Example: `  hookinbox endpoints add --slug stripe-live --provider stripe --environment live --secret-file stripe.secret
  printf '%s\n' "$SECRET" | hookinbox endpoints add --slug sinalio --provider standard --environment live \
      --secret-stdin --account-path data.project_id --resource-path data.id
  hookinbox endpoints add --slug shop-a --provider shopify --environment live --secret-env SHOPIFY_SECRET \
      --account shop-a.myshopify.com`,
		Args: cobra.NoArgs,
	}
	secrets := addSecretFlags(cmd, "secret", "signing secret", true)
	apiKey := addSecretFlags(cmd, "api-key", "provider API key", false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !slugPattern.MatchString(e.Slug) {
			return cli.Usagef("--slug must be 1-63 lowercase letters, digits, '-' or '_' (got %q)", e.Slug)
		}
		if _, ok := providers.Lookup(e.Provider); !ok {
			return cli.Usagef("--provider must be %s (got %q)", providers.OneOf(), e.Provider)
		}
		if e.Environment != keys.EnvLive && e.Environment != keys.EnvTest {
			return cli.Usagef("--environment must be live or test (got %q)", e.Environment)
		}
		if err := bothStdin(secrets, apiKey); err != nil {
			return err
		}
		var err error
		if e.Secrets, err = secrets.read(cmd, cmd.ErrOrStderr()); err != nil {
			return err
		}
		if len(e.Secrets) == 0 {
			return cli.Usagef("a signing secret is required: --secret-file, --secret-env, --secret-stdin or --secret (repeat to register several)")
		}
		for _, s := range e.Secrets {
			if err := providers.ValidateSecret(e.Provider, s); err != nil {
				return cli.Usagef("secret: %v", err)
			}
		}
		if e.APIKey, err = apiKey.one(cmd, cmd.ErrOrStderr()); err != nil {
			return err
		}
		e.SecretAccounts = parseAccounts(secretAccounts)
		if e.Account != "" && len(e.SecretAccounts) > 0 && !slices.Contains(e.SecretAccounts, e.Account) {
			return cli.Usagef("--secret-accounts %s does not include the endpoint's own --account %s", secretAccounts, e.Account)
		}
		if e.Provider == keys.ProviderShopify && e.Account == "" && len(e.SecretAccounts) == 0 {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning: Shopify's shop header is not signed; without --account or --secret-accounts "+
				"this endpoint accepts deliveries only while it links exactly one shop")
		}
		return withStore(cmd, func(st *store.Store) error {
			if err := st.InsertEndpoint(cmd.Context(), e); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s registered: POST /webhooks/%s (%s, %s, %d secret(s))\n",
				e.Slug, e.Slug, e.Provider, e.Environment, len(e.Secrets))
			return nil
		})
	}
	f := cmd.Flags()
	f.StringVar(&e.Slug, "slug", "", "endpoint slug, the last part of its URL (required)")
	f.StringVar(&e.Provider, "provider", "", providers.OneOf()+" (required)")
	f.StringVar(&e.Environment, "environment", "", "live or test (required)")
	f.StringVar(&secretAccounts, "secret-accounts", "", "comma-separated source accounts the secrets may sign for (default: any linked account)")
	f.StringVar(&e.Account, "account", "", "the endpoint's own source account (default: its single linked account)")
	f.StringVar(&e.APIBaseURL, "api-base-url", "", "provider API base URL for fetches and reconciliation")
	f.StringVar(&e.Settings.TypePath, "type-path", "", "JSON path of the event type (standard)")
	f.StringVar(&e.Settings.ResourcePath, "resource-path", "", "JSON path of the resource id (standard)")
	f.StringVar(&e.Settings.ResourceKind, "resource-kind", "", "resource kind (standard; default from the type)")
	f.StringVar(&e.Settings.AccountPath, "account-path", "", "JSON path of the source account (standard)")
	f.StringVar(&e.Settings.VersionPath, "version-path", "", "JSON path of a monotonic per-resource version")
	for _, n := range []string{"slug", "provider", "environment"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

func newEndpointsLinkCmd() *cobra.Command {
	var slug, account, workspace string
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
			return withStore(cmd, func(st *store.Store) error {
				if err := st.LinkAccount(cmd.Context(), slug, account, workspace); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s: account %s → workspace %s\n", slug, account, workspace)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	cmd.Flags().StringVar(&account, "account", "", "source account, e.g. acct_… (required)")
	cmd.Flags().StringVar(&workspace, "workspace", "", "workspace id (required)")
	for _, n := range []string{"slug", "account", "workspace"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

func newEndpointsUnlinkCmd() *cobra.Command {
	var slug, account string
	cmd := &cobra.Command{
		Use:   "unlink --slug S --account ACCOUNT",
		Short: "Remove an account mapping (its new events are quarantined as unknown_account)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				if err := st.UnlinkAccount(cmd.Context(), slug, account); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s: account %s unlinked\n", slug, account)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	cmd.Flags().StringVar(&account, "account", "", "source account (required)")
	_ = cmd.MarkFlagRequired("slug")
	_ = cmd.MarkFlagRequired("account")
	return cmd
}

// endpointView is an endpoint as listed: secrets as ids and fingerprints.
type endpointView struct {
	Slug        string                `json:"slug"`
	Provider    string                `json:"provider"`
	Environment string                `json:"environment"`
	Account     string                `json:"account,omitempty"`
	APIBaseURL  string                `json:"api_base_url,omitempty"`
	APIKeySet   bool                  `json:"api_key_set"`
	Settings    keys.EndpointSettings `json:"settings"`
	Secrets     []secretView          `json:"secrets"`
	Links       map[string]string     `json:"links"`
}

type secretView struct {
	ID          int64    `json:"id"`
	Fingerprint string   `json:"fingerprint"`
	Accounts    []string `json:"accounts,omitempty"`
	CreatedAt   string   `json:"created_at"`
}

func newEndpointsListCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List endpoints, secret fingerprints and links (never the secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				eps, err := st.ListEndpoints(cmd.Context())
				if err != nil {
					return err
				}
				views := make([]endpointView, 0, len(eps))
				var rows [][]string
				for _, e := range eps {
					v := endpointView{Slug: e.Slug, Provider: e.Provider, Environment: e.Environment, Account: e.Account,
						APIBaseURL: e.APIBaseURL, APIKeySet: e.HasAPIKey, Settings: e.Settings, Links: e.Links}
					var secs []string
					for _, s := range e.Secrets {
						v.Secrets = append(v.Secrets, secretView{ID: s.ID, Fingerprint: s.Fingerprint(), Accounts: s.Accounts,
							CreatedAt: s.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")})
						sec := "#" + strconv.FormatInt(s.ID, 10) + ":" + s.Fingerprint()
						if len(s.Accounts) > 0 {
							sec += "[" + strings.Join(s.Accounts, ",") + "]"
						}
						secs = append(secs, sec)
					}
					var links []string
					for a, w := range e.Links {
						links = append(links, a+"→"+w)
					}
					sort.Strings(links)
					views = append(views, v)
					rows = append(rows, []string{e.Slug, e.Provider, e.Environment, orDash(e.Account),
						strings.Join(secs, " "), orDash(strings.Join(links, " ")), orDash(e.APIBaseURL)})
				}
				return cli.Render(cmd.OutOrStdout(), format, views,
					[]string{"SLUG", "PROVIDER", "ENV", "ACCOUNT", "SECRETS", "LINKS", "API"}, rows)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newEndpointsRemoveCmd() *cobra.Command {
	var slug string
	cmd := &cobra.Command{
		Use:   "remove --slug S",
		Short: "Remove an endpoint, its secrets and links (its inbox rows stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				if err := st.DeleteEndpoint(cmd.Context(), slug); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s removed\n", slug)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	_ = cmd.MarkFlagRequired("slug")
	return cmd
}

func newEndpointsSecretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Rotate signing secrets: add the new one, let the sender switch, remove the old one",
	}
	var slug, accounts string
	add := &cobra.Command{
		Use:   "add --slug S (--secret-file F | --secret-env VAR | --secret-stdin | --secret SECRET) [--secret-accounts A,B]",
		Short: "Add a signing secret (both old and new are accepted until the old one is removed)",
		Args:  cobra.NoArgs,
	}
	secret := addSecretFlags(add, "secret", "new signing secret", false)
	add.RunE = func(cmd *cobra.Command, _ []string) error {
		value, err := secret.one(cmd, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if value == "" {
			return cli.Usagef("the new secret is required: --secret-file, --secret-env, --secret-stdin or --secret")
		}
		return withStore(cmd, func(st *store.Store) error {
			ep, err := st.GetIntakeEndpoint(cmd.Context(), slug)
			if err != nil {
				return err
			}
			if err := providers.ValidateSecret(ep.Provider, value); err != nil {
				return cli.Usagef("secret: %v", err)
			}
			id, err := store.InsertSecret(cmd.Context(), st.Pool, st.Keys, slug, value, parseAccounts(accounts))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s: secret #%d (%s) added\n", slug, id, keys.Secret{Value: value}.Fingerprint())
			return nil
		})
	}
	add.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	add.Flags().StringVar(&accounts, "secret-accounts", "", "comma-separated source accounts the secret may sign for (default: any linked account)")
	_ = add.MarkFlagRequired("slug")

	var bslug, baccounts string
	var bid int64
	var bany bool
	bind := &cobra.Command{
		Use:   "bind --slug S --id N (--accounts A,B | --any)",
		Short: "Set the source accounts a signing secret may sign for (others are quarantined as account_mismatch)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list := parseAccounts(baccounts)
			if bany == (len(list) > 0) {
				return cli.Usagef("give exactly one of --accounts A,B or --any")
			}
			return withStore(cmd, func(st *store.Store) error {
				if err := st.BindSecret(cmd.Context(), bslug, bid, list); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s: secret #%d may sign for %s\n", bslug, bid, orDefault(strings.Join(list, ", "), "any linked account"))
				return nil
			})
		},
	}
	bind.Flags().StringVar(&bslug, "slug", "", "endpoint slug (required)")
	bind.Flags().Int64Var(&bid, "id", 0, "secret id (required; see 'endpoints list')")
	bind.Flags().StringVar(&baccounts, "accounts", "", "comma-separated source accounts")
	bind.Flags().BoolVar(&bany, "any", false, "any account linked to the endpoint")
	_ = bind.MarkFlagRequired("slug")
	_ = bind.MarkFlagRequired("id")

	var rslug string
	var id int64
	remove := &cobra.Command{
		Use:   "remove --slug S --id N",
		Short: "Remove a signing secret by id (see 'endpoints list'); the last one cannot be removed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				if err := st.DeleteSecret(cmd.Context(), rslug, id); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s: secret #%d removed\n", rslug, id)
				return nil
			})
		},
	}
	remove.Flags().StringVar(&rslug, "slug", "", "endpoint slug (required)")
	remove.Flags().Int64Var(&id, "id", 0, "secret id (required)")
	_ = remove.MarkFlagRequired("slug")
	_ = remove.MarkFlagRequired("id")
	cmd.AddCommand(add, bind, remove)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
