package command

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/notify"
	"github.com/hookinbox/hookinbox/internal/ops"
)

// newNotificationsCmd is `hookinbox notifications`: operators are told, not
// only shown.
func newNotificationsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notifications",
		Short: "Notification rules: be told of failed events, quarantine, divergences, stuck outbox rows, a backlog or a failed schedule run, and when it recovers",
		Long: `A notification rule watches triggers and sends its notices to one channel: an email address
(through the outbox), a Slack-compatible incoming webhook ({"text": …}) or a webhook signed with
Standard Webhooks (the JSON document of docs/notifications.md). The notify schedule
(HOOKINBOX_NOTIFY_INTERVAL, 1m) evaluates every rule.

Triggers: ` + strings.Join(notify.Triggers, ", ") + `.
One notice per (rule, trigger, subject) per window (--window, 15m), with counts and console links;
a recovery notice follows when the condition clears. A rule may be scoped to one workspace (a
tenant hears of its own events only) or one endpoint. Each notice is committed with its outbox
intent, so it is decided once even through crashes; see docs/notifications.md for exactly what a
receiver may see twice.`,
	}
	cmd.AddCommand(newNotificationsAddCmd(), newNotificationsListCmd(), newNotificationsRemoveCmd(), newNotificationsTestCmd())
	return cmd
}

func newNotificationsAddCmd() *cobra.Command {
	var spec ops.NotificationSpec
	var af auditFlags
	var window, pendingAge ageFlag
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use: "add --name NAME --trigger T[,T…] (--email ADDR | --slack-url-file F | --slack-url-env VAR | --slack-url-stdin | " +
			"--webhook URL (--secret-file F | --secret-env VAR | --secret-stdin)) [--workspace W] [--endpoint SLUG] [--window D] " +
			"[--pending-age D] [--allow-private]",
		Short: "Add a notification rule (audited; a webhook's secret and a Slack URL are sealed and never shown)",
		Long: `Add a notification rule. Triggers (repeatable or comma-separated; "all" is every one):

  event_failed       events ended failed or exhausted (until replayed), by endpoint
  quarantine_opened  open quarantine entries (until resolved), by endpoint
  divergence         reconciliation divergences within the window, by endpoint
  outbox_stuck       outbox rows held for review or uncertain, by workspace
  pending_age        the oldest pending event older than --pending-age (15m), by endpoint
  schedule_failed    a schedule's latest finished run failed or timed out, by schedule

The channel is one of --email, a Slack-compatible incoming webhook (its URL is its credential:
give it with --slack-url-file, -env or -stdin), or --webhook with a Standard Webhooks secret
(whsec_…). URLs must be https, or on a private or loopback address with --allow-private; a name
that resolves to a private address is refused at each send, and redirects are never followed.`,
		Example: `  hookinbox notifications add --name oncall --trigger all --email oncall@example.com
  hookinbox notifications add --name ws-acme --trigger event_failed,quarantine_opened --workspace ws_acme \
      --webhook https://acme.example.com/hookinbox --secret-file acme.whsec
  hookinbox notifications add --name chat --trigger pending_age --pending-age 10m --slack-url-env SLACK_URL`,
		Args: cobra.NoArgs,
	}
	secretIn := addSecretFlags(cmd, "secret", "webhook's Standard Webhooks signing secret (whsec_…)", false)
	slackIn := addSecretFlags(cmd, "slack-url", "Slack-compatible incoming webhook URL", false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := bothStdin(secretIn, slackIn); err != nil {
			return err
		}
		var err error
		if spec.Secret, err = secretIn.one(cmd, cmd.ErrOrStderr()); err != nil {
			return err
		}
		if spec.SlackURL, err = slackIn.one(cmd, cmd.ErrOrStderr()); err != nil {
			return err
		}
		spec.Window, spec.PendingAge = time.Duration(window), time.Duration(pendingAge)
		return withStoreOps(cmd, func(env opsEnv) error {
			v, err := env.svc.AddNotification(cmd.Context(), af.actor(), spec, af.reason)
			if err != nil {
				return asUsage(err)
			}
			return renderNotifications(env, format, v, []ops.NotificationView{v})
		})
	}
	f := cmd.Flags()
	f.StringVar(&spec.Name, "name", "", "rule name: lowercase letters, digits, '-' or '_' (required)")
	f.StringSliceVar(&spec.Triggers, "trigger", nil, strings.Join(notify.Triggers, ", ")+" or all (required; repeatable or comma-separated)")
	f.StringVar(&spec.Email, "email", "", "send the notices to this address (through the outbox)")
	f.StringVar(&spec.WebhookURL, "webhook", "", "POST each notice, signed with Standard Webhooks, to this URL")
	f.StringVar(&spec.Workspace, "workspace", "", "only this workspace's events, entries and rows (a tenant's own)")
	f.StringVar(&spec.Endpoint, "endpoint", "", "only this endpoint's events, entries and divergences")
	f.Var(&window, "window", "one notice per trigger and subject per window (1s to 7d; default 15m)")
	f.Var(&pendingAge, "pending-age", "pending_age fires when the oldest pending event is older than this (default 15m)")
	f.BoolVar(&spec.AllowPrivate, "allow-private", false, "allow a private or loopback address (a receiver beside hookinbox); audited")
	af.register(cmd)
	f.Var(&format, "output", "table or json")
	for _, name := range []string{"name", "trigger"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func newNotificationsListCmd() *cobra.Command {
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the notification rules, what is firing and their latest notices (secrets are never shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withReadOps(cmd, func(env opsEnv) error {
				vs, err := env.svc.ListNotifications(cmd.Context())
				if err != nil {
					return err
				}
				return renderNotifications(env, format, vs, vs)
			})
		},
	}
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func newNotificationsRemoveCmd() *cobra.Command {
	var af auditFlags
	cmd := &cobra.Command{
		Use:   "remove NAME [--reason TEXT]",
		Short: "Remove a notification rule (audited); its notices stay in the outbox and the history",
		Long: `Remove a notification rule. Nothing more is decided for it: what it had firing gets no recovery
notice. Notices already decided stay (with their outbox rows); one not yet sent to a Slack or
webhook channel fails, its rule being gone.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStoreOps(cmd, func(env opsEnv) error {
				if err := env.svc.RemoveNotification(cmd.Context(), af.actor(), args[0], af.reason); err != nil {
					return asUsage(err)
				}
				fmt.Fprintf(env.out, "notification rule %s removed\n", args[0])
				return nil
			})
		},
	}
	af.register(cmd)
	return cmd
}

func newNotificationsTestCmd() *cobra.Command {
	var af auditFlags
	format := cli.OutputFormat("table")
	cmd := &cobra.Command{
		Use:   "test NAME [--reason TEXT]",
		Short: "Send a test notice through a rule's channel now and say what it answered (audited)",
		Long: `Send a test notice through the rule's channel now, not through the outbox, and print what the
channel answered: the HTTP status and the start of its body, or the mailer's id of the email.
Exit status 1 when the channel did not accept it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStoreOps(cmd, func(env opsEnv) error {
				env.svc.Mailer = app.Mailer(env.svc.Config)
				res, err := env.svc.TestNotification(cmd.Context(), af.actor(), args[0], af.reason)
				if err != nil {
					return asUsage(err)
				}
				answer := orDash(res.Answer)
				if res.Error != "" {
					answer = orDash(res.Answer) + " (" + res.Error + ")"
				}
				ok := "accepted"
				if !res.OK {
					ok = "NOT accepted"
				}
				if err := cli.Render(env.out, format, res, []string{"RULE", "CHANNEL", "TARGET", "RESULT", "ANSWER"},
					[][]string{{res.Rule, res.Channel, res.Target, ok, answer}}); err != nil {
					return err
				}
				if !res.OK {
					return fmt.Errorf("the %s channel of %s did not accept the test notice", res.Channel, res.Rule)
				}
				return nil
			})
		},
	}
	af.register(cmd)
	cmd.Flags().Var(&format, "output", "table or json")
	return cmd
}

