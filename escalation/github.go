package escalation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// DefaultGitHubURL is the REST API of github.com; GitHub Enterprise uses https://HOST/api/v3.
const DefaultGitHubURL = "https://api.github.com"

// TriageLabel is added to the pull request so that stuck sessions show up in label searches.
const TriageLabel = "needs-human-triage"

// GitHubNotifier tells the author of a pull request that the session working on it is stuck: a
// comment that mentions them and says how to answer, plus the triage label. Idempotency lives on
// GitHub itself: the comment carries a hidden marker with the escalation ID, and Notify lists the
// comments first and skips posting when the marker is there, so a retry after a crash posts once.
type GitHubNotifier struct {
	// BaseURL is the REST API root; empty means DefaultGitHubURL.
	BaseURL string
	Token   string
	// Repo is "owner/name".
	Repo       string
	PR         int
	HTTPClient *http.Client
}

// Name identifies the channel in logs and in EscalationPolicy.Channels.
func (g *GitHubNotifier) Name() string { return contract.ChannelGitHub }

// GitHubMarker is the hidden marker that makes the comment findable by escalation ID.
func GitHubMarker(id string) string { return "<!-- keel-escalation:" + id + " -->" }

// Notify posts the comment unless one with the marker exists, then makes sure the label is set
// (adding a label that is already there changes nothing).
func (g *GitHubNotifier) Notify(ctx context.Context, e contract.Escalation) error {
	posted, err := g.hasMarker(ctx, GitHubMarker(e.ID))
	if err != nil {
		return err
	}
	if !posted {
		author, err := g.author(ctx)
		if err != nil {
			return err
		}
		body := map[string]string{"body": GitHubComment(e, author)}
		if err := g.do(ctx, http.MethodPost, g.issuePath("comments"), body, nil); err != nil {
			return fmt.Errorf("commenting on %s#%d: %w", g.Repo, g.PR, err)
		}
	}
	labels := map[string][]string{"labels": {TriageLabel}}
	if err := g.do(ctx, http.MethodPost, g.issuePath("labels"), labels, nil); err != nil {
		return fmt.Errorf("labelling %s#%d: %w", g.Repo, g.PR, err)
	}
	return nil
}

// GitHubComment renders the comment: a mention, the escalation as text, and the marker.
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
		fmt.Fprintf(&b, "Approve with `%s`, or add `--deny` to deny it. Without an answer the call is denied at the deadline.\n\n", approveLine(e))
	case !NoticeOnly(e):
		fmt.Fprintf(&b, "Answer with `%s`.\n\n", AnswerCommand(e))
	}
	b.WriteString(GitHubMarker(e.ID))
	b.WriteString("\n")
	return b.String()
}

// author returns the login of the pull request's author.
func (g *GitHubNotifier) author(ctx context.Context) (string, error) {
	var pr struct {
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	path := fmt.Sprintf("/repos/%s/pulls/%d", g.Repo, g.PR)
	if err := g.do(ctx, http.MethodGet, path, nil, &pr); err != nil {
		return "", fmt.Errorf("reading pull request %s#%d: %w", g.Repo, g.PR, err)
	}
	return pr.User.Login, nil
}

// hasMarker pages through the pull request's comments looking for the marker.
func (g *GitHubNotifier) hasMarker(ctx context.Context, marker string) (bool, error) {
	const perPage = 100
	for page := 1; ; page++ {
		var comments []struct {
			Body string `json:"body"`
		}
		path := fmt.Sprintf("%s?per_page=%d&page=%d", g.issuePath("comments"), perPage, page)
		if err := g.do(ctx, http.MethodGet, path, nil, &comments); err != nil {
			return false, fmt.Errorf("listing comments of %s#%d: %w", g.Repo, g.PR, err)
		}
		for _, c := range comments {
			if strings.Contains(c.Body, marker) {
				return true, nil
			}
		}
		if len(comments) < perPage {
			return false, nil
		}
	}
}

func (g *GitHubNotifier) issuePath(tail string) string {
	return fmt.Sprintf("/repos/%s/issues/%d/%s", g.Repo, g.PR, tail)
}

// do sends one REST request with the token and decodes a 2xx JSON answer into out.
func (g *GitHubNotifier) do(ctx context.Context, method, path string, in, out any) error {
	var body *bytes.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding request: %w", err)
		}
		body = bytes.NewReader(b)
	} else {
		body = bytes.NewReader(nil)
	}
	base := strings.TrimRight(g.BaseURL, "/")
	if base == "" {
		base = DefaultGitHubURL
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return fmt.Errorf("building request: %w", err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "keel-escalation")
	if g.Token != "" {
		req.Header.Set("Authorization", "Bearer "+g.Token)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient(g.HTTPClient).Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if err := checkStatus(method+" "+path, resp); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding %s %s: %w", method, path, err)
	}
	return nil
}
