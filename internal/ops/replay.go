package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hookinbox/hookinbox/internal/fault"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/access"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
)

// Replay results of one event.
const (
	ResultReplayed       = inbox.Replayed
	ResultAlreadyPending = inbox.AlreadyPending
	ResultWouldReplay    = "would_replay"
	ResultRefused        = "refused"
	ResultError          = "error"
)

// ReplayableByDefault are the statuses a filter replays when it names none.
var ReplayableByDefault = []string{keys.StatusExhausted, keys.StatusFailed}

// MaxReplayEvents bounds one replay job.
const MaxReplayEvents = 10000

// ReplayRequest selects events to put back through their resource
// workflows: explicit keys, or the rows an inbox filter matches (at most
// Filter.Limit of them).
type ReplayRequest struct {
	Keys   []keys.Event
	Filter *inbox.InboxFilter
	// Reason is required: it is recorded in each event's audit.
	Reason string
	// Force also replays done and ignored events (deliberate reprocessing,
	// still guarded by the business keys).
	Force bool
	// DryRun says what would happen and changes nothing.
	DryRun bool
	// Selection says how the events were chosen (audit); derived when empty.
	Selection string
}

// ReplayRow is one event of a replay.
type ReplayRow struct {
	Key               string `json:"key"`
	Resource          string `json:"resource"`
	PreviousStatus    string `json:"previous_status"`
	PreviousAttempts  int    `json:"previous_attempts"`
	PreviousLastError string `json:"previous_last_error,omitempty"`
	// Result: replayed, already_pending, refused, would_replay (dry run), error.
	Result   string `json:"result"`
	Detail   string `json:"detail,omitempty"`
	AuditID  int64  `json:"audit_id,omitempty"`
	Signaled bool   `json:"signaled"`
}

// ReplaySummary is what a replay did.
type ReplaySummary struct {
	DryRun    bool        `json:"dry_run"`
	JobID     int64       `json:"job_id,omitempty"`
	Events    []ReplayRow `json:"events"`
	Replayed  int         `json:"replayed"`
	Refused   int         `json:"refused"`
	Errors    int         `json:"errors,omitempty"`
	More      bool        `json:"more"`
	Signaled  int         `json:"signaled_resources"`
	SignalErr string      `json:"signal_error,omitempty"`
}

// normalize validates req and fills its defaults.
func (req *ReplayRequest) normalize() error {
	if strings.TrimSpace(req.Reason) == "" {
		return Invalidf("a reason must say why (it is recorded in the audit)")
	}
	switch {
	case len(req.Keys) > 0 && req.Filter != nil:
		return Invalidf("give event keys or a filter, not both")
	case len(req.Keys) == 0 && req.Filter == nil:
		return Invalidf("give event keys or a filter")
	case len(req.Keys) > MaxReplayEvents:
		return Invalidf("at most %d events per replay (got %d)", MaxReplayEvents, len(req.Keys))
	}
	if f := req.Filter; f != nil {
		if !FilterSelects(*f) {
			return Invalidf("a bulk replay needs at least one filter (status, provider, account, workspace, endpoint, type, resource or time)")
		}
		if len(f.Statuses) == 0 {
			f.Statuses = slices.Clone(ReplayableByDefault)
		}
		for _, st := range f.Statuses {
			if (st == keys.StatusDone || st == keys.StatusIgnored) && !req.Force {
				return Invalidf("status %s: replaying done or ignored events is a no-op for their effects; force reprocesses them deliberately", st)
			}
		}
		if f.Limit == 0 {
			f.Limit = 100
		}
		if f.Limit > MaxReplayEvents {
			return Invalidf("limit must be at most %d", MaxReplayEvents)
		}
		if err := ValidateInboxFilter(*f); err != nil {
			return err
		}
		if req.Selection == "" {
			req.Selection = DescribeFilter(*f)
		}
	} else if req.Selection == "" {
		req.Selection = "key"
		if len(req.Keys) > 1 {
			req.Selection = fmt.Sprintf("%d keys", len(req.Keys))
		}
	}
	return nil
}

