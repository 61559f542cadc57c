package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/snapshot"
	"github.com/keelrun/keel/internal/workspace"
)

func watchCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "watch WORKFLOW_ID",
		Example: "  starter watch " + exampleID,
		Short:   "Re-attach to a session from any terminal: the transcript so far, then live events; Esc, Ctrl+C or q detaches, x cancels",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newPrinter(output, g.stdout)
			if err != nil {
				return err
			}
			return withStore(g, cmd, func(ctx context.Context, cfg config.Config, c client.Client, st store.Store) error {
				if err := resolveArg(ctx, c, &args[0]); err != nil {
					return err
				}
				wid := args[0]
				watcher := session.NewWatcher()
				nameSession(p, wid)
				showPrices(p, cfg)
				sc := session.Client{Temporal: c}
				if sum, ended, err := sc.Ended(ctx, wid); err != nil {
					return err
				} else if ended {
					return showEnded(ctx, st, sum, p, app.Snapshots(cfg))
				}
				tr, err := readTranscript(ctx, c, st, wid)
				if err != nil {
					return err
				}
				if in, err := startedInput(ctx, c, wid); err == nil {
					showWorkdir(p, in.Workdir)
					showReplayDiffs(p, tr, app.Snapshots(cfg), wid, in.Workdir)
				}
				// The session's events so far go where they happened in the transcript; the
				// follower then prints only newer ones.
				var evs []contract.Event
				seen := 0
				qctx, cancelQuery := context.WithTimeout(ctx, 5*time.Second)
				if status, err := sc.LiveStatus(qctx, wid); err == nil {
					evs = status.Events
					for _, e := range evs {
						seen = max(seen, e.Seq)
					}
				}
				cancelQuery()
				for _, e := range interleave(tr, evs) {
					p.event(e)
				}
				if err := sc.Watch(ctx, wid, contract.Watch{Watcher: watcher, Lease: jsondur.Duration(contract.WatchLease)}); err != nil {
					p.info("the session is not running; its transcript is above")
				}
				defer sc.KeepWatching(ctx, wid, watcher, false)()
				// What ended before now is in the transcript above; the source goes on from the
				// turn in flight.
				source, closeSource, err := followLive(ctx, c, cfg, wid, true)
				if err != nil {
					return err
				}
				defer closeSource()
				f := &follower{c: sc, workflowID: wid, p: p, source: source, interactive: interactive(p), attached: true, seen: seen}
				if d, err := c.DescribeWorkflow(ctx, wid, ""); err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStartTime() != nil {
					f.started = d.RawResponse.GetWorkflowExecutionInfo().GetStartTime().AsTime()
				}
				sum, err := f.follow(ctx, sc.Run(ctx, wid))
				if errors.Is(err, errDetached) {
					return nil
				}
				if err != nil {
					return err
				}
				p.summary(sum)
				return exitFor(sum)
			})
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func forkCmd(g *globals) *cobra.Command {
	var output, workdir string
	var turn int
	var edits []string
	cmd := &cobra.Command{
		Use:     "fork WORKFLOW_ID --turn N [--edit CALL_ID=TEXT] [--workdir DIR]",
		Example: "  starter fork " + exampleID + " --turn 3\n  starter fork " + exampleID + " --turn 2 --edit call_4=\"the file is calc.go\"",
		Short:   "Start a new session from the first N turns of another and its files as they were then, re-running none of their tools",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newPrinter(output, g.stdout)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("turn") {
				return usageErr("--turn N is required: the fork keeps the first N turns (0 keeps only the task)")
			}
			if turn < 0 {
				return usageErr("--turn must be 0 or more")
			}
			return withStore(g, cmd, func(ctx context.Context, cfg config.Config, c client.Client, st store.Store) error {
				if err := resolveArg(ctx, c, &args[0]); err != nil {
					return err
				}
				in, err := startedInput(ctx, c, args[0])
				if err != nil {
					return err
				}
				msgs, err := readTranscript(ctx, c, st, args[0])
				if err != nil {
					return err
				}
				prefix, err := forkPrefix(msgs, turn, edits)
				if err != nil {
					return &exitError{code: ExitUsage, err: err}
				}
				head, err := st.Append(ctx, "", prefix)
				if err != nil {
					return err
				}
				in.Carry = &contract.SessionState{TranscriptRef: contract.TranscriptRef{Head: head}, Turns: turn, StartedAt: time.Now()}
				wid := newWorkflowID("fork")
				nameSession(p, wid)
				snaps := app.Snapshots(cfg)
				recorded := false
				if src := in.Source; src != nil {
					if recorded, err = forkSource(ctx, st, snaps, &in, args[0], turn); err != nil {
						return err
					}
					if !recorded {
						// Recorded before workspaces were kept in the store: the fork restores this
						// machine's snapshot, next to the workspace, like any other fork.
						in.Workdir = (&workspace.Manager{Root: cfg.Workspaces.Root}).Dir(src.WorkspaceOf(args[0]))
						in.Source = nil
					}
				}
				if recorded && workdir != "" {
					return usageErr("--workdir does not apply to a session on a repository: the worker that runs the fork makes its workspace")
				}
				if recorded {
					p.info(fmt.Sprintf("forked %s at turn %d as %s; the worker that runs it restores its workspace as recorded after turn %d", args[0], turn, wid, turn))
				} else {
					var note string
					if in.Workdir, note, err = forkWorkdir(snaps, args[0], turn, in.Workdir, workdir, wid); err != nil {
						return err
					}
					p.info(fmt.Sprintf("forked %s at turn %d as %s; work directory %s, as it was after turn %d%s", args[0], turn, wid, in.Workdir, turn, note))
				}
				sum, err := startSession(ctx, c, cfg, sessionSpec{workflowID: wid, task: "fork: " + in.Task, output: output, input: &in}, p)
				if err != nil {
					return err
				}
				p.summary(sum)
				return exitFor(sum)
			})
		},
	}
	cmd.Flags().IntVar(&turn, "turn", 0, "keep the transcript up to the end of this turn (required)")
	cmd.Flags().StringVar(&workdir, "workdir", "", "the fork's work directory, absent or empty, filled with the files as they were after turn N (default: one next to the original's)")
	cmd.Flags().StringArrayVar(&edits, "edit", nil, "replace the result of one tool call in the copy: CALL_ID=TEXT")
	outputFlag(cmd, &output)
	return cmd
}

