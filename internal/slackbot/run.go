package slackbot

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/logs"
	"github.com/keelrun/keel/internal/program"
	"github.com/keelrun/keel/internal/session"
)

// Defaults of the Slack bot process.
const (
	DefaultSlackListen     = "127.0.0.1:3000"
	DefaultTemporalAddress = "127.0.0.1:7233"
	DefaultNamespace       = "default"
)

// RunConfig is everything the Slack bot process needs. Loading it (flags, environment, a config
// file) is the caller's business; Run only uses it.
type RunConfig struct {
	Listen        string
	SigningSecret string
	BotToken      string
	TeamID        string
	Approvers     []string
	// SlackAPIURL overrides Slack's Web API base URL (tests, proxies); empty means Slack's own.
	SlackAPIURL     string
	TemporalAddress string
	Namespace       string
	CallTimeout     time.Duration
	// Logger takes the bot's own lines; LogLevel (the key log, KEEL_LOG) is the level of its Temporal
	// client's, which go through internal/logs like the worker's.
	Logger   *slog.Logger
	LogLevel string
	// Dial connects to Temporal the way every Keel program does (TLS, API key, profile,
	// encryption); nil dials TemporalAddress and Namespace in plain text.
	Dial func(ctx context.Context) (client.Client, error)
}

// Run dials Temporal, listens on cfg.Listen and serves the bot until ctx is done.
func Run(ctx context.Context, cfg RunConfig) error {
	c, err := dialTemporal(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	ln, err := net.Listen("tcp", orDefault(cfg.Listen, DefaultSlackListen))
	if err != nil {
		return fmt.Errorf("listening for slack requests: %w", err)
	}
	return Serve(ctx, cfg, session.TemporalAnswerer{Client: c}, ln)
}

// dialTemporal connects with cfg.Dial, or in plain text when none is given.
func dialTemporal(ctx context.Context, cfg RunConfig) (client.Client, error) {
	if cfg.Dial != nil {
		return cfg.Dial(ctx)
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: orDefault(cfg.TemporalAddress, DefaultTemporalAddress),
		Namespace: orDefault(cfg.Namespace, DefaultNamespace), Logger: logs.SDK(cfg.LogLevel)})
	if err != nil {
		return nil, fmt.Errorf("connecting to temporal at %s: %w", orDefault(cfg.TemporalAddress, DefaultTemporalAddress), err)
	}
	return c, nil
}

// Serve serves the bot on ln with the given Answerer until ctx is done, then stops taking
// requests and waits for background work. Tests call it with a fake Answerer.
func Serve(ctx context.Context, cfg RunConfig, ans session.Answerer, ln net.Listener) error {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var opts []slack.Option
	if cfg.SlackAPIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.SlackAPIURL))
	}
	bot, err := New(Config{
		SigningSecret: cfg.SigningSecret, TeamID: cfg.TeamID, Approvers: cfg.Approvers,
		Answerer: ans, API: slack.New(cfg.BotToken, opts...), CallTimeout: cfg.CallTimeout, Logger: logger,
	})
	if err != nil {
		_ = ln.Close()
		return err
	}
	return program.Serve(ctx, "slack bot", bot, ln, bot.Wait, logger)
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
