package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/hookinbox/hookinbox/activities"
	"github.com/hookinbox/hookinbox/internal/app"
	"github.com/hookinbox/hookinbox/internal/cli"
	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/ops"
	"github.com/hookinbox/hookinbox/starter"
	"github.com/hookinbox/hookinbox/workflows"
)

type reconcileOptions struct {
	subscription string
	endpoint     string
	account      string
	reason       string
	wait         bool
	timeout      time.Duration
	restart      bool
	signalAll    bool
	format       cli.OutputFormat
}

func newReconcileCmd() *cobra.Command {
	o := reconcileOptions{format: "table"}
	cmd := &cobra.Command{
		Use:   "reconcile RESOURCE | --subscription SUB --endpoint SLUG | --endpoint SLUG",
		Short: "Reconcile one resource, or run a full reconciliation pass for one endpoint",
		Long: `Reconcile local state with the provider (SPEC R19).

One resource: RESOURCE is a resource key provider/account/environment/kind/id (as in workflow
IDs, without "resource/"), or give --subscription with --endpoint (and --account for a connected
account). Its ResourceWorkflow is signalled with "reconcile" and --reason, so the reconciliation
runs between the resource's events and never races them: the subscription is fetched, the
projection corrected if it differs, and every divergence recorded (reconcile_divergences,
detected_by "reconcile: REASON"). --wait waits for that and prints what was found.

A full pass: --endpoint alone starts a reconciliation workflow over every account linked to the
endpoint (ID hookinbox-reconcile-subscriptions-endpoint-SLUG); watch its current details in the
Temporal UI. It keeps checkpoints apart from the scheduled passes; --restart is the default, give
--restart=false to resume an operator pass that was killed. To run the scheduled pass over every
endpoint now: hookinbox schedules trigger reconcile-subscriptions.`,
		Example: `  hookinbox reconcile stripe/acct_1/live/subscription/sub_1Pq --reason "customer says access is wrong" --wait
  hookinbox reconcile --subscription sub_1Pq --endpoint stripe-live --wait
  hookinbox reconcile --endpoint stripe-live --wait`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(cmd, args); err != nil {
				return err
			}
			return withStoreOps(cmd, func(env opsEnv) error {
				cfg := env.svc.Config
				c, err := app.DialTemporal(cmd.Context(), cfg, quietLogger(cmd))
				if err != nil {
					return err
				}
				defer c.Close()
				if len(args) == 0 && o.subscription == "" {
					return runEndpointPass(cmd.Context(), env.out, env.svc, c, o)
				}
				r, err := o.resource(cmd.Context(), env.svc, args)
				if err != nil {
					return err
				}
				return runReconcileResource(cmd.Context(), env.out, cfg, c, r, o)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.subscription, "subscription", "", "subscription id (with --endpoint)")
	f.StringVar(&o.endpoint, "endpoint", "", "endpoint slug: with --subscription, whose account and environment; alone, a full pass")
	f.StringVar(&o.account, "account", "", "with --subscription: the source account (default: the endpoint's own)")
	f.StringVar(&o.reason, "reason", "operator", "why (recorded with the divergences)")
	f.BoolVar(&o.wait, "wait", false, "wait until the reconciliation is done and print what it found")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "with --wait: give up waiting after this long")
	f.BoolVar(&o.restart, "restart", true, "full pass: start over instead of resuming an unfinished operator pass")
	f.BoolVar(&o.signalAll, "signal-all", false, "full pass: reconcile every listed subscription, not only those that differ")
	f.Var(&o.format, "output", "table or json")
	return cmd
}

func (o *reconcileOptions) validate(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 1 && (o.subscription != "" || o.endpoint != ""):
		return cli.Usagef("give a RESOURCE or --subscription/--endpoint, not both")
	case len(args) == 0 && o.subscription == "" && o.endpoint == "":
		return cli.Usagef("give a RESOURCE, --subscription SUB --endpoint SLUG, or --endpoint SLUG")
	case o.subscription != "" && o.endpoint == "":
		return cli.Usagef("--subscription needs --endpoint (whose account and environment the subscription belongs to)")
	case o.account != "" && o.subscription == "":
		return cli.Usagef("--account goes with --subscription")
	case strings.TrimSpace(o.reason) == "":
		return cli.Usagef("--reason must not be empty")
	case o.timeout <= 0:
		return cli.Usagef("--timeout must be positive")
	}
	single := len(args) == 1 || o.subscription != ""
	if single {
		for _, n := range []string{"restart", "signal-all"} {
			if cmd.Flags().Changed(n) {
				return cli.Usagef("--%s is for a full pass (--endpoint alone)", n)
			}
		}
	}
	if o.endpoint != "" && !ops.SlugPattern.MatchString(o.endpoint) {
		return cli.Usagef("--endpoint %q is not a valid slug", o.endpoint)
	}
	return nil
}