// DescribeFilter renders a filter for humans and the audit.
func DescribeFilter(f inbox.InboxFilter) string {
	var p []string
	add := func(name, v string) {
		if v != "" {
			p = append(p, name+"="+v)
		}
	}
	add("status", strings.Join(f.Statuses, ","))
	add("provider", f.Provider)
	add("account", f.Account)
	add("workspace", f.Workspace)
	add("endpoint", f.Endpoint)
	add("type", f.EventType)
	add("resource", f.Resource)
	if f.Since > 0 {
		add("since", f.Since.String())
	}
	if f.OlderThan > 0 {
		add("older_than", f.OlderThan.String())
	}
	if !f.From.IsZero() {
		add("from", f.From.UTC().Format(time.RFC3339))
	}
	if !f.To.IsZero() {
		add("to", f.To.UTC().Format(time.RFC3339))
	}
	return strings.Join(p, " ")
}

func dryRunResult(status string, force bool) (string, string) {
	switch status {
	case keys.StatusPending:
		return inbox.AlreadyPending, "already pending: its workflow would only be signalled again"
	case keys.StatusDone, keys.StatusIgnored:
		if !force {
			return ResultRefused, "the event is " + status + ": replaying it would be a no-op for its effects; force reprocesses it"
		}
	}
	return ResultWouldReplay, ""
}

// Replay replays the selected events now, in this call. One event asked
// for by key and refused is an error (a *ConflictError). Bulk replays that
// should be watched and cancelled are jobs (StartReplayJob).
func (s *Service) Replay(ctx context.Context, who Actor, req ReplayRequest) (ReplaySummary, error) {
	if err := who.check(); err != nil {
		return ReplaySummary{}, err
	}
	if err := req.normalize(); err != nil {
		return ReplaySummary{}, err
	}
	sum := ReplaySummary{DryRun: req.DryRun, Events: []ReplayRow{}}
	var cands []inbox.InboxSummary
	if req.Filter != nil {
		f := *req.Filter
		f.Limit++
		evs, err := inbox.ListInboxEvents(ctx, s.Store.Pool, f)
		if err != nil {
			return sum, err
		}
		if len(evs) > req.Filter.Limit {
			evs, sum.More = evs[:req.Filter.Limit], true
		}
		cands = evs
	} else {
		for _, k := range req.Keys {
			d, err := inbox.InspectInboxEvent(ctx, s.Store.Pool, k, false)
			if errors.Is(err, fault.ErrNotFound) {
				err = fmt.Errorf("event %s is not in the inbox (a quarantined delivery is re-admitted with 'quarantine resolve'): %w", k, fault.ErrNotFound)
			}
			if err != nil {
				if len(req.Keys) == 1 {
					return sum, err
				}
				sum.Errors++
				sum.Events = append(sum.Events, ReplayRow{Key: k.String(), Result: ResultError, Detail: err.Error()})
				continue
			}
			cands = append(cands, d.InboxSummary)
		}
	}
	bells := s.NewDoorbells()
	for i := range cands {
		row := s.replayOne(ctx, who, &cands[i], req, bells)
		switch row.Result {
		case ResultReplayed:
			sum.Replayed++
		case ResultRefused:
			sum.Refused++
			if len(req.Keys) == 1 && !req.DryRun {
				return sum, &ConflictError{Err: errors.New(row.Detail)}
			}
		case ResultError:
			sum.Errors++
		}
		sum.Events = append(sum.Events, row)
	}
	sum.Signaled = bells.Rung()
	if bells.Failed != nil {
		sum.SignalErr = bells.Failed.Error()
	}
	return sum, nil
}

// replayOne replays (or, in a dry run, judges) one candidate.
func (s *Service) replayOne(ctx context.Context, who Actor, c *inbox.InboxSummary, req ReplayRequest, bells *Doorbells) ReplayRow {
	v := ReplayRow{Key: c.Key.String(), Resource: c.Resource().String(), PreviousStatus: c.Status,
		PreviousAttempts: c.Attempts, PreviousLastError: c.LastError}
	if req.DryRun {
		v.Result, v.Detail = dryRunResult(c.Status, req.Force)
		return v
	}
	res, err := inbox.ReplayInboxEvent(ctx, s.Store, inbox.ReplayRequest{Key: c.Key, Actor: who.Name, Reason: req.Reason,
		Force: req.Force, Selection: req.Selection})
	var refused *inbox.ReplayRefusedError
	switch {
	case errors.As(err, &refused):
		v.Result, v.Detail, v.PreviousStatus = ResultRefused, refused.Error(), refused.Status
	case err != nil:
		v.Result, v.Detail = ResultError, err.Error()
		s.log().Warn("replay failed", "event_key", c.Key.String(), "error", err.Error())
	default:
		v.Result, v.AuditID = res.Outcome, res.ActionID
		v.PreviousStatus, v.PreviousAttempts, v.PreviousLastError = res.PreviousStatus, res.PreviousAttempts, res.PreviousLastError
		if res.PayloadRedacted {
			v.Detail = "payload redacted by retention: handlers that read it will fail this event"
		}
		v.Signaled = bells.Ring(ctx, res.Resource, res.Key.String())
		s.log().Info("event replayed", "event_key", c.Key.String(), "actor", who.Name, "outcome", res.Outcome)
	}
	return v
}

