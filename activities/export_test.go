package activities

import "time"

// SetBacklogPoll sets how often a held-back sweep asks for the backlog
// again (tests).
func SetBacklogPoll(d time.Duration) { backlogPoll = d }

// SetTrendsResample sets how often a sweep that goes on samples the trends
// again (tests).
func SetTrendsResample(d time.Duration) { trendsResample = d }