// resource resolves the resource to reconcile from the argument or flags.
func (o *reconcileOptions) resource(ctx context.Context, svc *ops.Service, args []string) (keys.Resource, error) {
	var r keys.Resource
	if len(args) == 1 {
		var err error
		r, err = keys.ParseResource(strings.TrimPrefix(args[0], "resource/"))
		if err != nil {
			return r, cli.Usagef("%v (want provider/account/environment/kind/id)", err)
		}
	} else {
		var err error
		if r, err = svc.SubscriptionResource(ctx, o.endpoint, o.account, o.subscription); err != nil {
			return r, asUsage(err)
		}
	}
	if r.Kind != "subscription" {
		return r, cli.Usagef("only subscriptions are reconciled (kind %q): invoices are facts, recovered by the facts backfill "+
			"(hookinbox schedules trigger %s)", r.Kind, starter.ScheduleBackfill)
	}
	return r, nil
}

// reconcileReport is what `reconcile RESOURCE` prints.
type reconcileReport struct {
	Resource   string            `json:"resource"`
	WorkflowID string            `json:"workflow_id"`
	RunID      string            `json:"run_id"`
	Reason     string            `json:"reason"`
	Waited     bool              `json:"waited"`
	Outcome    string            `json:"outcome,omitempty"`
	Note       string            `json:"note,omitempty"`
	Error      string            `json:"error,omitempty"`
	Divergence []keys.Divergence `json:"divergences,omitempty"`
}

func runReconcileResource(ctx context.Context, out io.Writer, cfg config.Config, c client.Client, r keys.Resource, o reconcileOptions) error {
	res := app.Resources(cfg, c)
	// A reason unique to this request, so --wait finds its own reconciliation.
	reason := fmt.Sprintf("%s (by %s at %s)", strings.TrimSpace(o.reason), actorName(), time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	run, err := c.SignalWithStartWorkflow(sctx, keys.PrefixedResourceWorkflowID(cfg.WorkflowIDPrefix, r), keys.SignalReconcile, reason,
		res.StartOptions(r), workflows.ResourceWorkflow, keys.ResourceInput{Resource: r, Settings: res.Settings})
	cancel()
	if err != nil {
		return fmt.Errorf("signal %s: %w", keys.PrefixedResourceWorkflowID(cfg.WorkflowIDPrefix, r), err)
	}
	rep := reconcileReport{Resource: r.String(), WorkflowID: run.GetID(), RunID: run.GetRunID(), Reason: reason}
	if o.wait {
		wctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		if err := waitReconciled(wctx, c, run.GetID(), run.GetRunID(), reason, &rep); err != nil {
			return err
		}
	}
	if o.format == "json" {
		return cli.Render(out, o.format, rep, nil, nil)
	}
	fmt.Fprintf(out, "signalled %s (reconcile: %s)\n", rep.WorkflowID, reason)
	if !o.wait {
		fmt.Fprintln(out, "the reconciliation runs between the resource's events; --wait waits for it, or watch the workflow in the Temporal UI")
		return nil
	}
	switch rep.Outcome {
	case "failed":
		fmt.Fprintf(out, "reconciliation failed: %s\n", rep.Error)
		return errors.New("reconciliation failed")
	default:
		fmt.Fprintf(out, "reconciled: %s\n", rep.Note)
	}
	if len(rep.Divergence) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(rep.Divergence))
	for _, d := range rep.Divergence {
		rows = append(rows, []string{d.Field, orDash(d.LocalValue), orDash(d.ProviderValue), fmt.Sprint(d.Corrected)})
	}
	return cli.Render(out, o.format, nil, []string{"FIELD", "LOCAL", "PROVIDER", "CORRECTED"}, rows)
}

