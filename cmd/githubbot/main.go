// Command githubbot takes GitHub's webhook deliveries for Keel: `/keel` commands in pull request
// comments become answers, approvals and messages for the sessions of that pull request (see
// docs/github.md), and pull_request events go to the jobs they start. It reads the same
// configuration as the worker (keel.yaml, KEEL_* variables, the escalation.github.* and
// temporal.* keys). Secrets have no flags, so they never show in a process listing.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/githubbot"
	"github.com/keelrun/keel/internal/logs"
)

// exitConfig is the exit code of a configuration mistake.
const exitConfig = 2

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
	fmt.Fprintln(stderr, "githubbot:", err)
	if config.IsError(err) {
		return exitConfig
	}
	return 1
}

// newCommand builds the cobra command; RunE loads the configuration and hands it to
// githubbot.Run.
func newCommand(stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "githubbot",
		Short:         "Take GitHub's webhook deliveries: /keel commands in pull request comments, pull request events",
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	f := cmd.Flags()
	f.String("config", "", config.FileHelp)
	config.AddFlags(f, config.EscalationGitHubListen, config.EscalationGitHubTeams, config.TemporalAddress, config.TemporalNamespace)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		path, _ := cmd.Flags().GetString("config")
		c, err := config.LoadFor(config.GitHubBot, path, cmd.Flags(), nil)
		if err != nil {
			return err
		}
		cfg := runConfig(c)
		cfg.Logger = logs.Operator(stderr, c.LogLevel)
		cfg.Logger.Info("github bot starting", "temporal", c.Temporal.Address, "namespace", c.Temporal.Namespace,
			"github", c.Escalation.GitHub.BaseURL, "teams", len(c.Escalation.GitHub.Teams))
		return githubbot.Run(cmd.Context(), cfg)
	}
	return cmd
}

// runConfig is the bot's part of the configuration; its Temporal client logs through the
// worker's logger (internal/logs) at the level the key log sets.
func runConfig(c config.Config) githubbot.RunConfig {
	g := c.Escalation.GitHub
	return githubbot.RunConfig{
		Listen: g.Listen, Secret: g.WebhookSecret, Token: g.Token, BaseURL: g.BaseURL, Teams: g.Teams,
		Dial: func(ctx context.Context) (client.Client, error) {
			return connect.Dial(ctx, c, func(o *client.Options) { o.Logger = logs.SDK(c.LogLevel) })
		},
	}
}