// withStore is withClient plus the transcript store the workers write to.
func withStore(g *globals, cmd *cobra.Command, f func(ctx context.Context, cfg config.Config, c client.Client, st store.Store) error) error {
	return withConfig(g, cmd, func(ctx context.Context, cfg config.Config, c client.Client) error {
		st, err := app.OpenStore(ctx, cfg)
		if err != nil {
			return err
		}
		return f(ctx, cfg, c, st)
	})
}

// showEnded prints an ended session from its history and the store: its transcript, its session
// events and its summary. No worker needs to run.
func showEnded(ctx context.Context, st store.Store, sum contract.Summary, p printer, snaps *snapshot.Store) error {
	if sum.Transcript == nil {
		return fmt.Errorf("session %s ended before its result carried its transcript; run a worker and watch it again", sum.WorkflowID)
	}
	msgs, err := loadTranscript(ctx, st, sum.WorkflowID, *sum.Transcript)
	if err != nil {
		return err
	}
	showReplayDiffs(p, msgs, snaps, sum.WorkflowID, "")
	for _, e := range interleave(msgs, sum.Events) {
		p.event(e)
	}
	p.summary(sum)
	return exitFor(sum)
}

// readTranscript is a session's whole transcript: what the store holds, then what is pending. An
// ended session's comes from its result, a running one's from a query.
func readTranscript(ctx context.Context, c client.Client, st store.Store, wid string) ([]contract.Message, error) {
	sc := session.Client{Temporal: c}
	if sum, ended, err := sc.Ended(ctx, wid); err == nil && ended && sum.Transcript != nil {
		return loadTranscript(ctx, st, wid, *sum.Transcript)
	}
	tr, err := sc.Transcript(ctx, wid)
	if err != nil {
		return nil, err
	}
	return loadTranscript(ctx, st, wid, tr)
}

