// Package github is the GitHub provider: X-Hub-Signature-256 checked by
// go-github's ValidatePayloadFromBody (SHA-1 alone is refused), JSON or
// form-encoded deliveries, X-GitHub-Delivery as the event id, the
// installation (else the organization or owner) as the source account and
// the object an event is about (an issue, a pull request, a check suite, a
// workflow run…, else the repository or the organization: Resource) as the
// resource. Its API clients read and replay a hook's delivery log
// (client.go: GitHub never redelivers a failed delivery, so the recovery
// schedule does) and fetch the current issue, pull request, check suite or
// workflow run for Event.Fetch (fetch.go).
package github

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's legacy X-Hub-Signature, sent beside the SHA-256 one; never verified
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v72/github"
	"github.com/tidwall/gjson"

	"github.com/hookinbox/hookinbox/hookintype"
	"github.com/hookinbox/hookinbox/internal/keys"
	"github.com/hookinbox/hookinbox/providers"
)

// Provider is GitHub.
type Provider struct{}

var (
	_ providers.Provider  = Provider{}
	_ providers.Unwrapper = Provider{}
	_ providers.Signer    = Provider{}
)

// Name is "github".
func (Provider) Name() string { return keys.ProviderGitHub }

// Verifier checks X-Hub-Signature-256 against secrets.
func (Provider) Verifier(secrets []hookintype.Secret) providers.Verifier { return verifier(secrets) }

type verifier []hookintype.Secret

// Verify uses go-github's ValidatePayloadFromBody with the SHA-256
// signature only (X-Hub-Signature-256); SHA-1 alone is refused. The payload
// is the body, or the "payload" field of a form-encoded delivery.
func (v verifier) Verify(h http.Header, body []byte, _ time.Duration, _ time.Time) (providers.Verified, error) {
	sig := h.Get(github.SHA256SignatureHeader)
	if sig == "" {
		return providers.Verified{}, providers.Unauthenticatedf("missing %s", github.SHA256SignatureHeader)
	}
	if !strings.HasPrefix(sig, "sha256=") {
		return providers.Verified{}, providers.Unauthenticatedf("signature is not sha256")
	}
	last := fmt.Errorf("no secret")
	for _, s := range v {
		payload, err := github.ValidatePayloadFromBody(h.Get("Content-Type"), bytes.NewReader(body), sig, []byte(s.Value))
		if err == nil {
			return providers.Verified{SecretID: s.ID, Payload: payload}, nil
		}
		last = err
	}
	return providers.Verified{}, providers.Unauthenticatedf("github: %s", last.Error())
}

// Signature256 is the X-Hub-Signature-256 GitHub sends with body:
// sha256= and the hex HMAC-SHA256 of the body under secret.
func Signature256(body []byte, secret string) string {
	return "sha256=" + hexHMAC(sha256.New, body, secret)
}

