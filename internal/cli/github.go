package cli

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// The GitHub Actions variables a run reads when it names no pull request itself.
const (
	envActions    = "GITHUB_ACTIONS"
	envRepository = "GITHUB_REPOSITORY"
	envSHA        = "GITHUB_SHA"
	envEventPath  = "GITHUB_EVENT_PATH"
	envRef        = "GITHUB_REF"
)

// prFlag adds --pr. --repo and --commit are the job key's flags; with --pr they also name the
// session's pull request.
func prFlag(cmd *cobra.Command, pr *int) {
	cmd.Flags().IntVar(pr, "pr", 0, "the pull request the session works on, with --repo owner/name (and --commit, its head): the GitHub channel comments there and answers come from there; inside GitHub Actions the run's own pull request when --repo, --pr and --commit are absent")
}

// githubContext is the pull request a run works on: from --repo/--pr/--commit when --pr is
// given, else, inside GitHub Actions with none of the three flags, from the Actions variables;
// nil when there is none (--repo alone is a job key, a push build has no pull request).
func githubContext(cmd *cobra.Command, repo string, pr int, commit string, getenv func(string) string) (*contract.GitHubContext, error) {
	f := cmd.Flags()
	switch {
	case f.Changed("pr"):
		if repo == "" {
			return nil, usageErr("--pr %d needs --repo owner/name: the repository of the pull request", pr)
		}
		gh := contract.GitHubContext{Repo: repo, PR: pr, Commit: commit}
		if err := gh.Check(); err != nil {
			return nil, usageErr("--repo/--pr/--commit: %w", err)
		}
		return &gh, nil
	case f.Changed("repo") || f.Changed("commit") || getenv(envActions) != "true":
		return nil, nil
	}
	return actionsContext(getenv)
}

// refPull is GITHUB_REF on a pull_request event: refs/pull/N/merge (or /head).
var refPull = regexp.MustCompile(`^refs/pull/([^/]+)/(merge|head)$`)

// actionsContext reads the pull request of a GitHub Actions run: GITHUB_REPOSITORY, the number
// from the event payload (pull_request.number) or GITHUB_REF, and the commit. On pull_request
// events GITHUB_SHA is the merge commit GitHub made, not the branch's head, so the payload's
// pull_request.head.sha wins when it is there.
func actionsContext(getenv func(string) string) (*contract.GitHubContext, error) {
	gh := contract.GitHubContext{Repo: getenv(envRepository), Commit: getenv(envSHA)}
	if path := getenv(envEventPath); path != "" {
		var ev struct {
			PullRequest *struct {
				Number int `json:"number"`
				Head   struct {
					SHA string `json:"sha"`
				} `json:"head"`
			} `json:"pull_request"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, usageErr("%s: reading the event payload: %w", envEventPath, err)
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, usageErr("%s: the event payload %s is not JSON: %w", envEventPath, path, err)
		}
		if p := ev.PullRequest; p != nil {
			gh.PR = p.Number
			if p.Head.SHA != "" {
				gh.Commit = p.Head.SHA
			}
			if gh.PR <= 0 {
				return nil, usageErr("%s: pull_request.number in %s is %d, not a pull request number", envEventPath, path, gh.PR)
			}
		}
	}
	if gh.PR == 0 {
		m := refPull.FindStringSubmatch(getenv(envRef))
		if m == nil {
			return nil, nil // not a pull request build (a push, a schedule)
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n <= 0 {
			return nil, usageErr("%s=%q: %q is not a pull request number", envRef, getenv(envRef), m[1])
		}
		gh.PR = n
	}
	if gh.Repo == "" {
		return nil, usageErr("%s is empty: GitHub Actions sets it to owner/name; set it, or pass --repo and --pr", envRepository)
	}
	if err := gh.Check(); err != nil {
		return nil, usageErr("the GitHub Actions variables (%s, %s, %s, %s): %w", envRepository, envSHA, envEventPath, envRef, err)
	}
	return &gh, nil
}

// withGitHub starts the session with its pull request in the input.
func withGitHub(cfg config.Config, spec sessionSpec, gh *contract.GitHubContext) sessionSpec {
	if gh == nil {
		return spec
	}
	in := sessionInput(cfg, spec)
	in.GitHub = gh
	spec.input = &in
	return spec
}
