// Command slackbot serves Keel's Slack app over HTTP: escalation buttons, the edit modal and the
// /keel slash command. It reads the same configuration as the worker (keel.yaml, KEEL_* variables,
// the escalation.slack.* and temporal.* keys), so one set of KEEL_ESCALATION_SLACK_* variables
// configures both. Secrets have no flags, so they never show in a process listing.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/config"
)

// Configuration keys the bot reads, and the environment variables that set them.
const (
	keySecret    = "escalation.slack.signing_secret"
	keyToken     = "escalation.slack.bot_token"
	keyTeam      = "escalation.slack.team_id"
	keyApprovers = "escalation.slack.approvers"
	keyListen    = "escalation.slack.listen"
	keyAPIURL    = "escalation.slack.api_url"

	envSecret    = "KEEL_ESCALATION_SLACK_SIGNING_SECRET"
	envToken     = "KEEL_ESCALATION_SLACK_BOT_TOKEN"
	envTeam      = "KEEL_ESCALATION_SLACK_TEAM_ID"
	envApprovers = "KEEL_ESCALATION_SLACK_APPROVERS"
	envListen    = "KEEL_ESCALATION_SLACK_LISTEN"
	envAPIURL    = "KEEL_ESCALATION_SLACK_API_URL"
	envTemporal  = "KEEL_TEMPORAL_ADDRESS"
	envNamespace = "KEEL_TEMPORAL_NAMESPACE"
)

// exitConfig is the exit code of a configuration mistake.
const exitConfig = 2

// flagKeys maps the bot's own flags to configuration keys; temporal-address and namespace are
// mapped by config.Load itself.
var flagKeys = map[string]string{
	"listen":        keyListen,
	"team":          keyTeam,
	"approvers":     keyApprovers,
	"slack-api-url": keyAPIURL,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run executes the command and maps its error to an exit code: 2 for a configuration mistake
// (one line naming the key), 1 for anything else.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	cmd := newCommand(stderr)
	cmd.SetArgs(args)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "slackbot:", err)
	if config.IsError(err) {
		return exitConfig
	}
	return 1
}

// newCommand builds the cobra command; RunE loads the configuration and hands it to
// escalation.RunSlackBot.
func newCommand(stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "slackbot",
		Short:         "Serve Keel's Slack app: escalation answers and the /keel command",
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	f := cmd.Flags()
	f.String("config", "", config.FileHelp)
	f.String("listen", "", "listen address (key "+keyListen+", env "+envListen+", default "+escalation.DefaultSlackListen+")")
	f.String("team", "", "Slack team ID whose requests are accepted (key "+keyTeam+", env "+envTeam+")")
	f.String("approvers", "", "comma-separated Slack user IDs allowed to answer (key "+keyApprovers+", env "+envApprovers+")")
	f.String("slack-api-url", "", "Slack Web API base URL override (key "+keyAPIURL+", env "+envAPIURL+")")
	f.String("temporal-address", "", "Temporal frontend host:port (env "+envTemporal+" or TEMPORAL_ADDRESS, default "+escalation.DefaultTemporalAddress+")")
	f.String("namespace", "", "Temporal namespace (env "+envNamespace+" or TEMPORAL_NAMESPACE, default "+escalation.DefaultNamespace+")")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := loadConfig(cmd)
		if err != nil {
			return err
		}
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
		return escalation.RunSlackBot(cmd.Context(), cfg)
	}
	return cmd
}

// loadConfig reads the configuration the way the worker does (file, environment, flags, in
// rising precedence) and checks what the bot cannot run without. The bot calls no model, so the
// gateway is declared fake to spare it the gateway's required keys.
func loadConfig(cmd *cobra.Command) (escalation.BotConfig, error) {
	overrides := map[string]any{"gateway.fake": true}
	for flag, key := range flagKeys {
		if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
			overrides[key] = f.Value.String()
		}
	}
	path, _ := cmd.Flags().GetString("config")
	c, err := config.Load(path, cmd.Flags(), overrides)
	if err != nil {
		return escalation.BotConfig{}, err
	}
	s := c.Escalation.Slack
	cfg := escalation.BotConfig{
		Listen: s.Listen, SigningSecret: s.SigningSecret, BotToken: s.BotToken, TeamID: s.TeamID,
		Approvers: s.Approvers, SlackAPIURL: s.APIURL,
		TemporalAddress: c.Temporal.Address, Namespace: c.Temporal.Namespace,
	}
	switch {
	case cfg.SigningSecret == "":
		return cfg, missing(keySecret, envSecret, "")
	case cfg.BotToken == "":
		return cfg, missing(keyToken, envToken, "")
	case cfg.TeamID == "":
		return cfg, missing(keyTeam, envTeam, "--team")
	case len(cfg.Approvers) == 0:
		return cfg, missing(keyApprovers, envApprovers, "--approvers")
	}
	return cfg, nil
}

// missing is the configuration error for a key the bot needs, naming how to set it.
func missing(key, env, flag string) error {
	how := "set " + env
	if flag != "" {
		how += " or " + flag
	}
	msg := "required by the Slack bot (" + how + ")"
	if key == keyApprovers {
		msg += ": nobody could answer"
	}
	return &config.Error{Key: key, Msg: msg}
}
