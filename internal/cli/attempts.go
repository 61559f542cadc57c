package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
)

func attemptsCmd(g *globals) *cobra.Command {
	var job contract.JobKey
	cmd := &cobra.Command{
		Use:   "attempts [WORKFLOW_ID | --repo R --commit C --path P --prompt-version V --model M]",
		Short: "Show a job's attempt history (each model and tool call, attempts, outcome, class), read from Temporal's history",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var wid string
			switch {
			case len(args) == 1:
				wid = args[0]
			case job.Repository != "":
				wid = job.WorkflowID()
			default:
				return usageErr("name a workflow ID or a job key (--repo, --commit, --path, --prompt-version, --model)")
			}
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				return printAttempts(ctx, c, wid, g.stdout)
			})
		},
	}
	cmd.Flags().StringVar(&job.Repository, "repo", "", "job key: repository")
	cmd.Flags().StringVar(&job.Commit, "commit", "", "job key: commit")
	cmd.Flags().StringVar(&job.Path, "path", "", "job key: path")
	cmd.Flags().StringVar(&job.PromptVersion, "prompt-version", "v1", "job key: prompt version")
	cmd.Flags().StringVar(&job.Model, "model", "gpt-4o-mini", "job key: model alias")
	return cmd
}

// attemptRow is one activity of a session, as its history records it.
type attemptRow struct {
	at       time.Time
	turn     string
	activity string
	attempts int32
	outcome  string
	class    string
}

// printAttempts walks the session's runs and its turns' histories, the ledger of every attempt.
func printAttempts(ctx context.Context, c client.Client, wid string, out io.Writer) error {
	turns, err := childIDs(ctx, c, wid)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tTURN\tACTIVITY\tATTEMPTS\tOUTCOME\tCLASS")
	for _, turn := range turns {
		rows, err := activityRows(ctx, c, turn)
		if err != nil {
			return err
		}
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.at.Format(time.TimeOnly), r.turn, r.activity, r.attempts, r.outcome, r.class)
		}
	}
	return tw.Flush()
}

// childIDs lists the turn workflows a session started, over all its runs.
func childIDs(ctx context.Context, c client.Client, wid string) ([]string, error) {
	var ids []string
	it := c.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", wid, err)
		}
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			ids = append(ids, a.GetWorkflowId())
		}
	}
	return ids, nil
}

// activityRows reads one turn's activities: scheduled, the last attempt started, how it ended.
func activityRows(ctx context.Context, c client.Client, turnID string) ([]attemptRow, error) {
	byID := map[int64]*attemptRow{}
	var order []*attemptRow
	turn := turnID[strings.LastIndex(turnID, "/")+1:]
	it := c.GetWorkflowHistory(ctx, turnID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", turnID, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			r := &attemptRow{at: ev.GetEventTime().AsTime(), turn: turn, activity: activityLabel(ev, a.GetActivityType().GetName()), outcome: "pending"}
			byID[ev.GetEventId()] = r
			order = append(order, r)
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			if r := byID[a.GetScheduledEventId()]; r != nil {
				r.attempts = a.GetAttempt()
				if f := a.GetLastFailure(); f != nil {
					r.class = f.GetApplicationFailureInfo().GetType()
				}
			}
		}
		settle(ev, byID)
	}
	rows := make([]attemptRow, len(order))
	for i, r := range order {
		rows[i] = *r
	}
	return rows, nil
}

// settle records how an activity ended.
func settle(ev *historypb.HistoryEvent, byID map[int64]*attemptRow) {
	var sched int64
	outcome, class := "", ""
	switch {
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		sched, outcome = ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId(), "completed"
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		a := ev.GetActivityTaskFailedEventAttributes()
		sched, outcome = a.GetScheduledEventId(), "failed: "+clip(a.GetFailure().GetMessage(), 80)
		class = a.GetFailure().GetApplicationFailureInfo().GetType()
	case ev.GetActivityTaskTimedOutEventAttributes() != nil:
		sched, outcome = ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId(), "timed out (outcome unknown)"
	case ev.GetActivityTaskCanceledEventAttributes() != nil:
		sched, outcome = ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId(), "cancelled"
	default:
		return
	}
	if r := byID[sched]; r != nil {
		r.outcome = outcome
		if class != "" {
			r.class = class
		}
	}
}

func activityLabel(ev *historypb.HistoryEvent, name string) string {
	if s := ev.GetUserMetadata().GetSummary(); s != nil && len(s.GetData()) > 0 {
		return name + " (" + strings.Trim(string(s.GetData()), `"`) + ")"
	}
	return name
}