func hexHMAC(h func() hash.Hash, body []byte, secret string) string {
	m := hmac.New(h, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign sets the two signatures GitHub sends for a hook with a secret:
// X-Hub-Signature-256 (the one Verify checks) and the legacy SHA-1
// X-Hub-Signature that GitHub still sends beside it. GitHub signs the body
// only, so at is not used.
func (Provider) Sign(secret string, h http.Header, body []byte, _ time.Time) error {
	h.Set(github.SHA256SignatureHeader, Signature256(body, secret))
	h.Set(github.SHA1SignatureHeader, "sha1="+hexHMAC(sha1.New, body, secret))
	return nil
}

// Unwrap is the JSON of an already-authenticated delivery: the body, or its
// "payload" field for form-encoded deliveries (what Verify returns). With
// neither a signature nor a secret, go-github checks nothing.
func (Provider) Unwrap(h http.Header, body []byte) ([]byte, error) {
	p, err := github.ValidatePayloadFromBody(h.Get("Content-Type"), bytes.NewReader(body), "", nil)
	if err != nil {
		return nil, providers.Malformedf("%s", err.Error())
	}
	return p, nil
}

// Normalize reads a delivery: X-GitHub-Delivery is the id kept across redeliveries, the
// installation is the account, the object the event is about the resource (Resource).
func (Provider) Normalize(_ hookintype.EndpointSettings, h http.Header, doc gjson.Result) (providers.Normalized, error) {
	// X-GitHub-Delivery is a header and GitHub signs the body only.
	n := providers.Normalized{UnsignedEventID: true}
	n.EventID = h.Get("X-GitHub-Delivery")
	if n.EventID == "" {
		return n, providers.Malformedf("missing X-GitHub-Delivery")
	}
	event := h.Get("X-GitHub-Event")
	if event == "" {
		return n, providers.Malformedf("missing X-GitHub-Event")
	}
	n.EventType = event
	if a := doc.Get("action"); a.Type == gjson.String && a.Str != "" {
		n.EventType = event + "." + a.Str
	}
	switch {
	case doc.Get("installation.id").Exists():
		n.Account = doc.Get("installation.id").String()
	case doc.Get("organization.login").Exists():
		n.Account = doc.Get("organization.login").String()
	case doc.Get("repository.owner.login").Exists():
		n.Account = doc.Get("repository.owner.login").String()
	}
	// A payload that names nothing (ok false) is the delivery's own
	// resource if no route handles it, and refused if one does.
	n.ResourceKind, n.ResourceID, _ = Resource(event, doc)
	return n, nil
}

// Resource kinds of GitHub events (Normalized.ResourceKind): the object an
// event is about, so that events of different objects of one repository run
// in different workflows while each object's own events stay in order.
const (
	KindIssue            = "issue"
	KindPullRequest      = "pull_request"
	KindCheckSuite       = "check_suite"
	KindWorkflowRun      = "workflow_run"
	KindRelease          = "release"
	KindDiscussion       = "discussion"
	KindDeployment       = "deployment"
	KindRepository       = "repository"
	KindOrganization     = "organization"
	KindInstallation     = "installation"
	KindAccount          = "account"
	KindSecurityAdvisory = "security_advisory"
	KindSponsorship      = "sponsorship"
	KindUser             = "user"
	KindEnterprise       = "enterprise"
)

// Resource is the resource of a GitHub event of type event (X-GitHub-Event)
// with payload doc, by the object it is about (docs/providers.md has the
// table):
//   - issues and issue_comment: the issue, OWNER/REPO#N; those about a pull
//     request (issue.pull_request set: a label, a milestone, a comment on it)
//     are the pull request's, since issues and pull requests share one
//     number space;
//   - pull_request, pull_request_review, pull_request_review_comment and
//     pull_request_review_thread: the pull request, OWNER/REPO#N;
//   - check_suite and check_run: the check suite, OWNER/REPO/ID;
//   - workflow_run, workflow_job and deployment_review: the run, OWNER/REPO/ID;
//   - release: OWNER/REPO/ID; discussion and discussion_comment: the
//     discussion, OWNER/REPO#N; deployment, deployment_status and
//     deployment_protection_rule: the deployment, OWNER/REPO/ID;
//   - any other event of a repository: the repository, OWNER/REPO;
//   - else the organization (its login), the installation (its id), the
//     marketplace account, the advisory's GHSA id, the sponsorship, the
//     enterprise, or the sender (the user).
//
// ok is false when the payload names none of these.
func Resource(event string, doc gjson.Result) (kind, id string, ok bool) {
	repo := doc.Get("repository.full_name").String()
	if repo != "" {
		if kind, id := repoObject(event, repo, doc); id != "" {
			return kind, id, true
		}
		return KindRepository, repo, true
	}
	for _, c := range []struct{ kind, path string }{
		{KindOrganization, "organization.login"},
		{KindInstallation, "installation.id"},
		{KindAccount, "marketplace_purchase.account.id"},
		{KindSecurityAdvisory, "security_advisory.ghsa_id"},
		{KindSponsorship, "sponsorship.node_id"},
		{KindEnterprise, "enterprise.slug"},
		{KindUser, "sender.login"},
	} {
		if v := doc.Get(c.path); v.Exists() && v.String() != "" {
			return c.kind, v.String(), true
		}
	}
	return "", "", false
}

// repoObject is the object of a repository's event, "" when the event is
// about the repository itself.
func repoObject(event, repo string, doc gjson.Result) (kind, id string) {
	number := func(path string) string {
		if n := doc.Get(path); n.Type == gjson.Number && n.Int() > 0 {
			return repo + "#" + n.Raw
		}
		return ""
	}
	object := func(path string) string {
		if n := doc.Get(path); n.Type == gjson.Number && n.Int() > 0 {
			return repo + "/" + n.Raw
		}
		return ""
	}
	switch event {
	case "issues", "issue_comment":
		if doc.Get("issue.pull_request").Exists() {
			return KindPullRequest, number("issue.number")
		}
		return KindIssue, number("issue.number")
	case "pull_request", "pull_request_review", "pull_request_review_comment", "pull_request_review_thread":
		return KindPullRequest, number("pull_request.number")
	case "check_suite":
		return KindCheckSuite, object("check_suite.id")
	case "check_run":
		return KindCheckSuite, object("check_run.check_suite.id")
	case "workflow_run", "deployment_review":
		// A deployment review is the approval of a run's deployment.
		return KindWorkflowRun, object("workflow_run.id")
	case "workflow_job":
		return KindWorkflowRun, object("workflow_job.run_id")
	case "release":
		return KindRelease, object("release.id")
	case "discussion", "discussion_comment":
		return KindDiscussion, number("discussion.number")
	case "deployment", "deployment_status", "deployment_protection_rule":
		return KindDeployment, object("deployment.id")
	}
	return "", ""
}

// KeepHeader keeps X-GitHub-* (event, delivery, hook ids) except the
// installation target id.
func (Provider) KeepHeader(name string) bool {
	return strings.HasPrefix(name, "x-github-") && name != "x-github-hook-installation-target-id"
}

// CheckSecret requires at least 24 random bytes: GitHub accepts any string,
// so the strength is ours to demand.
func (Provider) CheckSecret(secret string) error {
	if err := providers.CheckRandom(secret); err != nil {
		return fmt.Errorf("github: %w", err)
	}
	return nil
}
