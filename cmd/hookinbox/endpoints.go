package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
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
	"github.com/hookinbox/hookinbox/providers/github"
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func newEndpointsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "Register webhook endpoints, their secrets and account→workspace links",
		Long: `An endpoint is one intake URL, POST /webhooks/SLUG, for one provider and environment.
Secrets are never printed: listings show an id and a short fingerprint.`,
	}
	cmd.AddCommand(newEndpointsAddCmd(), newEndpointsUpdateCmd(), newEndpointsLinkCmd(), newEndpointsUnlinkCmd(), newEndpointsSetAccountCmd(),
		newEndpointsListCmd(), newEndpointsRemoveCmd(), newEndpointsSecretsCmd())
	return cmd
}

// withStore runs fn with a store opened on DATABASE_URL (the schema owner's:
// the commands that write).
func withStore(cmd *cobra.Command, fn func(st *store.Store) error) error {
	return withConfigStore(cmd, func(_ config.Config, st *store.Store) error { return fn(st) })
}

// withOperatorStore runs fn with a store opened on the read-only operator's
// URL (HOOKINBOX_OPERATOR_DATABASE_URL, else DATABASE_URL). A permission
// error says which role is missing.
func withOperatorStore(cmd *cobra.Command, fn func(st *store.Store) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	st, err := openStore(cmd.Context(), operatorDB(cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := fn(st); store.IsPermissionDenied(err) {
		return fmt.Errorf("%w (the operator's database role lacks this privilege: it should be %s, and payloads need %s "+
			"granted to it as well, e.g. GRANT %s TO alice; see 'hookinbox db roles --help')",
			err, store.RoleOperator, store.RolePayloadReader, store.RolePayloadReader)
	} else if err != nil {
		return err
	}
	return nil
}

// withConfigStore runs fn with the configuration and a store opened on
// DATABASE_URL.
func withConfigStore(cmd *cobra.Command, fn func(cfg config.Config, st *store.Store) error) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	st, err := openStore(cmd.Context(), ownerDB(cfg))
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
	cmd := &cobra.Command{
		Use:   "add --slug S --provider " + strings.Join(providers.Names(), "|") + " --environment live|test --secret SECRET [--secret SECRET2]",
		Short: "Register an endpoint",
		Long: `Register an endpoint. Give --secret once per active signing secret (two while rotating).

Source accounts: Stripe Connect events name theirs (the event's "account"); for other events the
account is --account, or, when --account is not given, the endpoint's single linked account.
Standard Webhooks endpoints locate fields with gjson paths: --type-path (default "type"),
--resource-path (default "data.id"), --account-path (e.g. "data.project_id"), --resource-kind
(default: the type before its first dot). --version-path names a monotonic per-resource version
when the provider sends one (e.g. "data.object.version").

GitHub does not redeliver a failed delivery: give a GitHub endpoint its hook (--github-hook
repo:OWNER/NAME or org:LOGIN with --github-hook-id, or app with --github-app-id) and an API key
(a token that may read and redeliver the hook's deliveries; for an App's hook, the App's PEM
private key) and the recover-github schedule recovers what never reached the inbox:
--github-recovery redeliver (default: GitHub sends it again, signed) or fetch (read from the
delivery log and admitted as a backfill). See docs/reconciliation.md.`,
		Example: `  hookinbox endpoints add --slug stripe-live --provider stripe --environment live --secret whsec_…
  hookinbox endpoints add --slug sinalio --provider standard --environment live --secret whsec_… \
      --account-path data.project_id --resource-path data.id
  hookinbox endpoints add --slug gh-acme --provider github --environment live --secret … \
      --api-key github_pat_… --github-hook repo:acme/widgets --github-hook-id 123456`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slugPattern.MatchString(e.Slug) {
				return cli.Usagef("--slug must be 1-63 lowercase letters, digits, '-' or '_' (got %q)", e.Slug)
			}
			if _, ok := providers.Lookup(e.Provider); !ok {
				return cli.Usagef("--provider must be %s (got %q)", providers.OneOf(), e.Provider)
			}
			if e.Environment != keys.EnvLive && e.Environment != keys.EnvTest {
				return cli.Usagef("--environment must be live or test (got %q)", e.Environment)
			}
			if len(e.Secrets) == 0 {
				return cli.Usagef("--secret is required (repeat it to register several)")
			}
			for _, s := range e.Secrets {
				if err := providers.ValidateSecret(e.Provider, s); err != nil {
					return cli.Usagef("--secret: %v", err)
				}
			}
			if err := checkHookSettings(e.Provider, e.Settings); err != nil {
				return err
			}
			return withStore(cmd, func(st *store.Store) error {
				if err := st.InsertEndpoint(cmd.Context(), e); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s registered: POST /webhooks/%s (%s, %s, %d secret(s))\n",
					e.Slug, e.Slug, e.Provider, e.Environment, len(e.Secrets))
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&e.Slug, "slug", "", "endpoint slug, the last part of its URL (required)")
	f.StringVar(&e.Provider, "provider", "", providers.OneOf()+" (required)")
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
	hookFlags(cmd, &e.Settings)
	for _, n := range []string{"slug", "provider", "environment", "secret"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}

// hookFlags are the flags naming a GitHub endpoint's hook and how its
// missing deliveries are recovered.
func hookFlags(cmd *cobra.Command, s *keys.EndpointSettings) {
	f := cmd.Flags()
	f.StringVar(&s.GitHubHook, "github-hook", "", `GitHub hook whose deliveries are recovered: repo:OWNER/NAME, org:LOGIN or app ("" removes it)`)
	f.Int64Var(&s.GitHubHookID, "github-hook-id", 0, "id of the repository or organization hook")
	f.Int64Var(&s.GitHubAppID, "github-app-id", 0, "the App of an app hook (--api-key is then its PEM private key)")
	f.StringVar(&s.GitHubRecovery, "github-recovery", "", "how a missing delivery comes back: redeliver (default) or fetch")
}

// checkHookSettings refuses hook settings on a provider that has no
// delivery log, and a hook or recovery mode that cannot be used.
func checkHookSettings(provider string, s keys.EndpointSettings) error {
	if s.GitHubHook == "" && s.GitHubHookID == 0 && s.GitHubAppID == 0 && s.GitHubRecovery == "" {
		return nil
	}
	if provider != keys.ProviderGitHub {
		return cli.Usagef("--github-hook, --github-hook-id, --github-app-id and --github-recovery are for github endpoints (this one is %s)", provider)
	}
	if _, ok, err := github.HookFromSettings(s); err != nil {
		return cli.Usagef("%v", err)
	} else if !ok && (s.GitHubHookID != 0 || s.GitHubAppID != 0) {
		return cli.Usagef("--github-hook-id and --github-app-id need --github-hook")
	}
	if _, err := github.RecoveryMode(s); err != nil {
		return cli.Usagef("--github-recovery: %v", err)
	}
	return nil
}

func newEndpointsUpdateCmd() *cobra.Command {
	var slug, apiKey, apiBase string
	var hook keys.EndpointSettings
	cmd := &cobra.Command{
		Use:   "update --slug S [--api-key K] [--api-base-url U] [--github-hook H --github-hook-id N] [--github-recovery M]",
		Short: "Change an endpoint's provider API credentials or its GitHub hook; flags not given stay",
		Long: `Change what an endpoint uses to ask its provider: the API key and base URL (as 'endpoints add'
takes them; "" removes one), and for a GitHub endpoint the hook whose delivery log the
recover-github schedule reads and how it recovers a missing delivery. Only the flags given change.`,
		Example: `  hookinbox endpoints update --slug gh-acme --api-key github_pat_… --github-hook repo:acme/widgets --github-hook-id 123456
  hookinbox endpoints update --slug gh-acme --github-recovery fetch
  hookinbox endpoints update --slug gh-app --github-hook app --github-app-id 424242 --api-key "$(cat app.pem)"
  hookinbox endpoints update --slug gh-acme --github-hook ""        # no more recovery`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			var u store.EndpointUpdate
			if f.Changed("api-key") {
				u.APIKey = &apiKey
			}
			if f.Changed("api-base-url") {
				u.APIBaseURL = &apiBase
			}
			changed := map[string]bool{}
			for _, n := range []string{"github-hook", "github-hook-id", "github-app-id", "github-recovery"} {
				changed[n] = f.Changed(n)
			}
			if u.APIKey == nil && u.APIBaseURL == nil && !changed["github-hook"] && !changed["github-hook-id"] &&
				!changed["github-app-id"] && !changed["github-recovery"] {
				return cli.Usagef("nothing to change: give --api-key, --api-base-url or a --github-* flag")
			}
			u.Settings = func(provider string, s *keys.EndpointSettings) error {
				if changed["github-hook"] {
					s.GitHubHook = hook.GitHubHook
					if hook.GitHubHook == "" {
						s.GitHubHookID, s.GitHubAppID = 0, 0
					}
				}
				if changed["github-hook-id"] {
					s.GitHubHookID = hook.GitHubHookID
				}
				if changed["github-app-id"] {
					s.GitHubAppID = hook.GitHubAppID
				}
				if changed["github-recovery"] {
					s.GitHubRecovery = hook.GitHubRecovery
				}
				return checkHookSettings(provider, *s)
			}
			return withStore(cmd, func(st *store.Store) error {
				return updateEndpoint(cmd.Context(), st, cmd.OutOrStdout(), slug, u)
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	cmd.Flags().StringVar(&apiKey, "api-key", "", `provider API key (stored, never printed; "" removes it)`)
	cmd.Flags().StringVar(&apiBase, "api-base-url", "", `provider API base URL ("" for the provider's own)`)
	hookFlags(cmd, &hook)
	_ = cmd.MarkFlagRequired("slug")
	return cmd
}

// updateEndpoint applies u and says what the endpoint now recovers.
func updateEndpoint(ctx context.Context, st *store.Store, out io.Writer, slug string, u store.EndpointUpdate) error {
	ep, err := st.UpdateEndpoint(ctx, slug, u)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "endpoint %s updated (API key %s, API base URL %s)\n", slug, map[bool]string{true: "set", false: "not set"}[ep.APIKey != ""],
		orDash(ep.APIBaseURL))
	if h, ok, err := github.HookFromSettings(ep.Settings); ok && err == nil {
		mode, _ := github.RecoveryMode(ep.Settings)
		if ep.APIKey == "" {
			fmt.Fprintf(out, "hook %s: not recovered until the endpoint has an API key (--api-key)\n", h)
		} else {
			fmt.Fprintf(out, "hook %s: deliveries that never reach the inbox are recovered by the recover-github schedule (%s)\n", h, mode)
		}
	}
	return nil
}

func newEndpointsLinkCmd() *cobra.Command {
	var slug, account, workspace string
	cmd := &cobra.Command{
		Use:   "link --slug S --account ACCOUNT --workspace WORKSPACE",
		Short: "Map a verified source account of an endpoint to a workspace",
		Long: `Map a source account to the workspace its events belong to (created if new). The tenant of an
event always comes from this mapping, never from an id in the payload. Linking again moves the account.

One account has one workspace: linking an account to another workspace than it has on another
endpoint of the same provider and environment is refused (the message says how to move it).

Events that name no account (Stripe events of the endpoint's own account) belong to the endpoint's
own account (--account of 'endpoints add', or 'endpoints set-account'); without one, to its single
linked account. A second link on such an endpoint records that first account as its own, so its
events keep their routing instead of becoming unknown_account. The output says where they go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(account) == "" || strings.TrimSpace(workspace) == "" {
				return cli.Usagef("--account and --workspace must not be empty")
			}
			return withStore(cmd, func(st *store.Store) error {
				return linkAccount(cmd.Context(), st, cmd.OutOrStdout(), slug, account, workspace)
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

// linkAccount links account and says where the endpoint's events that name
// no account go now.
func linkAccount(ctx context.Context, st *store.Store, out io.Writer, slug, account, workspace string) error {
	res, err := st.Link(ctx, slug, account, workspace)
	if err != nil {
		return err
	}
	moved := ""
	if res.PreviousWorkspace != "" {
		moved = " (moved from workspace " + res.PreviousWorkspace + ")"
	}
	fmt.Fprintf(out, "endpoint %s: account %s → workspace %s%s\n", slug, account, workspace, moved)
	ownWorkspace := "not linked: they are quarantined as unknown_account until it is"
	if ep, err := st.GetEndpoint(ctx, slug); err == nil {
		if w, ok := ep.Links[res.OwnAccount]; ok {
			ownWorkspace = "workspace " + w
		}
	}
	setOwn := "hookinbox endpoints set-account --slug " + slug + " --account ACCOUNT"
	switch {
	case res.PinnedOwnAccount:
		fmt.Fprintf(out, "events that name no account keep going to %s (%s): it is now recorded as the endpoint's own account, "+
			"so this second link does not make them unknown. If they belong to another account: %s\n", res.OwnAccount, ownWorkspace, setOwn)
	case res.OwnAccountImplicit:
		fmt.Fprintf(out, "events that name no account go to %s (%s), the endpoint's only link; a second link records it as the endpoint's own account\n",
			res.OwnAccount, ownWorkspace)
	case res.OwnAccount != "":
		fmt.Fprintf(out, "events that name no account go to the endpoint's own account %s (%s)\n", res.OwnAccount, ownWorkspace)
	default:
		fmt.Fprintf(out, "events that name no account have none: they are quarantined as unknown_account (name the endpoint's own account: %s)\n", setOwn)
	}
	return nil
}

func newEndpointsSetAccountCmd() *cobra.Command {
	var slug, account string
	cmd := &cobra.Command{
		Use:   "set-account --slug S --account ACCOUNT",
		Short: "Name the endpoint's own account: the source account of its events that name none",
		Long: `Name the endpoint's own account, the source account of its events that carry none (for Stripe
without Connect, the account itself; with Connect, the platform's account). --account "" removes it:
such events then go to the endpoint's single linked account, or are quarantined as unknown_account.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				return setOwnAccount(cmd.Context(), st, cmd.OutOrStdout(), slug, account)
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	cmd.Flags().StringVar(&account, "account", "", "the endpoint's own source account (required; \"\" removes it)")
	_ = cmd.MarkFlagRequired("slug")
	_ = cmd.MarkFlagRequired("account")
	return cmd
}

// setOwnAccount names the endpoint's own account and says where its events
// that name no account go now.
func setOwnAccount(ctx context.Context, st *store.Store, out io.Writer, slug, account string) error {
	account = strings.TrimSpace(account)
	if err := st.SetOwnAccount(ctx, slug, account); err != nil {
		return err
	}
	ep, err := st.GetEndpoint(ctx, slug)
	if err != nil {
		return err
	}
	own, ok := ep.OwnAccount()
	w, linked := ep.Links[own]
	switch {
	case !ok:
		fmt.Fprintf(out, "endpoint %s: no own account; events that name no account are quarantined as unknown_account\n", slug)
	case !linked:
		fmt.Fprintf(out, "endpoint %s: own account %s, not linked: its events are quarantined as unknown_account until "+
			"'hookinbox endpoints link --slug %s --account %s --workspace W'\n", slug, own, slug, own)
	default:
		fmt.Fprintf(out, "endpoint %s: events that name no account go to %s (workspace %s)\n", slug, own, w)
	}
	return nil
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
	ID          int64  `json:"id"`
	Fingerprint string `json:"fingerprint"`
	CreatedAt   string `json:"created_at"`
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
						APIBaseURL: e.APIBaseURL, APIKeySet: e.APIKey != "", Settings: e.Settings, Links: e.Links}
					var secs []string
					for _, s := range e.Secrets {
						v.Secrets = append(v.Secrets, secretView{ID: s.ID, Fingerprint: s.Fingerprint(), CreatedAt: s.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")})
						secs = append(secs, "#"+strconv.FormatInt(s.ID, 10)+":"+s.Fingerprint())
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
	var slug, secret string
	add := &cobra.Command{
		Use:   "add --slug S --secret SECRET",
		Short: "Add a signing secret (both old and new are accepted until the old one is removed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, func(st *store.Store) error {
				ep, err := st.GetEndpoint(cmd.Context(), slug)
				if err != nil {
					return err
				}
				if err := providers.ValidateSecret(ep.Provider, secret); err != nil {
					return cli.Usagef("--secret: %v", err)
				}
				id, err := store.InsertSecret(cmd.Context(), st.Pool, slug, secret)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "endpoint %s: secret #%d (%s) added\n", slug, id, keys.Secret{Value: secret}.Fingerprint())
				return nil
			})
		},
	}
	add.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	add.Flags().StringVar(&secret, "secret", "", "the new secret (required)")
	_ = add.MarkFlagRequired("slug")
	_ = add.MarkFlagRequired("secret")

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
	cmd.AddCommand(add, remove)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
