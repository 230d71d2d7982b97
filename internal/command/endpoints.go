package command

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/providers"
	_ "github.com/hookinbox/hookinbox/providers/all" // the providers an endpoint may name
	"github.com/hookinbox/hookinbox/providers/github"
)

func newEndpointsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "Register webhook endpoints, their secrets and account→workspace links",
		Long: `An endpoint is one intake URL, POST /webhooks/SLUG, for one provider and environment.
Secrets and API keys are never printed: listings show an id and a short fingerprint. Every
change is audited (who: --by, default $USER; why: --reason).`,
	}
	cmd.AddCommand(newEndpointsAddCmd(), newEndpointsUpdateCmd(), newEndpointsLinkCmd(), newEndpointsUnlinkCmd(), newEndpointsSetAccountCmd(),
		newEndpointsListCmd(), newEndpointsRemoveCmd(), newEndpointsSecretsCmd())
	return cmd
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
	var e ops.NewEndpoint
	var secretAccounts string
	var af auditFlags
	cmd := &cobra.Command{
		Use: "add --slug S --provider " + strings.Join(providers.Names(), "|") + " --environment live|test " +
			"(--secret-file F | --secret-env VAR | --secret-stdin | --secret SECRET)… [--secret-accounts A,B]",
		Short: "Register an endpoint",
		Long: `Register an endpoint. Give one signing secret per active secret (two while rotating), from a file
(--secret-file), an environment variable (--secret-env), standard input (--secret-stdin, one per
line) or, visible in the process list and shell history, the command line (--secret). Each flag
may be repeated. Secrets are checked against the provider's format (at least 24 random bytes)
and stored sealed (HOOKINBOX_SECRETS_KEY); the API key likewise (--api-key-file, --api-key-env,
--api-key-stdin or --api-key). The key goes to --api-base-url (default: the provider's own API);
another host than the provider's official API (a simulator, GitHub Enterprise Server) needs
--allow-custom-api-host (audited), and http:// is refused outside loopback.

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
when the provider sends one (e.g. "data.object.version").

GitHub does not redeliver a failed delivery: give a GitHub endpoint its hook (--github-hook
repo:OWNER/NAME or org:LOGIN with --github-hook-id, or app with --github-app-id) and an API key
(a token that may read and redeliver the hook's deliveries; for an App's hook, the App's PEM
private key) and the recover-github schedule recovers what never reached the inbox:
--github-recovery redeliver (default: GitHub sends it again, signed) or fetch (read from the
delivery log and admitted as a backfill). See docs/reconciliation.md.`,
		Example: `  hookinbox endpoints add --slug stripe-live --provider stripe --environment live --secret-file stripe.secret
  printf '%s\n' "$SECRET" | hookinbox endpoints add --slug sinalio --provider standard --environment live \
      --secret-stdin --account-path data.project_id --resource-path data.id
  hookinbox endpoints add --slug shop-a --provider shopify --environment live --secret-env SHOPIFY_SECRET \
      --account shop-a.myshopify.com
  hookinbox endpoints add --slug gh-acme --provider github --environment live --secret-env GH_SECRET \
      --api-key-env GH_TOKEN --github-hook repo:acme/widgets --github-hook-id 123456`,
		Args: cobra.NoArgs,
	}
	secrets := addSecretFlags(cmd, "secret", "signing secret", true)
	apiKey := addSecretFlags(cmd, "api-key", "provider API key", false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
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
		if e.APIKey, err = apiKey.one(cmd, cmd.ErrOrStderr()); err != nil {
			return err
		}
		e.SecretAccounts = ops.ParseAccounts(secretAccounts)
		if err := ops.ValidateNewEndpoint(e); err != nil {
			return asUsage(err)
		}
		for _, w := range ops.EndpointWarnings(e) {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+w)
		}
		return withOps(cmd, func(env opsEnv) error {
			if err := env.svc.AddEndpoint(cmd.Context(), af.actor(), e, af.reason); err != nil {
				return asUsage(err)
			}
			fmt.Fprintf(env.out, "endpoint %s registered: POST /webhooks/%s (%s, %s, %d secret(s))\n",
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
	f.BoolVar(&e.AllowCustomAPIHost, "allow-custom-api-host", false, "let --api-base-url name a host other than the provider's official API (a simulator, GitHub Enterprise Server; audited)")
	f.StringVar(&e.Settings.TypePath, "type-path", "", "JSON path of the event type (standard)")
	f.StringVar(&e.Settings.ResourcePath, "resource-path", "", "JSON path of the resource id (standard)")
	f.StringVar(&e.Settings.ResourceKind, "resource-kind", "", "resource kind (standard; default from the type)")
	f.StringVar(&e.Settings.AccountPath, "account-path", "", "JSON path of the source account (standard)")
	f.StringVar(&e.Settings.VersionPath, "version-path", "", "JSON path of a monotonic per-resource version")
	af.register(cmd)
	hookFlags(cmd, &e.Settings)
	for _, n := range []string{"slug", "provider", "environment"} {
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

func newEndpointsUpdateCmd() *cobra.Command {
	var slug string
	var af auditFlags
	var hook keys.EndpointSettings
	vals := map[string]*string{}
	names := []struct{ flag, help string }{
		{"account", "the endpoint's own source account (\"\" clears it)"},
		{"api-base-url", "provider API base URL (\"\" clears it)"},
		{"type-path", "JSON path of the event type (standard)"},
		{"resource-path", "JSON path of the resource id (standard)"},
		{"resource-kind", "resource kind (standard)"},
		{"account-path", "JSON path of the source account (standard)"},
		{"version-path", "JSON path of a monotonic per-resource version"},
	}
	cmd := &cobra.Command{
		Use: "update --slug S [--account A] [--api-base-url URL [--allow-custom-api-host]] [--api-key-file F | --api-key-env VAR | --api-key-stdin | --api-key KEY] " +
			"[--type-path P] [--resource-path P] [--resource-kind K] [--account-path P] [--version-path P] [--github-hook H --github-hook-id N] [--github-recovery M]",
		Short: "Change an endpoint's account, provider API settings or extraction paths (audited)",
		Long: `Change only the fields given; an empty value clears an optional one (--account "", --api-key "").
The API key is read from a file, an environment variable or standard input (--api-key-file,
--api-key-env, --api-key-stdin) or, visible in the process list, the command line (--api-key), and
stored sealed. A new --api-base-url needs the API key again (a key never follows the URL to another
host), and a host other than the provider's official API (api.stripe.com, api.github.com) needs
--allow-custom-api-host, which is audited; http:// is refused outside loopback.
Secrets are rotated with 'endpoints secrets add' and 'endpoints secrets remove'.
The intake picks the change up within HOOKINBOX_ENDPOINT_CACHE_TTL.`,
		Example: `  hookinbox endpoints update --slug stripe-live --api-key-env STRIPE_KEY --reason "key rotated (SEC-12)"
  hookinbox endpoints update --slug sinalio --resource-path data.item.id`,
		Args: cobra.NoArgs,
	}
	apiKey := addSecretFlags(cmd, "api-key", "provider API key (\"\" clears it; required again with a new --api-base-url)", false)
	var allowCustom bool
	cmd.Flags().BoolVar(&allowCustom, "allow-custom-api-host", false, "let --api-base-url name a host other than the provider's official API (a simulator, GitHub Enterprise Server; audited)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c := ops.EndpointChange{AllowCustomAPIHost: allowCustom}
		set := func(flag string) *string {
			if !cmd.Flags().Changed(flag) {
				return nil
			}
			return vals[flag]
		}
		c.Account, c.APIBaseURL = set("account"), set("api-base-url")
		c.TypePath, c.ResourcePath, c.ResourceKind = set("type-path"), set("resource-path"), set("resource-kind")
		c.AccountPath, c.VersionPath = set("account-path"), set("version-path")
		f := cmd.Flags()
		if f.Changed("github-hook") {
			c.GitHubHook = &hook.GitHubHook
		}
		if f.Changed("github-hook-id") {
			c.GitHubHookID = &hook.GitHubHookID
		}
		if f.Changed("github-app-id") {
			c.GitHubAppID = &hook.GitHubAppID
		}
		if f.Changed("github-recovery") {
			c.GitHubRecovery = &hook.GitHubRecovery
		}
		changedKey := cmd.Flags().Changed("api-key") || apiKey.given()
		if changedKey {
			key, err := apiKey.one(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			c.APIKey = &key
		}
		if c.Empty() {
			return cli.Usagef("nothing to change: give at least one of --%s", strings.Join(append(flagNames(names), "api-key",
				"github-hook", "github-hook-id", "github-app-id", "github-recovery"), ", --"))
		}
		return withOps(cmd, func(env opsEnv) error {
			v, err := env.svc.UpdateEndpoint(cmd.Context(), af.actor(), slug, c, af.reason)
			if err != nil {
				return asUsage(err)
			}
			var changed []string
			for _, n := range append(flagNames(names), "github-hook", "github-hook-id", "github-app-id", "github-recovery") {
				if cmd.Flags().Changed(n) {
					changed = append(changed, n)
				}
			}
			if changedKey {
				changed = append(changed, "api-key")
			}
			fmt.Fprintf(env.out, "endpoint %s updated: %s\n", v.Slug, strings.Join(changed, ", "))
			describeRecovery(env.out, v)
			return nil
		})
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	for _, n := range names {
		v := new(string)
		vals[n.flag] = v
		cmd.Flags().StringVar(v, n.flag, "", n.help)
	}
	af.register(cmd)
	hookFlags(cmd, &hook)
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

// describeRecovery says whether the endpoint's GitHub hook is recovered now.
func describeRecovery(out io.Writer, v *ops.EndpointView) {
	if h, ok, err := github.HookFromSettings(v.Settings); ok && err == nil {
		mode, _ := github.RecoveryMode(v.Settings)
		if !v.APIKeySet {
			fmt.Fprintf(out, "hook %s: not recovered until the endpoint has an API key (--api-key)\n", h)
		} else {
			fmt.Fprintf(out, "hook %s: deliveries that never reach the inbox are recovered by the recover-github schedule (%s)\n", h, mode)
		}
	}
}

func newEndpointsLinkCmd() *cobra.Command {
	var slug, account, workspace string
	var af auditFlags
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
			return withOps(cmd, func(env opsEnv) error {
				res, err := env.svc.LinkAccount(cmd.Context(), af.actor(), slug, account, workspace, af.reason)
				if err != nil {
					return asUsage(err)
				}
				describeLink(cmd.Context(), env.svc, env.out, slug, account, workspace, res)
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

// describeLink says what a link did, and where the endpoint's events that
// name no account go now.
func describeLink(ctx context.Context, svc *ops.Service, out io.Writer, slug, account, workspace string, res ops.LinkResult) {
	moved := ""
	if res.PreviousWorkspace != "" {
		moved = " (moved from workspace " + res.PreviousWorkspace + ")"
	}
	fmt.Fprintf(out, "endpoint %s: account %s → workspace %s%s\n", slug, account, workspace, moved)
	ownWorkspace := "not linked: they are quarantined as unknown_account until it is"
	if ep, err := svc.ShowEndpoint(ctx, slug); err == nil {
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
			return withStoreOps(cmd, func(env opsEnv) error {
				// Audited as the login name: the command has no --by.
				v, err := env.svc.SetOwnAccount(cmd.Context(), ops.Actor{Name: defaultActor()}, slug, account, "")
				if err != nil {
					return asUsage(err)
				}
				describeOwnAccount(env.out, v)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	cmd.Flags().StringVar(&account, "account", "", "the endpoint's own source account (required; \"\" removes it)")
	_ = cmd.MarkFlagRequired("slug")
	_ = cmd.MarkFlagRequired("account")
	return cmd
}

// describeOwnAccount says where an endpoint's events that name no account
// go now.
func describeOwnAccount(out io.Writer, v ops.OwnAccountView) {
	slug, own := v.Slug, v.OwnAccount
	switch {
	case own == "":
		fmt.Fprintf(out, "endpoint %s: no own account; events that name no account are quarantined as unknown_account\n", slug)
	case v.Workspace == "":
		fmt.Fprintf(out, "endpoint %s: own account %s, not linked: its events are quarantined as unknown_account until "+
			"'hookinbox endpoints link --slug %s --account %s --workspace W'\n", slug, own, slug, own)
	default:
		fmt.Fprintf(out, "endpoint %s: events that name no account go to %s (workspace %s)\n", slug, own, v.Workspace)
	}
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
						sec := "#" + strconv.FormatInt(s.ID, 10) + ":" + s.Fingerprint
						if len(s.Accounts) > 0 {
							sec += "[" + strings.Join(s.Accounts, ",") + "]"
						}
						secs = append(secs, sec)
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
	var slug, accounts string
	var retire bool
	var af auditFlags
	add := &cobra.Command{
		Use:   "add --slug S (--secret-file F | --secret-env VAR | --secret-stdin | --secret SECRET) [--secret-accounts A,B] [--retire-others]",
		Short: "Add a signing secret (both old and new are accepted until the old one is removed)",
		Long: `Add a signing secret, read from a file, an environment variable or standard input (--secret-file,
--secret-env, --secret-stdin) or, visible in the process list, the command line (--secret). It is
checked against the provider's format and stored sealed. --secret-accounts binds it to the source
accounts it may sign for (default: any linked account); a secret already registered keeps its
binding ('endpoints secrets bind' changes it).`,
		Args: cobra.NoArgs,
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
		return withOps(cmd, func(env opsEnv) error {
			res, err := env.svc.AddSecret(cmd.Context(), af.actor(), slug,
				ops.NewSecret{Secret: value, Accounts: ops.ParseAccounts(accounts), RetireOthers: retire}, af.reason)
			if err != nil {
				return asUsage(err)
			}
			fmt.Fprintf(env.out, "endpoint %s: secret #%d (%s) added\n", slug, res.ID, res.Fingerprint)
			for _, id := range res.Retired {
				fmt.Fprintf(env.out, "endpoint %s: secret #%d removed\n", slug, id)
			}
			return nil
		})
	}
	add.Flags().StringVar(&slug, "slug", "", "endpoint slug (required)")
	add.Flags().StringVar(&accounts, "secret-accounts", "", "comma-separated source accounts the secret may sign for (default: any linked account)")
	add.Flags().BoolVar(&retire, "retire-others", false, "remove every other secret at once (the sender already switched)")
	af.register(add)
	_ = add.MarkFlagRequired("slug")

	var bslug, baccounts string
	var bid int64
	var bany bool
	var baf auditFlags
	bind := &cobra.Command{
		Use:   "bind --slug S --id N (--accounts A,B | --any)",
		Short: "Set the source accounts a signing secret may sign for (others are quarantined as account_mismatch)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list := ops.ParseAccounts(baccounts)
			if bany == (len(list) > 0) {
				return cli.Usagef("give exactly one of --accounts A,B or --any")
			}
			return withOps(cmd, func(env opsEnv) error {
				if err := env.svc.BindSecret(cmd.Context(), baf.actor(), bslug, bid, list, baf.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "endpoint %s: secret #%d may sign for %s\n", bslug, bid, orDefault(strings.Join(list, ", "), "any linked account"))
				return nil
			})
		},
	}
	bind.Flags().StringVar(&bslug, "slug", "", "endpoint slug (required)")
	bind.Flags().Int64Var(&bid, "id", 0, "secret id (required; see 'endpoints list')")
	bind.Flags().StringVar(&baccounts, "accounts", "", "comma-separated source accounts")
	bind.Flags().BoolVar(&bany, "any", false, "any account linked to the endpoint")
	baf.register(bind)
	_ = bind.MarkFlagRequired("slug")
	_ = bind.MarkFlagRequired("id")

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
	cmd.AddCommand(add, bind, remove)
	return cmd
}
