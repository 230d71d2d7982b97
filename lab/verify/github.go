package verify

import (
	"slices"
	"strings"

	"github.com/hookinbox/hookinbox/internal/keys"
)

// GitHubIssues is a GitHub hook's issues events and what a forward route's
// receiver applied of them (github-issue-forwards).
type GitHubIssues struct {
	// Route is the forward route's name.
	Route string
	// Delivered lists, per issue (OWNER/REPO#N), the X-GitHub-Delivery ids
	// of its events that reached the intake with a 2xx, in the order they
	// were delivered (one after another per issue, so that order is the
	// intake's).
	Delivered map[string][]string
	// Applied is the receiver's log, every provider's (only GitHub's
	// entries are read). A coalesced document's events are each an entry,
	// under the document's one operation key.
	Applied []Applied
	// Final, when set (a route that fetches the current issue), is each
	// issue's updated_at at the end; Current is the updated_at of the last
	// current the receiver applied per issue. Each issue that has a Current
	// must have its Final one; with EveryCurrent, every issue must have one.
	Final, Current map[string]string
	EveryCurrent   bool
}

// githubIssueForwards: each delivered issues event is applied exactly once,
// and each issue's events are applied in the order they were delivered,
// whichever rule recorded them (an upgrade moves an issue's events from the
// repository's workflow to the issue's: the older ones must still come
// first).
func githubIssueForwards(in *GitHubIssues, r *Result) {
	if in == nil {
		r.skips = append(r.skips, "no GitHub issues were sent")
		return
	}
	r.checked++
	issueOf, pos := map[string]string{}, map[string]int{}
	for issue, ids := range in.Delivered {
		for i, id := range ids {
			issueOf[id], pos[id] = issue, i
		}
	}
	applied := map[string]int{}
	last := map[string]int{}
	for _, a := range in.Applied {
		k, err := keys.ParseEvent(a.EventKey)
		if err != nil || k.Provider != keys.ProviderGitHub {
			continue
		}
		issue, ok := issueOf[k.EventID]
		if !ok {
			r.offend("", "%s applied, but no issues event had that delivery id", a.EventKey)
			continue
		}
		applied[k.EventID]++
		if p, seen := last[issue]; seen && pos[k.EventID] < p {
			r.offend("", "%s: delivery %s (#%d of the issue) applied after #%d", issue, k.EventID, pos[k.EventID]+1, p+1)
		}
		last[issue] = max(last[issue], pos[k.EventID])
	}
	issues := make([]string, 0, len(in.Delivered))
	for issue := range in.Delivered {
		issues = append(issues, issue)
	}
	slices.Sort(issues)
	for _, issue := range issues {
		for _, id := range in.Delivered[issue] {
			r.Expected++
			switch n := applied[id]; n {
			case 1:
				r.Actual++
			case 0:
				r.offend("", "%s: delivery %s never applied at the receiver (route %s)", issue, id, in.Route)
			default:
				r.offend("", "%s: delivery %s applied %d times", issue, id, n)
			}
		}
	}
	if in.Final != nil {
		for _, issue := range issues {
			cur, ok := in.Current[issue]
			switch {
			case !ok && in.EveryCurrent:
				r.offend("", "%s: no document carried the issue's current state", issue)
			case ok && cur != in.Final[issue]:
				r.offend("", "%s: the receiver's last current is of %s, the issue's final state of %s", issue, cur, in.Final[issue])
			}
		}
	}
	if len(issues) > 0 {
		r.note("%d issue(s) of %s", len(issues), strings.SplitN(issues[0], "#", 2)[0])
	}
}
