package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/store"
)

// continueCmd goes on from where a finished session ended, the way fork goes on from a turn of
// one: a new session whose transcript is the whole of the old one plus the next instruction, in
// the same work directory as it is now (a finished session's files are where the person wants to
// go on; fork restores an earlier turn's). The old session is left as it ended.
func continueCmd(g *globals) *cobra.Command {
	var output string
	var dev bool
	cmd := &cobra.Command{
		Use:     "continue WORKFLOW_ID \"NEXT INSTRUCTION\"",
		Example: "  starter continue " + exampleID + " \"now add a test for the empty input\"",
		Short:   "Go on from a finished session's end with a next instruction, in a new session in the same work directory",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newPrinter(output, g.stdout)
			if err != nil {
				return err
			}
			next := strings.TrimSpace(args[1])
			if next == "" {
				return usageErr("the next instruction is empty: say what the session should do next")
			}
			prog := config.Starter
			if dev {
				prog |= config.Worker
			}
			cfg, err := g.loadFor(cmd, prog, nil)
			if err != nil {
				return withFakeHint(err)
			}
			ctx := cmd.Context()
			if dev {
				cfg.Temporal.TaskQueue = app.ProcessQueue(cfg.Temporal.TaskQueue)
				stop, err := startDevWorker(ctx, g, cfg)
				if err != nil {
					return err
				}
				defer stop()
			}
			c, err := app.Dial(ctx, cfg)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := app.OpenStore(ctx, cfg)
			if err != nil {
				return err
			}
			if err := resolveArg(ctx, c, &args[0]); err != nil {
				return err
			}
			in, err := continuedInput(ctx, c, st, args[0], next)
			if err != nil {
				return err
			}
			wid := newWorkflowID("continue")
			p.info(fmt.Sprintf("continuing %s after its turn %d as %s, in %s", args[0], in.Carry.Turns, wid, in.Workdir))
			sum, err := startSession(ctx, c, cfg, sessionSpec{workflowID: wid, task: "continue: " + next, output: output, input: &in, ownWorker: dev}, p)
			if err != nil {
				return err
			}
			p.summary(sum)
			return exitFor(sum)
		},
	}
	cmd.Flags().BoolVar(&dev, "dev", false, "bring up a local dev server if none answers, and a worker in this process that serves this session alone")
	outputFlag(cmd, &output)
	return cmd
}

// continuedInput is the input of a session that goes on from the end of the finished session wid
// with the instruction next: the old input (task, settings, work directory, endpoint), carrying
// a copy of its whole transcript with next as the person's message after it.
func continuedInput(ctx context.Context, c client.Client, st store.Store, wid, next string) (contract.SessionInput, error) {
	sum, ended, err := session.Client{Temporal: c}.Ended(ctx, wid)
	if err != nil {
		return contract.SessionInput{}, err
	}
	if !ended {
		return contract.SessionInput{}, usageErr("session %s is still running: `starter say %s \"...\"` gives it a message instead", wid, wid)
	}
	if sum.Transcript == nil {
		return contract.SessionInput{}, fmt.Errorf("session %s ended before its result carried its transcript, so it cannot be continued", wid)
	}
	in, err := startedInput(ctx, c, wid)
	if err != nil {
		return contract.SessionInput{}, err
	}
	msgs, err := loadTranscript(ctx, st, wid, *sum.Transcript)
	if err != nil {
		return contract.SessionInput{}, err
	}
	msgs, turns := continuedTranscript(msgs, next)
	head, err := st.Append(ctx, "", msgs)
	if err != nil {
		return contract.SessionInput{}, fmt.Errorf("storing the continued transcript: %w", err)
	}
	in.Carry = &contract.SessionState{TranscriptRef: contract.TranscriptRef{Head: head}, Turns: turns, StartedAt: time.Now()}
	if in.Source != nil {
		// The continued session works on in the files the ended one left.
		src := *in.Source
		src.Workspace = src.WorkspaceOf(wid)
		in.Source = &src
	}
	return in, nil
}

// continuedTranscript is a finished session's messages with the next instruction after them, as
// the person's, and the number of turns they hold (model replies, as fork counts them).
func continuedTranscript(msgs []contract.Message, next string) ([]contract.Message, int) {
	turns := 0
	for _, m := range msgs {
		if m.Role == contract.RoleAssistant && m.Note == "" {
			turns++
		}
	}
	out := append(append([]contract.Message(nil), msgs...), contract.Message{Role: contract.RoleUser, Content: contract.PersonPrefix + next})
	return out, turns
}
