package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// diffCommandShown bounds the lines `starter diff` shows of one file.
const diffCommandShown = 400

func diffCmd(g *globals) *cobra.Command {
	var turn int
	cmd := &cobra.Command{
		Use:     "diff WORKFLOW_ID [--turn N]",
		Example: "  starter diff " + exampleID + "\n  starter diff " + exampleID + " --turn 4",
		Short:   "Show what a session changed in its work directory, or what one turn changed, from the snapshots its workers keep",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSnapshots(g, cmd, args[0], turn, func(ctx context.Context, _ client.Client, wid string, snaps *snapshot.Store, turn int) error {
				before, after, err := turnSnapshots(snaps, wid, turn)
				if err != nil {
					return err
				}
				what := fmt.Sprintf("session %s from its start to turn %d", wid, after.Turn)
				if turn > 0 {
					what = fmt.Sprintf("turn %d of %s", turn, wid)
					if after.Turn != turn {
						fmt.Fprintf(g.stdout, "%s changed no files\n", what)
						return nil
					}
				}
				printChanges(g.stdout, snaps, what, snapshot.Changes(before, after))
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&turn, "turn", 0, "only what this turn changed (default: the whole session)")
	return cmd
}

func undoCmd(g *globals) *cobra.Command {
	var turn int
	cmd := &cobra.Command{
		Use:     "undo WORKFLOW_ID [--turn N]",
		Example: "  starter undo " + exampleID,
		Short:   "Take back the file changes of an ended session's last turn (or turn N) in its work directory; refused when a file changed since",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSnapshots(g, cmd, args[0], turn, func(ctx context.Context, c client.Client, wid string, snaps *snapshot.Store, turn int) error {
				if _, ended, err := (session.Client{Temporal: c}).Ended(ctx, wid); err != nil {
					return err
				} else if !ended {
					return usageErr("session %s is still running: undo takes back a turn of an ended session (starter cancel %s ends it); nothing was changed", wid, wid)
				}
				in, err := startedInput(ctx, c, wid)
				if err != nil {
					return err
				}
				done, err := undoTurn(snaps, wid, in.Workdir, turn)
				if err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, done)
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&turn, "turn", 0, "the turn to take back (default: the last one whose changes are still in the work directory)")
	return cmd
}

// withSnapshots is withConfig for diff and undo: it checks --turn (0 when not given: the whole
// session, or the last turn still in the work directory), resolves the session ID as typed and
// opens the snapshot store its workers keep.
func withSnapshots(g *globals, cmd *cobra.Command, id string, turn int, f func(ctx context.Context, c client.Client, wid string, snaps *snapshot.Store, turn int) error) error {
	if !cmd.Flags().Changed("turn") {
		turn = 0
	} else if turn < 1 {
		return usageErr("--turn must be 1 or more")
	}
	return withConfig(g, cmd, func(ctx context.Context, cfg config.Config, c client.Client) error {
		if err := resolveArg(ctx, c, &id); err != nil {
			return err
		}
		return f(ctx, c, id, app.Snapshots(cfg), turn)
	})
}

// turnSnapshots are the work directory before and after turn (turn 0: the session's first
// snapshot and its last). A session without snapshots, or a turn whose snapshot was not kept, is
// refused with what to do.
func turnSnapshots(snaps *snapshot.Store, wid string, turn int) (before, after snapshot.Manifest, err error) {
	turns, err := snaps.Turns(wid)
	if err != nil {
		return before, after, err
	}
	if len(turns) == 0 {
		return before, after, &exitError{code: ExitUsage, err: fmt.Errorf("there is no snapshot of the work directory of %s in %s "+
			"(the session changed no files, started before snapshots were kept, or its workers keep their state elsewhere: --dev-state-dir)", wid, snaps.Root)}
	}
	if turn == 0 {
		before, err = snaps.Load(wid, turns[0])
		if err == nil {
			after, err = snaps.Find(wid, turns[len(turns)-1])
		}
	} else {
		after, err = snaps.Find(wid, turn)
		if err == nil {
			before, err = snaps.Find(wid, turn-1)
		}
	}
	var missing *snapshot.MissingError
	if errors.Is(err, snapshot.ErrNone) || errors.As(err, &missing) {
		return before, after, &exitError{code: ExitUsage, err: fmt.Errorf("cannot compare the work directory of %s: %w", wid, err)}
	}
	if err == nil {
		err = errors.Join(snapshot.Check(before), snapshot.Check(after))
	}
	return before, after, err
}

// undoTurn takes back turn's changes in workdir, or (turn 0) those of the last turn whose changes
// are still there, and says what it did.
func undoTurn(snaps *snapshot.Store, wid, workdir string, turn int) (string, error) {
	var after snapshot.Manifest
	var changes []snapshot.Change
	if turn > 0 {
		b, a, err := turnSnapshots(snaps, wid, turn)
		if err != nil {
			return "", err
		}
		if a.Turn != turn {
			return "", usageErr("turn %d of %s changed no files; nothing was changed", turn, wid)
		}
		after, changes = a, snapshot.Changes(b, a)
	} else {
		turns, err := snaps.Turns(wid)
		if err != nil {
			return "", err
		}
		for i := len(turns) - 1; i > 0 && changes == nil; i-- {
			b, a, err := turnSnapshots(snaps, wid, turns[i])
			if err != nil {
				return "", err
			}
			cs := snapshot.Changes(b, a)
			state, _, err := snapshot.Compare(workdir, cs)
			if err != nil {
				return "", err
			}
			if len(cs) > 0 && state != snapshot.AsBefore {
				after, changes = a, cs
			}
		}
		if changes == nil {
			return "", &exitError{code: ExitFailure, err: fmt.Errorf("nothing to undo: the work directory %s is as %s found it, as far as its snapshots tell", workdir, wid)}
		}
	}
	var conflict *snapshot.ConflictError
	if err := snaps.Revert(workdir, changes); errors.As(err, &conflict) {
		return "", &exitError{code: ExitFailure, err: fmt.Errorf("cannot undo turn %d of %s: %w, so taking it back would lose that; nothing was changed (starter diff %s --turn %d shows the turn)",
			after.Turn, wid, err, wid, after.Turn)}
	} else if err != nil {
		return "", fmt.Errorf("undoing turn %d of %s in %s: %w", after.Turn, wid, workdir, err)
	}
	var did []string
	for _, c := range changes {
		did = append(did, changeMark(c)+" "+snapshot.Printable(string(c.Path)))
	}
	return sanitize(fmt.Sprintf("took back turn %d of %s in %s: %s\n(the session's transcript still says it made them: tell the model with starter continue %s \"...\")",
		after.Turn, wid, workdir, strings.Join(firstN(did, 10), ", ")+map[bool]string{true: ", …"}[len(did) > 10], wid)), nil
}

// changeMark is A (added), D (deleted) or M (modified), as the turn made the change.
func changeMark(c snapshot.Change) string {
	switch {
	case c.Before == nil:
		return "A"
	case c.After == nil:
		return "D"
	}
	return "M"
}

// printChanges writes each changed path with its mark and, for files, its line diff. Every path
// and line came from the model: they are printed harmless.
func printChanges(w io.Writer, snaps *snapshot.Store, what string, changes []snapshot.Change) {
	if len(changes) == 0 {
		fmt.Fprintf(w, "%s: no files changed\n", what)
		return
	}
	fmt.Fprintf(w, "%s: %d changed\n", what, len(changes))
	for _, c := range changes {
		name := snapshot.Printable(string(c.Path))
		e := c.After
		if e == nil {
			e = c.Before
		}
		switch {
		case e.Mode.IsDir():
			fmt.Fprintf(w, "%s %s/\n", changeMark(c), sanitize(name))
		case e.Mode.Type() == os.ModeSymlink:
			fmt.Fprintf(w, "%s %s -> %s\n", changeMark(c), sanitize(name), sanitize(snapshot.Printable(string(e.Link))))
		default:
			fmt.Fprintf(w, "%s %s\n", changeMark(c), sanitize(name))
			if d := fileDiff(snaps, c); d != "" {
				fmt.Fprintln(w, sanitize(d))
			}
		}
	}
}

// fileDiff is the line diff of one changed file from its stored contents: its size only when it
// is too big or not text.
func fileDiff(snaps *snapshot.Store, c snapshot.Change) string {
	var text [2]string
	for i, e := range []*snapshot.Entry{c.Before, c.After} {
		if e == nil || !e.Mode.IsRegular() {
			continue
		}
		b, err := snaps.Content(*e, diffMaxBytes)
		switch {
		case errors.Is(err, snapshot.ErrTooBig):
			return fmt.Sprintf("    (%d bytes: too big to compare here)", e.Size)
		case err != nil:
			return "    (" + err.Error() + ")"
		case bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b):
			return fmt.Sprintf("    (binary, %d bytes)", e.Size)
		}
		text[i] = string(b)
	}
	if text[0] == text[1] {
		return "    (mode changed)"
	}
	return diffLinesUpTo(splitLines(text[0]), splitLines(text[1]), diffCommandShown)
}
