package contract

import (
	"strings"

	"go.temporal.io/sdk/temporal"
)

// Search attributes every session keeps up to date, so the Web UI and `temporal workflow list
// --query` can filter sessions (for example all sessions waiting on a person). They are registered
// on the server at start-up.
var (
	StatusKey            = temporal.NewSearchAttributeKeyKeyword("KeelStatus")
	TurnsKey             = temporal.NewSearchAttributeKeyInt64("KeelTurns")
	TokensKey            = temporal.NewSearchAttributeKeyInt64("KeelTokens")
	PendingEscalationKey = temporal.NewSearchAttributeKeyBool("KeelPendingEscalation")
	// PullRequestKey is the pull request a session works on, as GitHubContext.String writes it
	// in lower case (owner/name#123), so answers given on a pull request find its sessions and only those.
	PullRequestKey = temporal.NewSearchAttributeKeyKeyword("KeelPullRequest")
	// GitHubJobKey describes a session a pull request event started (internal/githubjobs), one
	// "fact:value" entry each: repo:, commit:, rule:, path: (its pull request is PullRequestKey).
	// A listing returns it in clear, so a restarted bot finds a repository's running jobs from the
	// server alone.
	GitHubJobKey = temporal.NewSearchAttributeKeyKeywordList("KeelGitHubJob")
	// TaskKey is the session's task on one line, at most ListedTaskRunes characters: the Web UI's
	// workflow list shows a search attribute as a column, and nothing else of a session's (its
	// summary and memo are not in a listing). It is in clear, so a starter whose payloads are
	// encrypted (codec.keys) leaves it out.
	TaskKey = temporal.NewSearchAttributeKeyKeyword("KeelTask")
)

// SearchAttributes are all of Keel's search attributes, each with its type: the worker and the
// starter register them on the server, and the dev server starts with them.
var SearchAttributes = []temporal.SearchAttributeKey{
	StatusKey, TurnsKey, TokensKey, PendingEscalationKey, PullRequestKey, GitHubJobKey, TaskKey,
}

// ListedTaskRunes bounds TaskKey's value, well under the server's size limit of a search attribute.
const ListedTaskRunes = 120

// ListedTask is a task as TaskKey holds it: its lines joined by spaces, at most ListedTaskRunes
// characters, cut ones ending in "…".
func ListedTask(task string) string {
	line := strings.Join(strings.Fields(task), " ")
	if r := []rune(line); len(r) > ListedTaskRunes {
		line = string(r[:ListedTaskRunes-1]) + "…"
	}
	return line
}

// StartSearchAttributes are the search attributes a session starts with: running, and the pull
// request it works on when its input names one, then the starter's own extra ones (a pull request
// job adds GitHubJobKey). Every place that starts a session uses them.
func StartSearchAttributes(in SessionInput, extra ...temporal.SearchAttributeUpdate) temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{StatusKey.ValueSet(StatusRunning)}
	if in.GitHub != nil {
		// Lower case: GitHub's owner and repository names ignore case, and a keyword matches exactly.
		updates = append(updates, PullRequestKey.ValueSet(strings.ToLower(in.GitHub.String())))
	}
	return temporal.NewSearchAttributes(append(updates, extra...)...)
}
