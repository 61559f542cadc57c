package slackbot

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/keelrun/keel/internal/session"
)

// Routes served by Bot; point the Slack app's Interactivity and Slash Command request URLs at
// them.
const (
	InteractionsPath = "/slack/interactions"
	CommandsPath     = "/slack/commands"
)

// DefaultCallTimeout bounds one background call to Temporal or Slack.
const DefaultCallTimeout = 30 * time.Second

// maxSlackBody bounds what the bot reads from one request.
const maxSlackBody = 1 << 20

// Config configures a Bot.
type Config struct {
	// SigningSecret verifies that requests come from Slack.
	SigningSecret string
	// TeamID is the only workspace whose requests are accepted.
	TeamID string
	// Approvers are the Slack user IDs allowed to answer, stop and ask for status.
	Approvers []string
	Answerer  session.Answerer
	// API posts ephemeral notes, opens the edit modal and updates notices.
	API *slack.Client
	// HTTPClient posts slash command replies to their response_url; nil means http.DefaultClient.
	HTTPClient *http.Client
	// CallTimeout bounds each background call; zero means DefaultCallTimeout.
	CallTimeout time.Duration
	// Now is the clock for the signing window and the answer times; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Bot is the HTTP endpoint of the Slack app. It verifies every request (signature, age,
// team, approver) before anything reaches the Answerer, acknowledges at once, and does the slow
// work (Temporal calls, Slack API calls) in the background so Slack's 3-second limit is never
// missed. The first answer per escalation wins; later clicks are told who answered.
type Bot struct {
	cfg       Config
	approvers map[string]bool
	state     *botState
	mux       *http.ServeMux
	wg        sync.WaitGroup
}

// New checks the configuration and builds the bot. An empty secret, team or approver
// list is refused: the bot fails closed rather than accepting requests from anyone.
func New(cfg Config) (*Bot, error) {
	switch {
	case cfg.SigningSecret == "":
		return nil, errors.New("building slack bot: signing secret is empty")
	case cfg.TeamID == "":
		return nil, errors.New("building slack bot: team ID is empty")
	case len(cfg.Approvers) == 0:
		return nil, errors.New("building slack bot: approver list is empty")
	case cfg.Answerer == nil:
		return nil, errors.New("building slack bot: no answerer")
	case cfg.API == nil:
		return nil, errors.New("building slack bot: no slack API client")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	b := &Bot{cfg: cfg, approvers: map[string]bool{}, state: newBotState(), mux: http.NewServeMux()}
	for _, a := range cfg.Approvers {
		b.approvers[strings.TrimSpace(a)] = true
	}
	b.mux.HandleFunc("POST "+InteractionsPath, b.handleInteraction)
	b.mux.HandleFunc("POST "+CommandsPath, b.handleCommand)
	return b, nil
}

// ServeHTTP routes Slack's requests.
func (b *Bot) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.mux.ServeHTTP(w, r) }

// Wait blocks until all background work has finished, for a clean shutdown.
func (b *Bot) Wait() { b.wg.Wait() }

// verified reads and verifies a request. It writes the refusal itself and returns ok=false when
// the request must go no further; a byte-identical replay is acknowledged and dropped.
func (b *Bot) verified(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSlackBody))
	if err != nil {
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return nil, false
	}
	now := b.cfg.Now()
	if err := verifySlack(b.cfg.SigningSecret, r.Header, body, now); err != nil {
		b.cfg.Logger.Warn("slack request refused", "path", r.URL.Path, "reason", err.Error())
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return nil, false
	}
	if b.state.replayed(r.Header.Get(slackSignatureHeader), now) {
		b.cfg.Logger.Info("slack request replayed, dropped", "path", r.URL.Path)
		w.WriteHeader(http.StatusOK)
		return nil, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form body", http.StatusBadRequest)
		return nil, false
	}
	return form, true
}

// allowed checks the workspace and the person; it writes a 403 when either is wrong.
func (b *Bot) allowed(w http.ResponseWriter, teamID, userID string) bool {
	if teamID != b.cfg.TeamID {
		b.cfg.Logger.Warn("slack request from another team refused", "team", teamID)
		http.Error(w, "wrong team", http.StatusForbidden)
		return false
	}
	if !b.approvers[userID] {
		b.cfg.Logger.Warn("slack request from a non-approver refused", "user", userID)
		http.Error(w, "not an approver", http.StatusForbidden)
		return false
	}
	return true
}

// background runs f after the response, with its own deadline, so the acknowledgement does not
// wait on Temporal or Slack.
func (b *Bot) background(f func(ctx context.Context)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.CallTimeout)
		defer cancel()
		f(ctx)
	}()
}

// ephemeral shows a note to one person in a channel; failures are only logged, the note is a
// courtesy.
func (b *Bot) ephemeral(ctx context.Context, channel, user, text string) {
	if channel == "" {
		return
	}
	if _, err := b.cfg.API.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false)); err != nil {
		b.cfg.Logger.Warn("posting slack ephemeral note", "channel", channel, "error", err)
	}
}
