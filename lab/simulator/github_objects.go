package simulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file is the simulated GitHub's objects: the issues, pull requests,
// check suites and workflow runs a handler fetches (Event.Fetch), served at
// GitHub's REST paths to the endpoint's token (Config.APIKey) or to an
// installation token the App (Config.GitHubAppID) minted.

// GitHub object kinds the simulator serves, by their REST path segment.
const (
	GitHubIssues      = "issues"
	GitHubPulls       = "pulls"
	GitHubCheckSuites = "check-suites"
	GitHubRuns        = "actions/runs"
)

// GitHubObjectPath is the REST path of one object: repos/OWNER/REPO/KIND/N.
func GitHubObjectPath(owner, repo, kind string, n int64) string {
	return fmt.Sprintf("repos/%s/%s/%s/%d", owner, repo, kind, n)
}

// SetGitHubObject stores the current state of the object at path
// (GitHubObjectPath), what a GET of it answers from now on.
func (s *Simulator) SetGitHubObject(path string, body json.RawMessage) error {
	if !json.Valid(body) {
		return errors.New("github object: not JSON")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gh.objects == nil {
		s.gh.objects = map[string]json.RawMessage{}
	}
	s.gh.objects[path] = append(json.RawMessage(nil), body...)
	return nil
}

// GitHubObjectReads counts the GETs of objects that were answered 200.
func (s *Simulator) GitHubObjectReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gh.objectReads
}

// LimitGitHubRate makes the next n object reads answer GitHub's primary
// rate limit (403, X-RateLimit-Remaining: 0, X-RateLimit-Reset in resetIn).
func (s *Simulator) LimitGitHubRate(n int, resetIn time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gh.rateLimited, s.gh.rateReset = n, time.Now().Add(resetIn)
}

func (s *Simulator) gitHubObjectRoutes(mux *http.ServeMux) {
	for _, kind := range []string{GitHubIssues, GitHubPulls, GitHubCheckSuites, GitHubRuns} {
		mux.HandleFunc("GET /repos/{owner}/{repo}/"+kind+"/{n}", s.getGitHubObject(kind))
	}
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", s.mintInstallationToken)
}

func (s *Simulator) getGitHubObject(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Limit", "5000")
		s.mu.Lock()
		s.stats.API.Requests++
		_, minted := s.gh.installationTokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		s.mu.Unlock()
		if !minted && !s.gitHubAuthorized(r, false) {
			s.countAPI(http.StatusUnauthorized)
			writeGitHubError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		s.mu.Lock()
		if s.gh.rateLimited > 0 {
			s.gh.rateLimited--
			reset := s.gh.rateReset
			s.mu.Unlock()
			s.countAPI(http.StatusForbidden)
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			writeGitHubError(w, http.StatusForbidden, "API rate limit exceeded for installation ID 7.")
			return
		}
		s.mu.Unlock()
		f, gone := s.awaitFault(r)
		if gone {
			return
		}
		if f.Status != 0 {
			s.countAPI(f.Status)
			writeGitHubFault(w, f)
			return
		}
		n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
		path := GitHubObjectPath(r.PathValue("owner"), r.PathValue("repo"), kind, n)
		s.mu.Lock()
		body, ok := s.gh.objects[path]
		if ok && err == nil {
			s.gh.objectReads++
		}
		s.mu.Unlock()
		if !ok || err != nil {
			s.countAPI(http.StatusNotFound)
			writeGitHubError(w, http.StatusNotFound, "Not Found")
			return
		}
		s.countAPI(http.StatusOK)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-RateLimit-Remaining", "4999")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		_, _ = w.Write(body)
	}
}

// mintInstallationToken answers the App (its JWT) with a token of one
// installation, valid an hour.
func (s *Simulator) mintInstallationToken(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.stats.API.Requests++
	s.mu.Unlock()
	if !s.gitHubAuthorized(r, true) {
		s.countAPI(http.StatusUnauthorized)
		writeGitHubError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
		return
	}
	s.mu.Lock()
	if s.gh.installationTokens == nil {
		s.gh.installationTokens = map[string]string{}
	}
	tok := "ghs_sim" + strings.ReplaceAll(s.newGUID(), "-", "")
	s.gh.installationTokens[tok] = r.PathValue("id")
	s.gh.tokensMinted++
	s.mu.Unlock()
	s.countAPI(http.StatusCreated)
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
}

// GitHubTokensMinted counts the installation tokens minted.
func (s *Simulator) GitHubTokensMinted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gh.tokensMinted
}