// waitReconciled follows the resource workflow's history, from the run that
// received the signal across continue-as-new, until the ReconcileResource
// activity serving reason closes, and fills rep with its outcome.
func waitReconciled(ctx context.Context, c client.Client, workflowID, runID, reason string, rep *reconcileReport) error {
	dc := converter.GetDefaultDataConverter()
	rep.Waited = true
	for {
		iter := c.GetWorkflowHistory(ctx, workflowID, runID, true, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var scheduled int64
		next := ""
		for iter.HasNext() && next == "" {
			ev, err := iter.Next()
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("gave up waiting for %s after --timeout: the reconciliation is still queued behind the resource's events or retrying; see the workflow in the Temporal UI", workflowID)
				}
				return fmt.Errorf("read history of %s: %w", workflowID, err)
			}
			switch attrs := ev.Attributes.(type) {
			case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
				a := attrs.ActivityTaskScheduledEventAttributes
				if a.GetActivityType().GetName() != "ReconcileResource" {
					continue
				}
				var in activities.ReconcileInput
				if dc.FromPayloads(a.GetInput(), &in) == nil && slices.Contains(in.Reasons, reason) {
					scheduled = ev.GetEventId()
				}
			case *historypb.HistoryEvent_ActivityTaskCompletedEventAttributes:
				a := attrs.ActivityTaskCompletedEventAttributes
				if scheduled == 0 || a.GetScheduledEventId() != scheduled {
					continue
				}
				var out activities.ReconcileOutcome
				if err := dc.FromPayloads(a.GetResult(), &out); err != nil {
					return fmt.Errorf("read the reconciliation's result: %w", err)
				}
				rep.Outcome, rep.Note, rep.Divergence = "reconciled", out.Note, out.Divergences
				return nil
			case *historypb.HistoryEvent_ActivityTaskFailedEventAttributes:
				a := attrs.ActivityTaskFailedEventAttributes
				if scheduled != 0 && a.GetScheduledEventId() == scheduled {
					rep.Outcome, rep.Error = "failed", a.GetFailure().GetMessage()
					return nil
				}
			case *historypb.HistoryEvent_ActivityTaskTimedOutEventAttributes:
				a := attrs.ActivityTaskTimedOutEventAttributes
				if scheduled != 0 && a.GetScheduledEventId() == scheduled {
					rep.Outcome, rep.Error = "failed", "timed out: "+a.GetFailure().GetMessage()
					return nil
				}
			case *historypb.HistoryEvent_WorkflowExecutionContinuedAsNewEventAttributes:
				next = attrs.WorkflowExecutionContinuedAsNewEventAttributes.GetNewExecutionRunId()
			case *historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes,
				*historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes,
				*historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes,
				*historypb.HistoryEvent_WorkflowExecutionTimedOutEventAttributes,
				*historypb.HistoryEvent_WorkflowExecutionCanceledEventAttributes:
				return fmt.Errorf("workflow %s ended (%s) before reconciling", workflowID, ev.GetEventType())
			}
		}
		if next == "" {
			if ctx.Err() != nil {
				return fmt.Errorf("gave up waiting for %s after --timeout", workflowID)
			}
			return fmt.Errorf("the history of %s ended before the reconciliation", workflowID)
		}
		runID = next
	}
}

// passReport is what `reconcile --endpoint` prints.
type passReport struct {
	WorkflowID string                `json:"workflow_id"`
	RunID      string                `json:"run_id"`
	Endpoint   string                `json:"endpoint"`
	Totals     *workflows.PassTotals `json:"totals,omitempty"`
}

func runEndpointPass(ctx context.Context, out io.Writer, svc *ops.Service, c client.Client, o reconcileOptions) error {
	cfg := svc.Config
	scopes, err := svc.SubscriptionScopes(ctx, o.endpoint)
	if err != nil {
		return err
	}
	if len(scopes) == 0 {
		return cli.Usagef("endpoint %s is not a Stripe endpoint with an API key and a linked account: nothing to reconcile", o.endpoint)
	}
	in := workflows.ReconcileSubscriptionsInput{
		PassSettings: workflows.PassSettings{
			Endpoint: o.endpoint, Pass: workflows.PassOperator, Restart: o.restart,
			PageSize: cfg.ReconcilePageSize, PagesPerRun: cfg.ReconcilePagesPerRun,
			ProviderTaskQueue: workflows.ProviderTaskQueue(cfg.TaskQueue), SignalRate: float64(cfg.ProviderRPS),
		},
		SignalAll: o.signalAll,
	}
	id := starter.PrefixedReconcilePassWorkflowID(cfg.WorkflowIDPrefix, o.endpoint, cfg.TaskQueue)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: workflows.ControlTaskQueue(cfg.TaskQueue), WorkflowExecutionErrorWhenAlreadyStarted: true,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		StaticSummary:            fmt.Sprintf("operator reconciliation pass over endpoint %s", o.endpoint),
	}, workflows.ReconcileSubscriptionsWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return fmt.Errorf("a pass over endpoint %s is already running (workflow %s): watch it in the Temporal UI, or wait for it", o.endpoint, id)
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	rep := passReport{WorkflowID: run.GetID(), RunID: run.GetRunID(), Endpoint: o.endpoint}
	if o.wait {
		wctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		var t workflows.PassTotals
		if err := run.Get(wctx, &t); err != nil {
			if wctx.Err() != nil {
				return fmt.Errorf("gave up waiting after --timeout; the pass goes on: workflow %s", id)
			}
			return fmt.Errorf("pass %s: %w", id, err)
		}
		rep.Totals = &t
	}
	if o.format == "json" {
		return cli.Render(out, o.format, rep, nil, nil)
	}
	fmt.Fprintf(out, "started workflow %s over %d account(s) of endpoint %s\n", id, len(scopes), o.endpoint)
	if rep.Totals == nil {
		fmt.Fprintln(out, "its current details in the Temporal UI show the page, the subscriptions seen and signalled; --wait waits for it")
		return nil
	}
	t := rep.Totals
	fmt.Fprintf(out, "done: %d account(s), %d page(s), %d subscription(s) seen, %d differing, %d signalled for reconciliation\n",
		t.Scopes, t.Pages, t.Seen, t.Differing, t.Signalled)
	for _, f := range t.Failed {
		fmt.Fprintf(out, "skipped: %s\n", f)
	}
	if len(t.Failed) > 0 {
		return errors.New("some accounts were skipped")
	}
	return nil
}

// actorName is who an operator request is attributed to: the login name,
// else "unknown".
func actorName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}
