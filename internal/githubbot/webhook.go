package githubbot

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/keelrun/keel/escalation"
)

// WebhookPath is where the bot takes GitHub's deliveries; point the webhook's Payload URL at it.
const WebhookPath = "/github/webhook"

// GitHub's event names the bot acts on.
const (
	EventIssueComment = "issue_comment"
	EventPullRequest  = "pull_request"
	EventPing         = "ping"
)

// MaxBody bounds one delivery; GitHub caps payloads at 25 MB, but the events the bot reads are
// a few kilobytes, and anything larger is refused before it is read.
const MaxBody = 1 << 20

// DefaultCallTimeout bounds the work on one delivery (GitHub and Temporal calls), which runs
// after GitHub has its answer: GitHub gives up on a delivery after 10 seconds.
const DefaultCallTimeout = 60 * time.Second

// DefaultRememberedDeliveries is how many delivery GUIDs the bot keeps to drop redeliveries.
const DefaultRememberedDeliveries = 4096

// PullRequestHandler takes pull_request events (the jobs those events start).
type PullRequestHandler interface {
	HandlePullRequest(ctx context.Context, ev *github.PullRequestEvent) error
}

// Config configures a Bot.
type Config struct {
	// Secret is the webhook's secret: every delivery must carry its HMAC-SHA256 signature.
	Secret string
	// GitHub reads permissions and comments and posts replies, with the bot's token.
	GitHub *github.Client
	// Sessions finds and steers the sessions of a pull request.
	Sessions Sessions
	// Login is who the token comments as (a GitHub App: "APP-SLUG[bot]"); empty: asked of GitHub
	// (GET /user) once. Only the bot's own comments count as its replies.
	Login string
	// Teams are "org/team-slug" entries whose active members may use the commands besides the
	// repository's collaborators with write access.
	Teams []string
	// PullRequests takes pull_request events; nil answers them as not handled here.
	PullRequests PullRequestHandler
	// CallTimeout bounds the work on one delivery; zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// RememberedDeliveries bounds the redelivery memory; zero means DefaultRememberedDeliveries.
	RememberedDeliveries int
	Logger               *slog.Logger
}

// Bot is the webhook endpoint. It answers GitHub at once (202) and does the work in the
// background, so GitHub's 10-second limit is never missed.
type Bot struct {
	cfg  Config
	seen *deliveries
	wg   sync.WaitGroup
	id   escalation.GitHubIdentity
}

// New checks the configuration and builds the bot. An empty secret is refused: the bot fails
// closed rather than acting on deliveries anyone could forge.
func New(cfg Config) (*Bot, error) {
	switch {
	case cfg.Secret == "":
		return nil, errors.New("building the github bot: the webhook secret is empty")
	case cfg.GitHub == nil:
		return nil, errors.New("building the github bot: no GitHub client")
	case cfg.Sessions == nil:
		return nil, errors.New("building the github bot: no session client")
	}
	for _, t := range cfg.Teams {
		if _, err := parseTeam(t); err != nil {
			return nil, fmt.Errorf("building the github bot: %w", err)
		}
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.RememberedDeliveries <= 0 {
		cfg.RememberedDeliveries = DefaultRememberedDeliveries
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Bot{cfg: cfg, seen: newDeliveries(cfg.RememberedDeliveries), id: escalation.GitHubIdentity{Login: cfg.Login}}, nil
}

// self is the login the bot comments as.
func (b *Bot) self(ctx context.Context) (string, error) { return b.id.Self(ctx, b.cfg.GitHub) }

// Wait blocks until the work on every delivery taken so far has finished.
func (b *Bot) Wait() { b.wg.Wait() }

// ServeHTTP takes one delivery: it reads the body (bounded), verifies the signature, drops a
// delivery GUID it has taken already, and dispatches on the event.
func (b *Bot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "webhook deliveries are POSTs", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the delivery (at most %d bytes): %v", MaxBody, err), http.StatusRequestEntityTooLarge)
		return
	}
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if !validSignature(sig, body, b.cfg.Secret) {
		b.cfg.Logger.Warn("github delivery refused: missing or wrong signature", "delivery", github.DeliveryID(r), "has_signature", sig != "")
		http.Error(w, "missing or wrong "+github.SHA256SignatureHeader, http.StatusUnauthorized)
		return
	}
	event, id := github.WebHookType(r), github.DeliveryID(r)
	if event == EventPing {
		w.WriteHeader(http.StatusOK)
		return
	}
	if event != EventIssueComment && (event != EventPullRequest || b.cfg.PullRequests == nil) {
		http.Error(w, fmt.Sprintf("event %q is not handled here", event), http.StatusAccepted)
		return
	}
	if r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "the webhook's content type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	payload, err := github.ParseWebHook(event, body)
	if err != nil {
		http.Error(w, fmt.Sprintf("decoding the %s payload: %v", event, err), http.StatusBadRequest)
		return
	}
	if !b.seen.take(id) {
		b.cfg.Logger.Info("github delivery already taken, dropped", "delivery", id, "event", event)
		http.Error(w, "delivery "+id+" was taken already", http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	b.background(func(ctx context.Context) {
		var err error
		switch ev := payload.(type) {
		case *github.IssueCommentEvent:
			err = b.handleComment(ctx, ev)
		case *github.PullRequestEvent:
			err = b.cfg.PullRequests.HandlePullRequest(ctx, ev)
		}
		if err != nil {
			// Forget it, so a redelivery (GitHub's Redeliver button) can try again; every effect
			// is idempotent, so what already happened does not happen twice.
			b.seen.forget(id)
			b.cfg.Logger.Error("handling github delivery", "delivery", id, "event", event, "error", err)
		}
	})
}

// validSignature checks X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256 of the body
// under the secret. go-github's ValidateSignature would also take sha1= and sha512= in that
// header; GitHub sends only sha256 there, so anything else is refused.
func validSignature(sig string, body []byte, secret string) bool {
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// background runs f after the response, with its own deadline.
func (b *Bot) background(f func(ctx context.Context)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.CallTimeout)
		defer cancel()
		f(ctx)
	}()
}

// deliveries remembers the last n delivery GUIDs taken, oldest forgotten first.
type deliveries struct {
	mu   sync.Mutex
	ids  map[string]bool
	ring []string
	next int
}

func newDeliveries(n int) *deliveries {
	return &deliveries{ids: make(map[string]bool, n), ring: make([]string, n)}
}

// take reports whether id is new, and remembers it. An empty id (no X-GitHub-Delivery) is
// always new: the effects' own idempotency still holds.
func (d *deliveries) take(id string) bool {
	if id == "" {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids[id] {
		return false
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.ids, old)
	}
	d.ring[d.next] = id
	d.next = (d.next + 1) % len(d.ring)
	d.ids[id] = true
	return true
}

// forget lets id be taken again (its slot in the ring is reused in turn).
func (d *deliveries) forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.ids, id)
}
