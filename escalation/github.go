package escalation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/google/go-github/v84/github"

	"github.com/keelrun/keel/internal/contract"
)

// DefaultGitHubURL is the REST API of github.com; GitHub Enterprise uses https://HOST/api/v3.
const DefaultGitHubURL = "https://api.github.com"

// TriageLabel is added to the pull request so that stuck sessions show up in label searches.
const TriageLabel = "needs-human-triage"

// GitHubCommand starts a reply comment that answers a session on its pull request:
// "/keel retry", "/keel edit <text>", "/keel say <text>", "/keel approve".
const GitHubCommand = "/keel"

// ErrNoPullRequest is the GitHub channel's failure for a session that names no pull request
// when the worker has no default one either: there is nothing to comment on.
var ErrNoPullRequest = errors.New("no pull request to comment on: the session names none (starter run --repo and --pr, or the GitHub Actions variables) and the worker has no default (escalation.github.repo and escalation.github.pr)")

// GitHubNotifier tells the author of a pull request that the session working on it is stuck: a
// comment that mentions them and says how to answer, plus the triage label. The pull request is
// the session's own (Escalation.GitHub, from the session's input), so one worker serves sessions
// on many pull requests; Repo and PR are the default for sessions that name none.
//
// Idempotency lives on GitHub itself: the comment carries a hidden marker with the escalation ID,
// and Notify lists the comments first and skips posting when the marker is there, so a retry
// after a crash posts once.
type GitHubNotifier struct {
	// BaseURL is the REST API root, used as given (GitHub Enterprise Server:
	// https://HOST/api/v3); empty means DefaultGitHubURL.
	BaseURL string
	Token   string
	// Repo ("owner/name") and PR are the pull request of sessions whose input names none: a
	// worker that serves one repository. Empty Repo leaves such sessions without a channel.
	Repo       string
	PR         int
	HTTPClient *http.Client
	// Login is who Token comments as; empty: asked of GitHub once. Only a comment by it counts
	// as the notice already posted, so nobody else's comment can stand in for it.
	Login string

	self GitHubIdentity
}

// Name identifies the channel in logs and in EscalationPolicy.Channels.
func (g *GitHubNotifier) Name() string { return contract.ChannelGitHub }

// GitHubMarker is the hidden marker that makes the comment findable by escalation ID.
func GitHubMarker(id string) string { return "<!-- keel-escalation:" + id + " -->" }

// Notify posts the comment on the session's pull request unless one with the marker exists,
// then makes sure the label is set (adding a label that is already there changes nothing).
func (g *GitHubNotifier) Notify(ctx context.Context, e contract.Escalation) error {
	pr, err := g.target(e)
	if err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	owner, repo, _ := strings.Cut(pr.Repo, "/")
	self := g.Login
	if self == "" {
		if self, err = g.self.Self(ctx, c); err != nil {
			return err
		}
	}
	posted, err := hasMarker(ctx, c, pr, self, GitHubMarker(e.ID))
	if err != nil {
		return err
	}
	if !posted {
		got, resp, err := c.PullRequests.Get(ctx, owner, repo, pr.PR)
		if err != nil {
			return apiError("reading pull request "+pr.String(), resp, err)
		}
		body := GitHubComment(e, got.GetUser().GetLogin())
		if _, resp, err := c.Issues.CreateComment(ctx, owner, repo, pr.PR, &github.IssueComment{Body: &body}); err != nil {
			return apiError("commenting on "+pr.String(), resp, err)
		}
	}
	if _, resp, err := c.Issues.AddLabelsToIssue(ctx, owner, repo, pr.PR, []string{TriageLabel}); err != nil {
		return apiError("labelling "+pr.String(), resp, err)
	}
	return nil
}

// target is the pull request to comment on: the session's own, else the worker's default.
func (g *GitHubNotifier) target(e contract.Escalation) (contract.GitHubContext, error) {
	pr := contract.GitHubContext{Repo: g.Repo, PR: g.PR}
	if e.GitHub != nil && e.GitHub.Repo != "" {
		pr = *e.GitHub
	}
	if pr.Repo == "" || pr.PR <= 0 {
		return pr, PermanentError{fmt.Errorf("escalation %s of session %s: %w", e.ID, e.WorkflowID, ErrNoPullRequest)}
	}
	// The commit is not used here, so only what names the pull request is checked.
	if err := (contract.GitHubContext{Repo: pr.Repo, PR: pr.PR}).Check(); err != nil {
		return pr, fmt.Errorf("escalation %s of session %s: %w", e.ID, e.WorkflowID, err)
	}
	return pr, nil
}

// client is a go-github client on BaseURL with the token.
func (g *GitHubNotifier) client() (*github.Client, error) {
	c := github.NewClient(httpClient(g.HTTPClient))
	if g.Token != "" {
		c = c.WithAuthToken(g.Token)
	}
	if g.BaseURL == "" || strings.TrimRight(g.BaseURL, "/") == DefaultGitHubURL {
		return c, nil
	}
	u, err := url.Parse(strings.TrimRight(g.BaseURL, "/") + "/")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("escalation.github.base_url %q is not an http(s) URL", g.BaseURL)
	}
	c.BaseURL = u
	return c, nil
}

