package command

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/providers"
)

// newRoutesCmd is `hookinbox routes`: forward routes, a team's own HTTP
// service (any language) behind hookinbox.
func newRoutesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "routes",
		Short: "Forward routes: send a provider's events to your own HTTP service, once per operation, in order per resource",
		Long: `A forward route takes a provider's event type (exact, or a prefix ending in '*') and POSTs each of
its operations to your service as one JSON document, from the resource's workflow: one resource's
forwards never overlap nor pass each other. Each document is signed with Standard Webhooks under
the route's secret; webhook-id and Idempotency-Key are its operation key (the event key, or with
--operation-key-path the value there: two events of one invoice forward once). A send whose
outcome is unknown is sent again with the same keys: dedup on them in your service.

Answers: 2xx is done; 408, 425, 429, 5xx, timeouts and connection errors are retried with
full-jitter backoff (Retry-After honoured) within the retry budget, then the event is exhausted;
any other 4xx fails it at once with the status and a clipped body. Failed and exhausted events are
replayed as any other (hookinbox replay). A redirect is refused, and so is a private or loopback
address unless the route allows it (--allow-private).`,
	}
	cmd.AddCommand(newRoutesAddCmd(), newRoutesUpdateCmd(), newRoutesRemoveCmd(), newRoutesListCmd(), newRoutesShowCmd())
	return cmd
}