// loadTranscript reads a transcript's stored messages and appends the pending ones.
func loadTranscript(ctx context.Context, st store.Store, wid string, tr contract.Transcript) ([]contract.Message, error) {
	msgs, err := st.Load(ctx, tr.Head)
	if err != nil {
		return nil, fmt.Errorf("loading the transcript of %s from the store (is the starter using the workers' store?): %w", wid, err)
	}
	return append(msgs, tr.Pending...), nil
}

// forkPrefix keeps the messages before the (turn+1)-th model reply and applies the edits.
func forkPrefix(msgs []contract.Message, turn int, edits []string) ([]contract.Message, error) {
	replies := 0
	cut := len(msgs)
	for i, m := range msgs {
		if m.Role == contract.RoleAssistant && m.Note == "" {
			replies++
			if replies == turn+1 {
				cut = i
				break
			}
		}
	}
	if replies < turn {
		return nil, fmt.Errorf("--turn %d: the session has only %d turns", turn, replies)
	}
	prefix := append([]contract.Message(nil), msgs[:cut]...)
	for _, e := range edits {
		id, text, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("--edit %q: want CALL_ID=TEXT", e)
		}
		found := false
		for i := range prefix {
			if prefix[i].Role == contract.RoleTool && prefix[i].ToolCallID == id {
				prefix[i].Content, prefix[i].IsError, found = text, false, true
			}
		}
		if !found {
			return nil, fmt.Errorf("--edit: no tool result for call %q in the first %d turns", id, turn)
		}
	}
	return prefix, nil
}

// startedInput reads the input a session was started with from its history.
func startedInput(ctx context.Context, c client.Client, wid string) (contract.SessionInput, error) {
	var in contract.SessionInput
	it := c.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return in, fmt.Errorf("session %s has no history", wid)
	}
	ev, err := it.Next()
	if err != nil {
		return in, fmt.Errorf("reading the history of %s: %w", wid, err)
	}
	a := ev.GetWorkflowExecutionStartedEventAttributes()
	if a == nil {
		return in, fmt.Errorf("session %s: the first event is not its start", wid)
	}
	if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &in); err != nil {
		return in, fmt.Errorf("decoding the input of %s: %w", wid, err)
	}
	return in, nil
}

// messageEvent shows one transcript message as an event.
func messageEvent(m contract.Message) contract.Event {
	e := contract.Event{Event: contract.EventMessage, Text: m.Content, Tool: m.Name, CallID: m.ToolCallID, IsError: m.IsError}
	if len(m.ToolCalls) > 0 {
		var calls []string
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.Name+" "+tc.Arguments)
		}
		e.Arguments = strings.Join(calls, "; ")
	}
	e.Class = m.Role
	return e
}

func exitFor(sum contract.Summary) error {
	if code := exitCode(sum.Status); code != ExitOK {
		return &exitError{code: code}
	}
	return nil
}