// StartReplayJob validates req and records it as a queued job; a runner
// (RunReplayJobs in the console server, or RunReplayJob) carries it out.
func (s *Service) StartReplayJob(ctx context.Context, who Actor, req ReplayRequest) (*access.ReplayJob, error) {
	if err := who.check(); err != nil {
		return nil, err
	}
	if req.DryRun {
		return nil, Invalidf("a dry run is not a job: call Replay")
	}
	if err := req.normalize(); err != nil {
		return nil, err
	}
	j := &access.ReplayJob{CreatedBy: who.Name, Reason: req.Reason, Description: req.Selection, Force: req.Force}
	if f := req.Filter; f != nil {
		abs := f.Absolute(time.Now())
		j.Selection.Filter, j.MaxEvents = &abs, f.Limit
	} else {
		for _, k := range req.Keys {
			j.Selection.Keys = append(j.Selection.Keys, k.String())
		}
		j.MaxEvents = len(req.Keys)
	}
	out, err := access.InsertReplayJob(ctx, s.Store, j)
	if err != nil {
		return nil, err
	}
	if _, err := s.audit(ctx, s.Store.Pool, who, "replay_job_start", fmt.Sprintf("replay_job:%d", out.ID), req.Reason,
		map[string]any{"selection": out.Description, "total": out.Total, "force": out.Force}); err != nil {
		return nil, err
	}
	s.log().Info("replay job queued", "job", out.ID, "actor", who.Name, "selection", out.Description, "total", out.Total)
	return out, nil
}

// ReplayJob reads one job.
func (s *Service) ReplayJob(ctx context.Context, id int64) (*access.ReplayJob, error) {
	return access.GetReplayJob(ctx, s.Store.Pool, id)
}

// ReplayJobs lists the newest jobs.
func (s *Service) ReplayJobs(ctx context.Context, limit int) ([]access.ReplayJob, error) {
	if limit < 1 || limit > MaxListLimit {
		return nil, Invalidf("limit must be between 1 and %d", MaxListLimit)
	}
	return access.ListReplayJobs(ctx, s.Store.Pool, limit)
}

// CancelReplayJob stops a job: a queued one at once, a running one after
// its current event. Events already replayed stay replayed. Audited.
func (s *Service) CancelReplayJob(ctx context.Context, who Actor, id int64) (*access.ReplayJob, error) {
	if err := who.check(); err != nil {
		return nil, err
	}
	j, err := access.CancelReplayJob(ctx, s.Store.Pool, id)
	if err != nil {
		return nil, err
	}
	if _, err := s.audit(ctx, s.Store.Pool, who, "replay_job_cancel", fmt.Sprintf("replay_job:%d", id), "",
		map[string]any{"status": j.Status, "processed": j.Processed, "total": j.Total}); err != nil {
		return nil, err
	}
	return j, nil
}

// jobStale is how long a running job's heartbeat may stop before another
// runner takes it over.
const jobStale = time.Minute

