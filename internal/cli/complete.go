package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/session"
)

// completionWait bounds how long a Tab waits for the server's list of sessions: a shell that
// hangs on Tab is worse than one that offers nothing.
const completionWait = 2 * time.Second

// completionRows is how many sessions, open ones first, a Tab offers.
const completionRows = 100

// completeSessionIDs makes every command whose first argument is a session offer session IDs
// at Tab (`starter completion bash|zsh|fish` prints the script), not the file names a shell
// offers by default.
func completeSessionIDs(g *globals, root *cobra.Command) {
	for _, c := range root.Commands() {
		if args := strings.Fields(c.Use); len(args) > 1 && args[1] == "WORKFLOW_ID" {
			c.ValidArgsFunction = sessionCompletions(g)
		}
	}
}

// sessionCompletions lists the open and recent sessions whose ID starts with what was typed, each
// with its status and task as the description; nothing (and no file names) for later arguments
// or when no server answers in time.
func sessionCompletions(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		none := cobra.ShellCompDirectiveNoFileComp
		if len(args) > 0 {
			return nil, none
		}
		cfg, err := g.loadFor(cmd, config.Starter, nil)
		if err != nil {
			return nil, none
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, completionWait)
		defer cancel()
		c, err := app.Dial(ctx, cfg)
		if err != nil {
			return nil, none
		}
		defer c.Close()
		rows, err := session.Client{Temporal: c}.List(ctx, "", completionRows)
		if err != nil {
			return nil, none
		}
		var out []cobra.Completion
		for _, r := range rows {
			if strings.HasPrefix(r.WorkflowID, typed) {
				// The description is one line of harmless text: a task may hold anything.
				desc := strings.Join(strings.Fields(sanitize(r.Status+" "+r.Task)), " ")
				out = append(out, cobra.CompletionWithDesc(r.WorkflowID, clipRunes(desc, 60)))
			}
		}
		return out, none
	}
}