// forkSource points the fork of a session that works in a workspace made from git at the
// original's workspace as recorded in the store after turn, which any worker restores (Source.From).
// recorded is false when the store has nothing of the session but this machine's snapshots do (a
// session recorded before workspaces were kept in the store): the caller then forks from them. It
// refuses a turn whose record a size limit or a prune emptied, and a continued session with no
// record of its own by then (its files then were its predecessor's: fork that one).
func forkSource(ctx context.Context, st store.Store, snaps *snapshot.Store, in *contract.SessionInput, session string, turn int) (recorded bool, err error) {
	src := *in.Source
	rec, err := st.RecordAt(ctx, session, turn)
	switch {
	case err == nil && rec.Missing != "":
		return false, &exitError{code: ExitUsage, err: fmt.Errorf("cannot fork %s at turn %d: %s; nothing was started", session, turn, rec.Missing)}
	case err == nil:
		src.Commit, src.Ref = rec.Commit, ""
	case !errors.Is(err, store.ErrNotFound):
		return false, fmt.Errorf("reading the recorded workspace of %s: %w", session, err)
	case hasSnapshot(snaps, session, turn):
		return false, nil
	case src.Workspace != "" && src.Workspace != session:
		return false, &exitError{code: ExitUsage, err: fmt.Errorf("cannot fork %s at turn %d: it works in the workspace of %s and recorded none of its own by then; "+
			"fork %s, or a later turn; nothing was started", session, turn, src.Workspace, src.Workspace)}
	}
	// No record by then means no tool had written yet: the commit's checkout is the state.
	src.Workspace, src.From = "", &contract.WorkspaceAt{Session: session, Turn: turn}
	in.Source = &src
	return true, nil
}

// hasSnapshot says whether this machine keeps a snapshot of the session's files after turn.
func hasSnapshot(snaps *snapshot.Store, session string, turn int) bool {
	_, err := snaps.Find(session, turn)
	return err == nil
}

// forkWorkdir gives a fork a work directory of its own, as it was after turn: the snapshot the
// workers kept of the original session's work directory after that turn, restored into the
// directory named with --workdir (absent or empty) or into a new one next to the original's. It
// refuses when no snapshot covers the turn (a session started before snapshots were kept, one
// whose workers keep their state elsewhere, or a turn whose snapshot was pruned or over a size
// limit): copying the directory as it is now would show the model other files than its transcript
// says, and whatever the model left there (links to host files, named pipes). The restored
// directory becomes the fork's own first snapshot, so a fork of the fork works too. note names
// the files the snapshot skipped; the fork does not have them.
func forkWorkdir(snaps *snapshot.Store, session string, turn int, original, given, wid string) (dir, note string, err error) {
	m, err := snaps.Find(session, turn)
	if errors.Is(err, snapshot.ErrNone) {
		return "", "", &exitError{code: ExitUsage, err: fmt.Errorf("cannot fork %s at turn %d: there is no snapshot of its work directory after that turn "+
			"in %s (the session started before snapshots were kept, or its workers keep their state elsewhere); nothing was started", session, turn, snaps.Root)}
	}
	var missing *snapshot.MissingError
	if errors.As(err, &missing) {
		return "", "", &exitError{code: ExitUsage, err: fmt.Errorf("cannot fork %s at turn %d: %w; nothing was started", session, turn, err)}
	}
	if err != nil {
		return "", "", err
	}
	dst := given
	if dst == "" {
		dst = strings.TrimRight(original, string(filepath.Separator)) + "-" + wid
	}
	if names, err := os.ReadDir(dst); err == nil && len(names) > 0 {
		return "", "", usageErr("the fork's work directory %s is not empty; name an absent or empty one with --workdir DIR", dst)
	}
	if err := snaps.Restore(m, dst); err != nil {
		return "", "", fmt.Errorf("restoring the work directory of %s after turn %d into %s: %w", session, turn, dst, err)
	}
	if len(m.Skipped) > 0 {
		var names []string
		for _, n := range firstN(m.Skipped, 3) {
			names = append(names, snapshot.Printable(string(n)))
		}
		why := fmt.Sprintf("over %d MiB, not a file, folder or link, or unreadable", snapshot.MaxFileSize>>20)
		if m.Limit != "" {
			why += "; or left out because " + m.Limit
		}
		note = fmt.Sprintf("; %d file(s) were not in the snapshot (%s) and are not in the fork (%s)", len(m.Skipped)+m.SkippedMore, why, strings.Join(names, ", "))
	}
	if _, err := snaps.Take(wid, turn, dst); err != nil {
		return "", "", fmt.Errorf("recording the fork's work directory: %w", err)
	}
	return dst, note, nil
}

// firstN is at most n of list.
func firstN[T any](list []T, n int) []T {
	if len(list) > n {
		return list[:n]
	}
	return list
}
