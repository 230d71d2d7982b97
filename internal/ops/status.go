package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/internal/store/forwards"
	"github.com/hookinbox/hookinbox/internal/store/inbox"
	"github.com/hookinbox/hookinbox/starter"
)

// StatusView is the state of the work at a glance.
type StatusView struct {
	Database string        `json:"database"`
	Temporal string        `json:"temporal"`
	Backlog  *keys.Backlog `json:"backlog,omitempty"`
	// Routes are the forward routes' backlogs.
	Routes    []forwards.Backlog `json:"routes,omitempty"`
	Schedules []ScheduleView     `json:"schedules,omitempty"`
	Warnings  []string           `json:"warnings,omitempty"`
}

// ScheduleView is one schedule's health.
type ScheduleView struct {
	ID      string     `json:"id"`
	Paused  bool       `json:"paused"`
	LastRun *time.Time `json:"last_run,omitempty"`
	NextRun *time.Time `json:"next_run,omitempty"`
	Running int        `json:"running"`
}

// ErrNoTemporal is returned by acts that need Temporal when there is no client.
var ErrNoTemporal = errors.New("Temporal is not configured for this process") //nolint:staticcheck // ST1005: "Temporal" is a proper noun, and the message is user-facing

// Status reads the backlog from the database and the schedules from
// Temporal; each that cannot be read is reported, not an error.
func (s *Service) Status(ctx context.Context) StatusView {
	v := StatusView{Database: "ok", Temporal: "ok"}
	if s.Store == nil {
		v.Database = "unavailable"
		if s.StoreErr != nil {
			v.Database += ": " + s.StoreErr.Error()
		}
	} else if b, err := inbox.ReadBacklog(ctx, s.Store.Pool); err != nil {
		v.Database = "error: " + err.Error()
	} else {
		v.Backlog = &b
		if v.Routes, err = forwards.Backlogs(ctx, s.Store.Pool); err != nil {
			v.Database = "error: " + err.Error()
		}
	}
	if s.Temporal == nil {
		v.Temporal = "unavailable: " + ErrNoTemporal.Error()
		if s.TemporalErr != nil {
			v.Temporal = "unavailable: " + s.TemporalErr.Error()
		}
	} else {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var err error
		if v.Schedules, err = scheduleStates(tctx, s.Temporal, s.Config.WorkflowIDPrefix); err != nil {
			v.Temporal = "unavailable: " + err.Error()
		}
	}
	v.Warnings = s.statusWarnings(v)
	return v
}

func scheduleStates(ctx context.Context, c client.Client, prefix string) ([]ScheduleView, error) {
	it, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return nil, err
	}
	var out []ScheduleView
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return out, err
		}
		if !strings.HasPrefix(e.ID, prefix+"hookinbox-") {
			continue
		}
		sv := ScheduleView{ID: e.ID, Paused: e.Paused}
		if n := len(e.RecentActions); n > 0 {
			t := e.RecentActions[n-1].ActualTime
			sv.LastRun = &t
		}
		if len(e.NextActionTimes) > 0 {
			t := e.NextActionTimes[0]
			sv.NextRun = &t
		}
		out = append(out, sv)
	}
	return out, nil
}

// ExpectedSchedules are the schedule ids a worker keeps applied (read from
// starter, so that ops, and the console with it, holds no worker).
func (s *Service) ExpectedSchedules() []string { return starter.EnabledScheduleIDs(s.Config) }

func (s *Service) statusWarnings(v StatusView) []string {
	cfg := s.Config
	var w []string
	if v.Database != "ok" {
		w = append(w, "database: "+v.Database)
	}
	if v.Temporal != "ok" {
		w = append(w, "temporal: "+v.Temporal+" (the intake still accepts; hand-offs wait for the sweeper)")
	}
	if b := v.Backlog; b != nil {
		if b.Exhausted > 0 {
			w = append(w, fmt.Sprintf("%d exhausted event(s): hookinbox inbox list --status exhausted, then replay", b.Exhausted))
		}
		if b.Failed > 0 {
			w = append(w, fmt.Sprintf("%d failed event(s): hookinbox inbox list --status failed", b.Failed))
		}
		if n := b.Outbox["held_for_review"]; n > 0 {
			w = append(w, fmt.Sprintf("%d outbox row(s) held for review: hookinbox outbox list --status held_for_review", n))
		}
		if n := b.Outbox["failed"]; n > 0 {
			w = append(w, fmt.Sprintf("%d outbox row(s) failed: hookinbox outbox list --status failed", n))
		}
		if n := b.SameVersionDivergences24h; n > 0 {
			w = append(w, fmt.Sprintf("%d same-version divergence(s) in 24h: the provider sent other content under a version "+
				"the projection already has; it was not overwritten. Find them in reconcile_divergences WHERE same_version "+
				"(detected_by is the event key: hookinbox inbox show KEY), then ask the provider", n))
		}
		if limit := cfg.SweepAfter + cfg.SweepInterval; b.Pending > 0 && b.OldestPendingAge > limit {
			w = append(w, fmt.Sprintf("oldest pending event is %s old (> %s): is the worker running?", b.OldestPendingAge.Round(time.Second), limit))
		}
	}
	if v.Temporal == "ok" {
		seen := map[string]bool{}
		for _, sc := range v.Schedules {
			seen[sc.ID] = true
			if sc.Paused {
				w = append(w, "schedule "+sc.ID+" is paused")
			}
		}
		for _, id := range s.ExpectedSchedules() {
			if !seen[id] {
				w = append(w, "schedule "+id+" does not exist: start a worker or run 'hookinbox schedules apply'")
			}
		}
	}
	return w
}

