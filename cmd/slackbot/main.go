// Command slackbot serves Keel's Slack app over HTTP: escalation buttons, the edit modal and the
// /keel slash command. It reads the same configuration as the worker (keel.yaml, KEEL_* variables,
// the escalation.slack.* and temporal.* keys), so one set of KEEL_ESCALATION_SLACK_* variables
// configures both. Secrets have no flags, so they never show in a process listing.
package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/logs"
	"github.com/keelrun/keel/internal/program"
	"github.com/keelrun/keel/internal/slackbot"
)

func main() { program.Main(newCommand) }

// run executes the command as main does, for tests: its exit code, its errors on stderr.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	return program.Run(ctx, newCommand(stderr), args, stderr)
}

// newCommand builds the cobra command; RunE loads the configuration and hands it to
// slackbot.Run.
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
	config.AddFlags(f, config.EscalationSlackListen, config.EscalationSlackTeamID, config.EscalationSlackApprovers,
		config.EscalationSlackAPIURL, config.TemporalAddress, config.TemporalNamespace)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := loadConfig(cmd)
		if err != nil {
			return err
		}
		cfg.Logger = logs.Operator(stderr, cfg.LogLevel)
		cfg.Logger.Info("slack bot starting", "temporal", cfg.TemporalAddress, "namespace", cfg.Namespace,
			"team", cfg.TeamID, "approvers", len(cfg.Approvers))
		return slackbot.Run(cmd.Context(), cfg)
	}
	return cmd
}

// loadConfig reads the configuration the way the worker does (file, environment, flags, in
// rising precedence) as the Slack bot's: the key table says what the bot cannot run without
// (secret, token, team, approvers), and the bot, which calls no model, needs no provider's key.
func loadConfig(cmd *cobra.Command) (slackbot.RunConfig, error) {
	path, _ := cmd.Flags().GetString("config")
	c, err := config.LoadFor(config.SlackBot, path, cmd.Flags(), nil)
	if err != nil {
		return slackbot.RunConfig{}, err
	}
	s := c.Escalation.Slack
	cfg := slackbot.RunConfig{
		Listen: s.Listen, SigningSecret: s.SigningSecret, BotToken: s.BotToken, TeamID: s.TeamID,
		Approvers: s.Approvers, SlackAPIURL: s.APIURL,
		TemporalAddress: c.Temporal.Address, Namespace: c.Temporal.Namespace,
		LogLevel: c.LogLevel,
		Dial:     func(ctx context.Context) (client.Client, error) { return connect.Dial(ctx, c, sdkLogs(c)) },
	}
	return cfg, nil
}

// sdkLogs gives the bot's Temporal client the worker's logger (internal/logs): the SDK's warnings
// and errors, a server that cannot be reached among them, reach the bot's standard error in the
// same structured lines as its own, at the level the key log sets.
func sdkLogs(c config.Config) func(*client.Options) {
	return func(o *client.Options) { o.Logger = logs.SDK(c.LogLevel) }
}
