package contract

import (
	"fmt"
	"regexp"
	"strings"
)

// GitHubContext is the pull request a session works on. It travels in the session's input (from
// `starter run --repo/--pr/--commit`, the GitHub Actions variables, or a job a pull request event
// started), so the GitHub channel comments on the session's own pull request and answers given
// there find the session; nil leaves the worker's escalation.github default.
type GitHubContext struct {
	// Repo is "owner/name".
	Repo string `json:"repo"`
	// PR is the pull request number.
	PR int `json:"pr"`
	// Commit is the head commit the session was started for; empty when unknown.
	Commit string `json:"commit,omitempty"`
}

// String names the pull request the way GitHub does: owner/name#123.
func (g GitHubContext) String() string { return fmt.Sprintf("%s#%d", g.Repo, g.PR) }

// Check says what is wrong with a context, naming the field: Repo must be owner/name, PR 1 or
// more, Commit empty or a hex commit SHA (7 to 64 digits, so abbreviated and SHA-256 ones pass).
func (g GitHubContext) Check() error {
	owner, name, ok := strings.Cut(g.Repo, "/")
	if !ok || !repoPart.MatchString(owner) || !repoPart.MatchString(name) {
		return fmt.Errorf("repository %q is not owner/name", g.Repo)
	}
	if g.PR <= 0 {
		return fmt.Errorf("pull request number %d is not 1 or more", g.PR)
	}
	if g.Commit != "" && !commitSHA.MatchString(g.Commit) {
		return fmt.Errorf("commit %q is not a hex commit SHA", g.Commit)
	}
	return nil
}

// repoPart is what GitHub allows in an owner or repository name.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

var commitSHA = regexp.MustCompile(`^[0-9a-fA-F]{7,64}$`)