// ScheduleName resolves a schedule name or id to its name and id.
func (s *Service) ScheduleName(arg string) (name, id string, err error) {
	for _, n := range starter.ScheduleNames() {
		if arg == n || arg == starter.ScheduleIDOf(s.Config, n) {
			return n, starter.ScheduleIDOf(s.Config, n), nil
		}
	}
	return "", "", Invalidf("unknown schedule %q: want one of %s (or its id)", arg, strings.Join(starter.ScheduleNames(), ", "))
}

// ListSchedules describes the named schedules (every one when names is empty).
func (s *Service) ListSchedules(ctx context.Context, names ...string) ([]starter.ScheduleStatus, error) {
	if s.Temporal == nil {
		return nil, ErrNoTemporal
	}
	if len(names) == 0 {
		names = starter.ScheduleNames()
	}
	out := []starter.ScheduleStatus{}
	for _, a := range names {
		n, id, err := s.ScheduleName(a)
		if err != nil {
			return nil, err
		}
		st, err := starter.DescribeSchedule(ctx, s.Temporal, n, id)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// PauseSchedule pauses (or unpauses) a schedule with a note. Audited when
// the service has a store (the CLI's schedules commands need no database:
// the note on the schedule says who and why).
func (s *Service) PauseSchedule(ctx context.Context, who Actor, name string, pause bool, note string) (string, string, error) {
	if err := who.check(); err != nil {
		return "", "", err
	}
	if s.Temporal == nil {
		return "", "", ErrNoTemporal
	}
	_, id, err := s.ScheduleName(name)
	if err != nil {
		return "", "", err
	}
	past, action := "paused", "schedule_pause"
	if !pause {
		past, action = "unpaused", "schedule_unpause"
	}
	if note == "" {
		note = fmt.Sprintf("%s by %s at %s", past, who.Name, time.Now().UTC().Format(time.RFC3339))
	}
	if pause {
		err = starter.PauseSchedule(ctx, s.Temporal, id, note)
	} else {
		err = starter.UnpauseSchedule(ctx, s.Temporal, id, note)
	}
	if err != nil {
		return "", "", err
	}
	if s.Store != nil {
		_, err = s.audit(ctx, s.Store.Pool, who, action, "schedule:"+id, note, nil)
	}
	return id, note, err
}

// TriggerSchedule starts a run of a schedule now, unless one is running.
// Audited. It returns the schedule id and, when it shows in time, the
// run's workflow id.
func (s *Service) TriggerSchedule(ctx context.Context, who Actor, arg, reason string) (string, string, error) {
	if err := who.check(); err != nil {
		return "", "", err
	}
	if s.Temporal == nil {
		return "", "", ErrNoTemporal
	}
	name, id, err := s.ScheduleName(arg)
	if err != nil {
		return "", "", err
	}
	st, err := starter.DescribeSchedule(ctx, s.Temporal, name, id)
	if err != nil {
		return "", "", err
	}
	if !st.Exists {
		return id, "", &ConflictError{Err: fmt.Errorf("schedule %s does not exist: it is disabled, or run 'hookinbox schedules apply'", id)}
	}
	if len(st.Running) > 0 {
		return id, "", &ConflictError{Err: fmt.Errorf("schedule %s has a run in progress (%s): not triggered", id, strings.Join(st.Running, ", "))}
	}
	if err := starter.TriggerSchedule(ctx, s.Temporal, id); err != nil {
		return id, "", err
	}
	if s.Store != nil {
		if _, err := s.audit(ctx, s.Store.Pool, who, "schedule_trigger", "schedule:"+id, reason, nil); err != nil {
			return id, "", err
		}
	}
	run, _ := awaitTriggered(ctx, s.Temporal, name, id, st.Actions)
	return id, run, nil
}

// awaitTriggered waits briefly for the triggered action to show and names
// its workflow.
func awaitTriggered(ctx context.Context, c client.Client, name, id string, before int) (string, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st, err := starter.DescribeSchedule(ctx, c, name, id)
		if err != nil {
			return "", false
		}
		if st.Actions > before && len(st.Running) > 0 {
			return st.Running[len(st.Running)-1], true
		}
		if st.Actions > before {
			return "(already finished)", true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", false
}
