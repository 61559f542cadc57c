package githubbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/program"
)

// DefaultListen is where the bot listens when nothing is configured.
const DefaultListen = "127.0.0.1:3001"

// RunConfig is everything the bot process needs; loading it is the caller's business.
type RunConfig struct {
	Listen string
	// Secret is the webhook secret; Token the GitHub token the bot reads and replies with.
	Secret, Token string
	// BaseURL is GitHub's REST API root; empty means github.com's.
	BaseURL string
	// Login is who Token comments as; empty: asked of GitHub (GET /user).
	Login string
	Teams []string
	// PullRequests builds the pull_request handler once Temporal and GitHub are connected, and
	// wait is called after the bot stopped taking deliveries; nil leaves pull_request events
	// unhandled.
	PullRequests func(ctx context.Context, c client.Client, gh *github.Client) (h PullRequestHandler, wait func(), err error)
	CallTimeout  time.Duration
	Logger       *slog.Logger
	// Dial connects to Temporal the way every Keel program does.
	Dial func(ctx context.Context) (client.Client, error)
}

// NewGitHubClient is a go-github client with token on baseURL (empty: api.github.com).
func NewGitHubClient(baseURL, token string, hc *http.Client) (*github.Client, error) {
	c := github.NewClient(hc)
	if token != "" {
		c = c.WithAuthToken(token)
	}
	if baseURL != "" {
		u, err := url.Parse(strings.TrimRight(baseURL, "/") + "/")
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("the GitHub API URL %q is not a URL like https://HOST/api/v3", baseURL)
		}
		c.BaseURL = u
	}
	return c, nil
}

// Run dials Temporal, listens on cfg.Listen and serves the bot until ctx is done.
func Run(ctx context.Context, cfg RunConfig) error {
	if err := cfg.check(); err != nil {
		return err
	}
	c, err := cfg.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	listen := cfg.Listen
	if listen == "" {
		listen = DefaultListen
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening for github deliveries: %w", err)
	}
	var jobs PullRequestHandler
	if cfg.PullRequests != nil {
		gh, err := NewGitHubClient(cfg.BaseURL, cfg.Token, nil)
		if err != nil {
			_ = ln.Close()
			return err
		}
		var wait func()
		if jobs, wait, err = cfg.PullRequests(ctx, c, gh); err != nil {
			_ = ln.Close()
			return fmt.Errorf("building the pull request jobs: %w", err)
		}
		defer wait()
	}
	return serve(ctx, cfg, TemporalSessions{Client: c}, jobs, ln)
}

// check refuses what would stop the bot later, before Temporal is dialled.
func (cfg RunConfig) check() error {
	if cfg.Dial == nil {
		return errors.New("running the github bot: no way to dial Temporal")
	}
	if cfg.Secret == "" {
		return errors.New("running the github bot: the webhook secret is empty")
	}
	for _, t := range cfg.Teams {
		if _, err := parseTeam(t); err != nil {
			return fmt.Errorf("running the github bot: %w", err)
		}
	}
	return nil
}

// Serve serves the bot on ln with the given Sessions until ctx is done, then stops taking
// deliveries and waits for the work on those taken. Tests call it with their own listener.
func Serve(ctx context.Context, cfg RunConfig, sessions Sessions, ln net.Listener) error {
	return serve(ctx, cfg, sessions, nil, ln)
}

// serve is Serve with the pull_request handler, if any.
func serve(ctx context.Context, cfg RunConfig, sessions Sessions, jobs PullRequestHandler, ln net.Listener) error {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	gh, err := NewGitHubClient(cfg.BaseURL, cfg.Token, nil)
	if err == nil {
		var bot *Bot
		bot, err = New(Config{Secret: cfg.Secret, GitHub: gh, Sessions: sessions, Login: cfg.Login, Teams: cfg.Teams,
			PullRequests: jobs, CallTimeout: cfg.CallTimeout, Logger: logger})
		if err == nil {
			return listen(ctx, bot, ln, logger)
		}
	}
	_ = ln.Close()
	return err
}

// listen serves the bot's route on ln until ctx is done.
func listen(ctx context.Context, bot *Bot, ln net.Listener, logger *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, bot)
	return program.Serve(ctx, "github bot", mux, ln, bot.Wait, logger, "path", WebhookPath)
}
