// Command slackbot serves Keel's Slack app over HTTP: escalation buttons, the edit modal and the
// /keel slash command. Secrets come from the environment only, so they never show in a process
// listing; everything else can be set by flag or environment.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/escalation"
)

// Environment keys.
const (
	envSecret    = "KEEL_SLACK_SIGNING_SECRET"
	envToken     = "KEEL_SLACK_BOT_TOKEN"
	envTeam      = "KEEL_SLACK_TEAM_ID"
	envApprovers = "KEEL_SLACK_APPROVERS"
	envAPIURL    = "KEEL_SLACK_API_URL"
	envListen    = "KEEL_SLACK_LISTEN"
	envTemporal  = "KEEL_TEMPORAL_ADDRESS"
	envTemporal2 = "TEMPORAL_ADDRESS"
	envNamespace = "KEEL_TEMPORAL_NAMESPACE"
	envNS2       = "TEMPORAL_NAMESPACE"
)

// exitConfig is the exit code of a configuration mistake.
const exitConfig = 2

// configError is a configuration mistake: one line naming the key, exit code 2.
type configError struct{ msg string }

func (e configError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stderr))
}

// run executes the command and maps its error to an exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cmd := newCommand(getenv, stderr)
	cmd.SetArgs(args)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "slackbot:", err)
	var ce configError
	if errors.As(err, &ce) {
		return exitConfig
	}
	return 1
}

// newCommand builds the cobra command; RunE loads the configuration and hands it to
// escalation.RunSlackBot.
func newCommand(getenv func(string) string, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "slackbot",
		Short:         "Serve Keel's Slack app: escalation answers and the /keel command",
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	f := cmd.Flags()
	f.String("listen", "", "listen address (env "+envListen+", default "+escalation.DefaultSlackListen+")")
	f.String("team", "", "Slack team ID whose requests are accepted (env "+envTeam+")")
	f.String("approvers", "", "comma-separated Slack user IDs allowed to answer (env "+envApprovers+")")
	f.String("slack-api-url", "", "Slack Web API base URL override (env "+envAPIURL+")")
	f.String("temporal-address", "", "Temporal frontend host:port (env "+envTemporal+" or "+envTemporal2+", default "+escalation.DefaultTemporalAddress+")")
	f.String("namespace", "", "Temporal namespace (env "+envNamespace+" or "+envNS2+", default "+escalation.DefaultNamespace+")")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := loadConfig(cmd, getenv)
		if err != nil {
			return err
		}
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
		return escalation.RunSlackBot(cmd.Context(), cfg)
	}
	return cmd
}

// loadConfig reads flags and environment: an explicit flag wins over the environment, which wins
// over the default. Missing required keys are configErrors naming the key.
func loadConfig(cmd *cobra.Command, getenv func(string) string) (escalation.BotConfig, error) {
	cfg := escalation.BotConfig{
		SigningSecret:   getenv(envSecret),
		BotToken:        getenv(envToken),
		Listen:          pick(cmd, getenv, "listen", escalation.DefaultSlackListen, envListen),
		TeamID:          pick(cmd, getenv, "team", "", envTeam),
		SlackAPIURL:     pick(cmd, getenv, "slack-api-url", "", envAPIURL),
		TemporalAddress: pick(cmd, getenv, "temporal-address", escalation.DefaultTemporalAddress, envTemporal, envTemporal2),
		Namespace:       pick(cmd, getenv, "namespace", escalation.DefaultNamespace, envNamespace, envNS2),
	}
	for _, a := range strings.Split(pick(cmd, getenv, "approvers", "", envApprovers), ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Approvers = append(cfg.Approvers, a)
		}
	}
	switch {
	case cfg.SigningSecret == "":
		return cfg, configError{envSecret + " is not set"}
	case cfg.BotToken == "":
		return cfg, configError{envToken + " is not set"}
	case cfg.TeamID == "":
		return cfg, configError{envTeam + " (or --team) is not set"}
	case len(cfg.Approvers) == 0:
		return cfg, configError{envApprovers + " (or --approvers) is not set: nobody could answer"}
	}
	return cfg, nil
}

// pick returns the flag's value if it was given, else the first non-empty environment key, else def.
func pick(cmd *cobra.Command, getenv func(string) string, flag, def string, keys ...string) string {
	if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
		return f.Value.String()
	}
	for _, k := range keys {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return def
}