func newRoutesAddCmd() *cobra.Command {
	var spec ops.RouteSpec
	var af auditFlags
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use: "add --name NAME --provider " + strings.Join(providers.Names(), "|") + " --event-type TYPE --forward URL " +
			"(--secret-file F | --secret-env VAR | --secret-stdin) [--operation-key-path PATH] [--fetch-current] " +
			"[--timeout D] [--retry-budget N] [--replace-handler] [--allow-private] [--coalesce [--coalesce-max N]]",
		Short: "Add a forward route (audited; the secret is sealed and never shown)",
		Long: `Add a forward route. It applies to every event accepted after this command returns: an event
an intake still recorded ignored under its route table of before is put back to pending when
that intake loads the route (within a second), and forwarded in its resource's order. A type a built-in handler takes is refused
unless --replace-handler says the route takes it instead, on purpose. The secret is a Standard
Webhooks secret (whsec_ + base64 of at least 24 random bytes) your service verifies with; it is
stored sealed. The URL must be https, or any http(s) URL on a private or loopback address with
--allow-private (a service beside hookinbox); a name that resolves to a private address is refused
at each send.`,
		Example: `  # invoice.paid is the built-in credits handler's: --replace-handler hands it to the route
  hookinbox routes add --name billing --provider stripe --event-type 'invoice.*' --replace-handler \
      --forward https://billing.internal.example.com/hooks --secret-file billing.whsec \
      --operation-key-path data.object.id --fetch-current`,
		Args: cobra.NoArgs,
	}
	secretIn := addSecretFlags(cmd, "secret", "route's Standard Webhooks signing secret (whsec_…)", false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		secret, err := secretIn.one(cmd, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if secret == "" {
			return cli.Usagef("a secret is required: --secret-file, --secret-env or --secret-stdin")
		}
		spec.Secret = secret
		return withStoreOps(cmd, func(env opsEnv) error {
			v, err := env.svc.AddRoute(cmd.Context(), af.actor(), spec, af.reason)
			if err != nil {
				return asUsage(err)
			}
			return renderRoutes(env, format, v, []ops.RouteView{v})
		})
	}
	f := cmd.Flags()
	f.StringVar(&spec.Name, "name", "", "route name: lowercase letters, digits, '-' or '_' (required)")
	f.StringVar(&spec.Provider, "provider", "", "provider: "+providers.OneOf()+" (required)")
	f.StringVar(&spec.EventType, "event-type", "", "event type, exact or a prefix ending in '*' (required)")
	f.StringVar(&spec.URL, "forward", "", "your service's URL (required)")
	routeSettingFlags(f, &spec.OperationKeyPath, &spec.FetchCurrent, &spec.Timeout, &spec.RetryBudget, &spec.ReplaceHandler, &spec.AllowPrivate)
	coalesceFlags(f, &spec.Coalesce, &spec.CoalesceMax)
	af.register(cmd)
	f.Var(&format, "output", "table or json")
	for _, name := range []string{"name", "provider", "event-type", "forward"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func routeSettingFlags(f *pflag.FlagSet, path *string, fetch *bool, timeout *time.Duration, budget *int, replace, private *bool) {
	f.StringVar(path, "operation-key-path", "", "gjson path of the operation's id (data.object.id): two events of one operation forward once")
	f.BoolVar(fetch, "fetch-current", false, "fetch the provider's current object just before each send, as the document's current")
	f.DurationVar(timeout, "timeout", ops.DefaultForwardTimeout, "how long one send may take (100ms to 5m)")
	f.IntVar(budget, "retry-budget", 0, "attempts before an event ends exhausted, 1 to 1000 (0: the worker's HOOKINBOX_RETRY_BUDGET)")
	f.BoolVar(replace, "replace-handler", false, "take a type a built-in handler takes, instead of it (on purpose)")
	f.BoolVar(private, "allow-private", false, "allow a private or loopback address (a service beside hookinbox); audited")
}

func coalesceFlags(f *pflag.FlagSet, coalesce *bool, most *int) {
	f.BoolVar(coalesce, "coalesce", false, "send one document for the run of a resource's pending events, with the latest current "+
		"(needs --fetch-current, never with --operation-key-path)")
	f.IntVar(most, "coalesce-max", 100, "the most events one coalesced document covers, 2 to 1000")
}

func newRoutesUpdateCmd() *cobra.Command {
	var url, path string
	var fetch, replace, private, enable, disable, coalesce bool
	var timeout time.Duration
	var budget, most int
	var af auditFlags
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "update NAME [--forward URL] [--secret-file F | --secret-env VAR | --secret-stdin] [--operation-key-path PATH] [--fetch-current=BOOL] [--timeout D] [--retry-budget N] [--replace-handler=BOOL] [--allow-private=BOOL] [--coalesce=BOOL] [--coalesce-max N] [--enable | --disable]",
		Short: "Change a forward route's settings (audited); only the flags given change",
		Long: `Change a forward route. Only the flags given change; its name, provider and event type stay
(remove it and add another to move it). A new secret takes effect at the workers within a few
seconds; events already sent keep the signatures they had. A disabled route is paused: its events
are still recorded pending, and held (not sent, no attempt counted) until it is enabled again.
A new --forward URL needs a new secret with it (a secret never follows its URL to another service):
without one the update is refused and nothing changes.`,
		Example: `  hookinbox routes update billing --disable --reason "billing service down for maintenance"
  hookinbox routes update billing --secret-file billing-2.whsec --reason "rotation"`,
		Args: cobra.ExactArgs(1),
	}
	secretIn := addSecretFlags(cmd, "secret", "new Standard Webhooks signing secret (whsec_…)", false)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if enable && disable {
			return cli.Usagef("give --enable or --disable, not both")
		}
		f := cmd.Flags()
		var c ops.RouteChange
		if f.Changed("forward") {
			c.URL = &url
		}
		if secretIn.given() {
			s, err := secretIn.one(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			c.Secret = &s
		}
		if f.Changed("operation-key-path") {
			c.OperationKeyPath = &path
		}
		if f.Changed("fetch-current") {
			c.FetchCurrent = &fetch
		}
		if f.Changed("timeout") {
			c.Timeout = &timeout
		}
		if f.Changed("retry-budget") {
			c.RetryBudget = &budget
		}
		if f.Changed("replace-handler") {
			c.ReplaceHandler = &replace
		}
		if f.Changed("allow-private") {
			c.AllowPrivate = &private
		}
		if f.Changed("coalesce") {
			c.Coalesce = &coalesce
		}
		if f.Changed("coalesce-max") {
			c.CoalesceMax = &most
		}
		if enable || disable {
			on := enable
			c.Enabled = &on
		}
		return withStoreOps(cmd, func(env opsEnv) error {
			v, err := env.svc.UpdateRoute(cmd.Context(), af.actor(), args[0], c, af.reason)
			if err != nil {
				return asUsage(err)
			}
			return renderRoutes(env, format, v, []ops.RouteView{v})
		})
	}
	f := cmd.Flags()
	f.StringVar(&url, "forward", "", "your service's URL")
	routeSettingFlags(f, &path, &fetch, &timeout, &budget, &replace, &private)
	coalesceFlags(f, &coalesce, &most)
	f.BoolVar(&enable, "enable", false, "route new events again")
	f.BoolVar(&disable, "disable", false, "pause the route: its events are held pending, nothing is sent")
	af.register(cmd)
	f.Var(&format, "output", "table or json")
	return cmd
}

func newRoutesRemoveCmd() *cobra.Command {
	var af auditFlags
	cmd := &cobra.Command{
		Use:   "remove NAME [--reason TEXT]",
		Short: "Remove a forward route (audited); its attempts stay in the lineage",
		Long: `Remove a forward route. New events of its types are no longer routed to it (recorded ignored, or
taken by a built-in handler again). Its events still pending stay pending, shown as having no
handler, until a route or handler takes their type again: nothing is lost, nothing is sent.
To pause a route instead, 'hookinbox routes update NAME --disable'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStoreOps(cmd, func(env opsEnv) error {
				if err := env.svc.RemoveRoute(cmd.Context(), af.actor(), args[0], af.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "route %s removed\n", args[0])
				return nil
			})
		},
	}
	af.register(cmd)
	return cmd
}

func newRoutesListCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the forward routes with their backlogs (secrets are never shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withReadOps(cmd, func(env opsEnv) error {
				vs, err := env.svc.ListRoutes(cmd.Context())
				if err != nil {
					return err
				}
				return renderRoutes(env, format, vs, vs)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newRoutesShowCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a forward route and its backlog",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withReadOps(cmd, func(env opsEnv) error {
				v, err := env.svc.ShowRoute(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return renderRoutes(env, format, v, []ops.RouteView{v})
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func renderRoutes(env opsEnv, format cli.OutputFormat, v any, vs []ops.RouteView) error {
	var rows [][]string
	for _, r := range vs {
		opts := []string{}
		if r.OperationKeyPath != "" {
			opts = append(opts, "key="+r.OperationKeyPath)
		}
		if r.FetchCurrent {
			opts = append(opts, "fetch-current")
		}
		if r.Coalesce {
			opts = append(opts, "coalesce="+strconv.Itoa(r.CoalesceMax))
		}
		if r.ReplacesHandler {
			opts = append(opts, "replaces="+strings.Join(r.Replaces, ","))
		}
		if r.AllowPrivate {
			opts = append(opts, "private")
		}
		if r.RetryBudget > 0 {
			opts = append(opts, "budget="+strconv.Itoa(r.RetryBudget))
		}
		state := "enabled"
		if !r.Enabled {
			state = "disabled"
		}
		oldest := "-"
		if r.Pending > 0 {
			oldest = (time.Duration(r.OldestPendingSeconds) * time.Second).String()
		}
		rows = append(rows, []string{r.Name, r.Provider, r.EventType, r.URL, r.Timeout, orDash(strings.Join(opts, " ")), state,
			strconv.FormatInt(r.Pending, 10), oldest})
	}
	return cli.Render(env.out, format, v, []string{"NAME", "PROVIDER", "TYPE", "FORWARD", "TIMEOUT", "OPTIONS", "STATE", "PENDING", "OLDEST"}, rows)
}
