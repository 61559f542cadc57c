// Command githubbot takes GitHub's webhook deliveries for Keel: `/keel` commands in pull request
// comments become answers, approvals and messages for the sessions of that pull request (see
// docs/github.md), and pull_request events go to the jobs they start. It reads the same
// configuration as the worker (keel.yaml, KEEL_* variables, the escalation.github.* and
// temporal.* keys). Secrets have no flags, so they never show in a process listing.
package main

import (
	"context"
	"io"

	"github.com/google/go-github/v84/github"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/githubbot"
	"github.com/keelrun/keel/internal/githubjobs"
	"github.com/keelrun/keel/internal/logs"
	"github.com/keelrun/keel/internal/program"
	"github.com/keelrun/keel/internal/session"
)

func main() { program.Main(newCommand) }

// run executes the command as main does, for tests: its exit code, its errors on stderr.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	return program.Run(ctx, newCommand(stderr), args, stderr)
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
		if cfg.PullRequests, err = jobs(c, stderr); err != nil {
			return err
		}
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
		Listen: g.Listen, Secret: g.WebhookSecret, Token: g.Token, BaseURL: g.BaseURL, Login: g.Login, Teams: g.Teams,
		Dial: func(ctx context.Context) (client.Client, error) {
			return connect.Dial(ctx, c, func(o *client.Options) { o.Logger = logs.SDK(c.LogLevel) })
		},
	}
}

// jobs builds the handler of pull_request events from the rule file escalation.github.jobs, or
// nil without one; the rules are read at once, so a bad file stops the bot before it dials
// anything. The jobs' sessions start from the bot's configuration (session.Defaults) on the
// workers' task queue; Resume picks up the results of jobs that ended while no bot ran.
func jobs(c config.Config, stderr io.Writer) (func(context.Context, client.Client, *github.Client) (githubbot.PullRequestHandler, func(), error), error) {
	path := c.Escalation.GitHub.Jobs
	if path == "" {
		return nil, nil
	}
	rules, err := githubjobs.LoadRules(path)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, tc client.Client, gh *github.Client) (githubbot.PullRequestHandler, func(), error) {
		j, err := githubjobs.New(ctx, githubjobs.Config{Rules: rules, Temporal: tc, GitHub: gh, TaskQueue: c.Temporal.TaskQueue,
			Session: session.Defaults(c), Login: c.Escalation.GitHub.Login, Logger: logs.Operator(stderr, c.LogLevel)})
		if err != nil {
			return nil, nil, err
		}
		if err := j.Resume(ctx); err != nil {
			return nil, nil, err
		}
		return j, j.Wait, nil
	}, nil
}