// RunReplayJobs carries out queued jobs (and takes over running ones whose
// runner died) until ctx ends, polling every interval.
func (s *Service) RunReplayJobs(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for ctx.Err() == nil {
			j, err := access.ClaimReplayJob(ctx, s.Store.Pool, 0, jobStale)
			if err != nil {
				if !errors.Is(err, fault.ErrNotFound) && ctx.Err() == nil {
					s.log().Warn("claim replay job", "error", err.Error())
				}
				break
			}
			if _, err := s.runJob(ctx, j, nil); err != nil && ctx.Err() == nil {
				s.log().Warn("replay job failed", "job", j.ID, "error", err.Error())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunReplayJob claims job id and carries it out in this call, telling
// onRow (when not nil) of each event. If ctx ends first the job is
// cancelled, not left for another runner.
func (s *Service) RunReplayJob(ctx context.Context, id int64, onRow func(j *access.ReplayJob, row ReplayRow)) (*access.ReplayJob, error) {
	j, err := access.ClaimReplayJob(ctx, s.Store.Pool, id, jobStale)
	if err != nil {
		return nil, fmt.Errorf("replay job %d is not queued: %w", id, err)
	}
	return s.runJob(ctx, j, onRow)
}

func (s *Service) runJob(ctx context.Context, j *access.ReplayJob, onRow func(*access.ReplayJob, ReplayRow)) (*access.ReplayJob, error) {
	who := Actor{Name: j.CreatedBy}
	req := ReplayRequest{Reason: j.Reason, Force: j.Force, Selection: j.Description}
	if j.Description == "" {
		req.Selection = fmt.Sprintf("replay job %d", j.ID)
	} else {
		req.Selection = fmt.Sprintf("replay job %d: %s", j.ID, j.Description)
	}
	bells := s.NewDoorbells()
	finish := func(status, msg string) (*access.ReplayJob, error) {
		out, err := access.FinishReplayJob(context.WithoutCancel(ctx), s.Store.Pool, j.ID, status, msg)
		if err == nil {
			s.log().Info("replay job finished", "job", j.ID, "status", status, "processed", out.Processed,
				"replayed", out.Replayed, "refused", out.Refused)
		}
		return out, err
	}
	step := func(row ReplayRow, inboxID int64) (bool, error) {
		p := access.JobProgress{Processed: 1, LastInboxID: inboxID}
		switch row.Result {
		case ResultReplayed:
			p.Replayed = 1
		case ResultRefused:
			p.Refused = 1
		case ResultError:
			p.Errors, p.LastError = 1, row.Key+": "+row.Detail
		}
		if row.Signaled {
			p.Signaled = 1
		}
		if bells.Failed != nil {
			p.SignalError = bells.Failed.Error()
		}
		j.Processed++
		cancel, err := access.AdvanceReplayJob(context.WithoutCancel(ctx), s.Store.Pool, j.ID, p)
		if onRow != nil {
			onRow(j, row)
		}
		return cancel, err
	}
	for j.Processed < j.MaxEvents {
		if ctx.Err() != nil {
			return finish(access.JobCancelled, "stopped: "+ctx.Err().Error())
		}
		var batch []inbox.InboxSummary
		var missing []ReplayRow
		if f := j.Selection.Filter; f != nil {
			var err error
			batch, err = inbox.NextInboxForJob(ctx, s.Store.Pool, *f, j.LastInboxID, j.UptoInboxID, min(50, j.MaxEvents-j.Processed))
			if err != nil {
				return finish(access.JobFailed, err.Error())
			}
		} else {
			if j.Processed >= len(j.Selection.Keys) {
				break
			}
			raw := j.Selection.Keys[j.Processed]
			k, err := keys.ParseEvent(raw)
			var d *inbox.InboxDetail
			if err == nil {
				d, err = inbox.InspectInboxEvent(ctx, s.Store.Pool, k, false)
			}
			if err != nil {
				missing = append(missing, ReplayRow{Key: raw, Result: ResultError, Detail: err.Error()})
			} else {
				batch = append(batch, d.InboxSummary)
			}
		}
		if len(batch) == 0 && len(missing) == 0 {
			break
		}
		for _, row := range missing {
			if cancel, err := step(row, 0); err != nil || cancel {
				return s.endEarly(ctx, finish, cancel, err)
			}
		}
		for i := range batch {
			row := s.replayOne(ctx, who, &batch[i], req, bells)
			if cancel, err := step(row, batch[i].ID); err != nil || cancel {
				return s.endEarly(ctx, finish, cancel, err)
			}
			if j.Selection.Filter != nil {
				j.LastInboxID = batch[i].ID
			}
		}
	}
	return finish(access.JobDone, "")
}

func (s *Service) endEarly(ctx context.Context, finish func(string, string) (*access.ReplayJob, error), cancel bool, err error) (*access.ReplayJob, error) {
	if cancel {
		return finish(access.JobCancelled, "")
	}
	if ctx.Err() != nil {
		return finish(access.JobCancelled, "stopped: "+ctx.Err().Error())
	}
	return finish(access.JobFailed, err.Error())
}

// Validate checks req as Replay and StartReplayJob would, without touching
// anything (the CLI checks its command line with it before connecting).
func (req ReplayRequest) Validate() error {
	if req.Filter != nil {
		f := *req.Filter
		f.Statuses = slices.Clone(f.Statuses)
		req.Filter = &f
	}
	return req.normalize()
}