func renderNotifications(env opsEnv, format cli.OutputFormat, v any, vs []ops.NotificationView) error {
	var rows [][]string
	for _, r := range vs {
		scope := []string{}
		if r.Workspace != "" {
			scope = append(scope, "workspace="+r.Workspace)
		}
		if r.Endpoint != "" {
			scope = append(scope, "endpoint="+r.Endpoint)
		}
		if r.AllowPrivate {
			scope = append(scope, "private")
		}
		settings := "window=" + r.Window
		if slices.Contains(r.Triggers, notify.TriggerPendingAge) {
			settings += " pending-age=" + r.PendingAge
		}
		firing := []string{}
		for _, f := range r.Firing {
			firing = append(firing, fmt.Sprintf("%s:%s(%d)", f.Trigger, f.Subject, f.Count))
		}
		last := "-"
		if len(r.Recent) > 0 {
			n := r.Recent[0]
			last = fmt.Sprintf("%s %s %s %s (%s)", fmtTime(n.CreatedAt), n.Trigger, n.Subject, n.Phase, orDash(n.OutboxStatus))
		}
		rows = append(rows, []string{r.Name, strings.Join(r.Triggers, ","), r.Channel, r.Target, orDash(strings.Join(scope, " ")), settings,
			orDash(strings.Join(firing, " ")), strconv.Itoa(len(r.Recent)), last})
	}
	return cli.Render(env.out, format, v, []string{"NAME", "TRIGGERS", "CHANNEL", "TARGET", "SCOPE", "SETTINGS", "FIRING", "RECENT", "LAST NOTICE"}, rows)
}
