package fakegithub

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-github/v84/github"
)

// HookshotAgent is the User-Agent GitHub's webhook deliveries carry (GitHub-Hookshot/<build>).
const HookshotAgent = "GitHub-Hookshot/fakegithub"

// Delivery is one webhook delivery that was sent, and how the receiver answered.
type Delivery struct {
	// Event is the X-GitHub-Event header ("issue_comment", "pull_request", ...).
	Event string
	// ID is the X-GitHub-Delivery GUID, new for every delivery.
	ID string
	// Body is the raw payload that was signed.
	Body []byte
	// Status and Response are the receiver's HTTP status and body (up to 64 KiB).
	Status   int
	Response []byte
}

// Sign returns the X-Hub-Signature-256 value GitHub sends: "sha256=" and the hex HMAC-SHA256 of
// the raw body keyed with the webhook's secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Send delivers payload (JSON-encoded, unless it is already []byte) to url as GitHub does: a POST
// with Content-Type application/json, X-GitHub-Event, a fresh X-GitHub-Delivery GUID,
// X-GitHub-Hook-ID, User-Agent HookshotAgent and, when secret is not empty, X-Hub-Signature-256
// (and the legacy SHA-1 header is left out, as GitHub recommends receivers ignore it). A nil
// client means http.DefaultClient. Any answer, 2xx or not, is a Delivery; the error is for a
// request that could not be sent.
func Send(ctx context.Context, client *http.Client, url, secret, event string, payload any) (Delivery, error) {
	body, ok := payload.([]byte)
	if !ok {
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return Delivery{}, fmt.Errorf("encoding the %s payload: %w", event, err)
		}
	}
	return deliver(ctx, client, url, secret, Delivery{Event: event, ID: guid(), Body: body})
}

// Redeliver sends d again with its own delivery GUID and body, as GitHub's "Redeliver" button
// and a retried delivery do, signed with secret (which may differ from the first time's, to
// tamper with it). The answer is in the returned Delivery.
func Redeliver(ctx context.Context, client *http.Client, url, secret string, d Delivery) (Delivery, error) {
	d.Status, d.Response = 0, nil
	return deliver(ctx, client, url, secret, d)
}

// deliver POSTs d's body to url with GitHub's headers and reads the answer into d.
func deliver(ctx context.Context, client *http.Client, url, secret string, d Delivery) (Delivery, error) {
	event, body := d.Event, d.Body
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return d, fmt.Errorf("building the %s delivery: %w", event, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", HookshotAgent)
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", d.ID)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	if secret != "" {
		req.Header.Set("X-Hub-Signature-256", Sign(secret, body))
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return d, fmt.Errorf("delivering %s to %s: %w", event, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	d.Status = resp.StatusCode
	d.Response, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return d, fmt.Errorf("reading the answer to %s: %w", event, err)
	}
	return d, nil
}

// guid is a random version 4 UUID, the shape of X-GitHub-Delivery.
func guid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:]}, "-")
}

// IssueCommentEvent is the issue_comment payload GitHub sends for c ("created", "edited" or
// "deleted"): the comment, its pull request as an issue (with pull_request links, which is how
// a receiver tells a PR comment from an issue comment), the repository and the sender (the
// comment's author).
func (s *Server) IssueCommentEvent(action string, c Comment) *github.IssueCommentEvent {
	s.mu.Lock()
	p := s.state.prs[prKey(c.Repo, c.Issue)]
	s.mu.Unlock()
	return &github.IssueCommentEvent{
		Action:  github.Ptr(action),
		Comment: s.toComment(c),
		Issue: &github.Issue{
			Number: github.Ptr(c.Issue), Title: github.Ptr(p.Title), State: github.Ptr(cmp.Or(p.State, "open")), User: user(p.Author),
			PullRequestLinks: &github.PullRequestLinks{URL: github.Ptr(fmt.Sprintf("%s/repos/%s/pulls/%d", s.BaseURL(), c.Repo, c.Issue))},
		},
		Repo:   repository(c.Repo),
		Sender: user(c.Author),
	}
}

// PullRequestEvent is the pull_request payload GitHub sends when sender does action ("opened",
// "synchronize", "reopened", "closed", ...) on a known pull request.
func (s *Server) PullRequestEvent(action, repo string, number int, sender string) (*github.PullRequestEvent, error) {
	s.mu.Lock()
	p, ok := s.state.prs[prKey(repo, number)]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no pull request %s#%d (add it with AddPR)", repo, number)
	}
	return &github.PullRequestEvent{
		Action: github.Ptr(action), Number: github.Ptr(number), PullRequest: s.toPR(repo, p),
		Repo: repository(repo), Sender: user(sender),
	}, nil
}

func repository(fullName string) *github.Repository {
	owner, name, _ := strings.Cut(fullName, "/")
	return &github.Repository{FullName: github.Ptr(fullName), Name: github.Ptr(name), Owner: user(owner)}
}
