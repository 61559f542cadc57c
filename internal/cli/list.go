package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
)

// listTaskWidth is how much of a session's task a listing row shows.
const listTaskWidth = 48

func listCmd(g *globals) *cobra.Command {
	var output, status string
	var limit int
	cmd := &cobra.Command{
		Use:     "list [--status STATUS] [--limit N] [-o jsonl]",
		Short:   "List running and recent sessions: ID, status, task, turns, tokens, start, and whom a session waits on",
		Example: "  starter list\n  starter list --status waiting\n  starter list --status failed --limit 5 -o jsonl",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && !slices.Contains(session.ListStatuses, status) {
				return usageErr("--status %q is not one of %s", status, strings.Join(session.ListStatuses, ", "))
			}
			if limit < 1 {
				return usageErr("--limit must be 1 or more")
			}
			if output != "text" && output != "jsonl" {
				return usageErr("--output %q is not one of text, jsonl", output)
			}
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				rows, err := listSessions(ctx, session.Client{Temporal: c}, status, limit)
				if err != nil {
					return err
				}
				if output == "jsonl" {
					return printRowsJSONL(g.stdout, rows)
				}
				printRows(g.stdout, rows, time.Now())
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only sessions with this status: "+strings.Join(session.ListStatuses, ", "))
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many sessions, running ones first, then the most recently ended")
	outputFlag(cmd, &output)
	return cmd
}

// listSessions lists the sessions and says what each waiting one waits on a person for, one
// status query each.
func listSessions(ctx context.Context, c session.Client, status string, limit int) ([]session.Row, error) {
	rows, err := c.List(ctx, status, limit)
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		if r.Status != contract.StatusWaiting && r.Status != contract.StatusWaitingReset {
			continue
		}
		if st, err := c.Status(ctx, r.WorkflowID); err == nil {
			rows[i].Waiting = session.WaitingOn(st)
			if st.Wait != nil {
				rows[i].Waiting = st.Wait.Text(time.Now(), time.Local)
			}
		}
	}
	return rows, nil
}

// printRowsJSONL prints one JSON object per session.
func printRowsJSONL(w io.Writer, rows []session.Row) error {
	enc := json.NewEncoder(jsonlWriter{w})
	for _, r := range rows {
		r.Started = r.Started.UTC()
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("writing the listing: %w", err)
		}
	}
	return nil
}

// printRows prints the sessions as a table for people; "-" stands for nobody waited on.
func printRows(w io.Writer, rows []session.Row, now time.Time) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no sessions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tTASK\tTURNS\tTOKENS\tSTARTED\tWAITING ON")
	rows, depths := treeOrder(rows)
	for i, r := range rows {
		waiting := r.Waiting
		if waiting == "" {
			waiting = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", treeLabel(r.WorkflowID, depths[i]), r.Status, sanitize(clip(r.Task, listTaskWidth)), r.Turns,
			groupDigits(r.Tokens), startedAt(r.Started, now), waiting)
	}
	_ = tw.Flush()
}

// startedAt is a start time as a listing shows it: the clock time today, the date otherwise, in
// the local time zone.
func startedAt(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

// groupDigits writes a count with thousands separators: 12,345.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