// hasMarker pages through the pull request's comments (by GitHub's Link header) looking for
// the marker in a comment self wrote. It asks for page 1 by number, which every server answers
// the same way.
func hasMarker(ctx context.Context, c *github.Client, pr contract.GitHubContext, self, marker string) (bool, error) {
	owner, repo, _ := strings.Cut(pr.Repo, "/")
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100, Page: 1}}
	for {
		comments, resp, err := c.Issues.ListComments(ctx, owner, repo, pr.PR, opts)
		if err != nil {
			return false, apiError("listing comments of "+pr.String(), resp, err)
		}
		for _, cm := range comments {
			if OwnComment(cm, self) && strings.Contains(cm.GetBody(), marker) {
				return true, nil
			}
		}
		if resp.NextPage == 0 {
			return false, nil
		}
		opts.Page = resp.NextPage
	}
}

// GitHubIdentity is the login a GitHub token comments as, learned once. Keel's hidden markers
// count only in comments by this login: anyone who can comment can type a marker, so a marker in
// somebody else's comment must neither stand in for Keel's notice or reply nor be edited by Keel.
type GitHubIdentity struct {
	// Login, when set, is used as it is (a GitHub App's installation token cannot read GET /user:
	// its login is "APP-SLUG[bot]").
	Login string

	mu      sync.Mutex
	learned string
}

// Self returns the login: Login, else the one GET /user answered, asked once and kept.
func (i *GitHubIdentity) Self(ctx context.Context, c *github.Client) (string, error) {
	if i.Login != "" {
		return i.Login, nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.learned != "" {
		return i.learned, nil
	}
	u, resp, err := c.Users.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("learning the GitHub login of the token (set escalation.github.login for a GitHub App): %w", apiError("reading GET /user", resp, err))
	}
	if u.GetLogin() == "" {
		return "", errors.New("learning the GitHub login of the token: GET /user named no login (set escalation.github.login)")
	}
	i.learned = u.GetLogin()
	return i.learned, nil
}

// OwnComment says whether self wrote the comment; logins compare as GitHub compares them,
// without regard to case.
func OwnComment(c *github.IssueComment, self string) bool {
	return self != "" && strings.EqualFold(c.GetUser().GetLogin(), self)
}

// apiError turns GitHub's answer into a StatusError (so callers can tell a bad token from a
// blip), or wraps a transport error, both saying what was being done.
func apiError(op string, resp *github.Response, err error) error {
	if resp == nil || resp.Response == nil || resp.StatusCode < 300 {
		return fmt.Errorf("%s: %w", op, err)
	}
	msg := err.Error()
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Message != "" {
		msg = er.Message
	}
	return &StatusError{Op: op, Code: resp.StatusCode, Body: msg}
}

// GitHubComment renders the comment: a mention, the escalation as text, how to answer (a reply
// comment on the pull request or the CLI), and the marker.
func GitHubComment(e contract.Escalation, author string) string {
	var b strings.Builder
	switch {
	case author == "":
	case IsApproval(e):
		fmt.Fprintf(&b, "@%s the agent session working on this pull request waits for approval of a `%s` call.\n\n", author, e.Approval.Tool)
	case NoticeOnly(e):
		fmt.Fprintf(&b, "@%s the agent session working on this pull request failed.\n\n", author)
	default:
		fmt.Fprintf(&b, "@%s the agent session working on this pull request needs a person.\n\n", author)
	}
	b.WriteString("```\n")
	b.WriteString(strings.ReplaceAll(Text(e), "```", "'''"))
	b.WriteString("```\n\n")
	switch {
	case IsApproval(e):
		fmt.Fprintf(&b, "Approve with a reply comment (%s), or run `%s` (add `--deny` to deny it). Without an answer the call is denied at the deadline.\n\n",
			replyCommands(Choices(e)), approveLine(e))
	case !NoticeOnly(e):
		fmt.Fprintf(&b, "Answer with a reply comment (%s), or run `%s`.\n\n",
			replyCommands(append(append([]string{}, Choices(e)...), contract.ActionSay)), AnswerCommand(e))
	}
	b.WriteString(GitHubMarker(e.ID))
	b.WriteString("\n")
	return b.String()
}

// replyCommands lists the reply comments for the given answer words, "`/keel retry`, `/keel edit
// <text>`, ..."; edit and say take the text that follows.
func replyCommands(actions []string) string {
	cmds := make([]string, 0, len(actions))
	for _, a := range actions {
		c := GitHubCommand + " " + a
		if a == contract.ActionEdit || a == contract.ActionSay {
			c += " <text>"
		}
		cmds = append(cmds, "`"+c+"`")
	}
	return strings.Join(cmds, ", ")
}
