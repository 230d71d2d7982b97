package activities

import "time"

// SetBacklogPoll sets how often a held-back sweep asks for the backlog
// again (tests).
func SetBacklogPoll(d time.Duration) { backlogPoll = d }
