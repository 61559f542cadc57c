package contract

import "fmt"

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
