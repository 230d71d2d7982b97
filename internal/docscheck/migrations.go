package docscheck

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// migrationFile is a migration's file name (0013_perf, 0013_perf.sql),
	// with the directory written before it, if any (group 1).
	migrationFile = regexp.MustCompile(`([A-Za-z0-9_./-]*/)?\b(\d{4}_[a-z0-9_]+)(?:\.sql)?\b`)
	// migrationNumber is "migration 0013" or "migrations 0011–0013".
	migrationNumber = regexp.MustCompile(`(?i)\bmigrations? (\d{4})(?:\s*(?:–|-|to|and|,)\s*(\d{4}))?`)
)

// CheckMigrations returns one problem per migration of hookinbox's own a
// document quotes that is not in migrations/: a file name (0013_perf.sql,
// migrations/0013_perf) that is not one of names (file names without
// .sql), or a number ("migration 0013", "migrations 0011–0013") that no
// file has. A file under another directory (a team's
// provisioning/migrations/0001_accounts.sql) is not hookinbox's.
func CheckMigrations(doc []byte, names []string) []Problem {
	have := map[string]bool{}
	numbers := map[string]bool{}
	for _, n := range names {
		have[n] = true
		numbers[n[:4]] = true
	}
	var problems []Problem
	for i, line := range strings.Split(string(doc), "\n") {
		p := func(why string) { problems = append(problems, Problem{Line: i + 1, Text: shorten(line), Why: why}) }
		for _, m := range migrationFile.FindAllStringSubmatch(line, -1) {
			if dir := m[1]; dir != "" && dir != "migrations/" && !strings.HasSuffix(dir, "/hookinbox/migrations/") {
				continue
			}
			if !have[m[2]] {
				p(fmt.Sprintf("quotes migration %s, which is not in migrations/", m[2]))
			}
		}
		for _, m := range migrationNumber.FindAllStringSubmatch(line, -1) {
			for _, n := range m[1:] {
				if n != "" && !numbers[n] {
					p(fmt.Sprintf("quotes migration %s, which is not in migrations/", n))
				}
			}
		}
	}
	return problems
}

func shorten(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
